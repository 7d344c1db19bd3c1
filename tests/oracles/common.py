"""Shared pieces of the oracle drivers: file formats, processes, random cases.

Every driver questions one real program installed on this machine and prints
`key,ADDR` rows, ADDR exactly as written in the servers file. The formats are
described in tests/oracles/README.md.
"""

import argparse
import os
import random
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


class OracleError(Exception):
    """The real program could not be questioned (it failed, or answered oddly)."""


# ---------------------------------------------------------------- servers files


class Server:
    """One line of a servers file: `ADDR WEIGHT [key=value ...]`."""

    def __init__(self, addr, weight="1", attrs=None):
        self.addr = addr
        self.weight = str(weight)
        self.attrs = dict(attrs or {})

    def line(self):
        extra = "".join(f" {k}={v}" for k, v in self.attrs.items())
        return f"{self.addr} {self.weight}{extra}"

    def host_port(self):
        host, _, port = self.addr.rpartition(":")
        if not host or not port.isdigit():
            raise OracleError(f"'{self.addr}': expected HOST:PORT")
        return host, int(port)

    def __repr__(self):
        return f"Server({self.line()!r})"


def server_names(servers, what, default_prefix, name_re, rule):
    """Each server's name: its name= attribute, else default_prefix and its
    1-based index. Each must match name_re (rule says what it must be, for
    the error), no two alike. what: "server", "backend"."""
    names = [s.attrs.get("name", f"{default_prefix}{i}") for i, s in enumerate(servers, 1)]
    for name in names:
        if not name_re.match(name):
            raise OracleError(f"{what} name '{name}': {rule}")
    if len(set(names)) != len(names):
        raise OracleError(f"two {what}s have the same name")
    return names


def parse_servers(text, source="servers"):
    servers = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        addr = fields[0]
        weight = "1"
        rest = fields[1:]
        if rest and "=" not in rest[0]:
            weight = rest[0]
            rest = rest[1:]
        attrs = {}
        for field in rest:
            key, sep, value = field.partition("=")
            if not sep or not key or not value:
                raise OracleError(f"{source}:{number}: '{field}' is not key=value")
            if key in attrs:
                raise OracleError(f"{source}:{number}: '{key}' given twice")
            attrs[key] = value
        servers.append(Server(addr, weight, attrs))
    addrs = [s.addr for s in servers]
    if len(set(addrs)) != len(addrs):
        raise OracleError(f"{source}: an ADDR is listed twice (answers name servers by ADDR)")
    if not servers:
        raise OracleError(f"{source}: no server")
    return servers


def read_servers(path):
    with open(path, encoding="utf-8") as f:
        return parse_servers(f.read(), path)


def format_servers(servers, comments=()):
    out = [f"# {c}" for c in comments]
    out += [s.line() for s in servers]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- keys and answers


def read_keys(path):
    """One key a line: the bytes before each '\\n' (no other byte is special)."""
    with open(path, "rb") as f:
        data = f.read()
    if not data:
        return []
    if not data.endswith(b"\n"):
        data += b"\n"
    return data.split(b"\n")[:-1]


def format_keys(keys):
    for k in keys:
        if b"\n" in k:
            raise OracleError(f"key {k!r} holds a newline")
    return b"".join(k + b"\n" for k in keys)


def format_answers(keys, addrs, comments=()):
    """`key,ADDR` rows (split at the LAST comma); `#` lines are comments."""
    out = [f"# {c}\n".encode() for c in comments]
    for k, a in zip(keys, addrs):
        out.append(k + b"," + a.encode() + b"\n")
    return b"".join(out)


def read_answers(path):
    rows = []
    with open(path, "rb") as f:
        for line in f.read().split(b"\n"):
            if not line or line.startswith(b"#"):
                continue
            key, _, addr = line.rpartition(b",")
            rows.append((key, addr.decode()))
    return rows


# ---------------------------------------------------------------- processes


def nice_cmd(cmd, seconds):
    """The command under `timeout` (a hard bound) and `nice -n 10`."""
    return ["timeout", "-k", "3", str(int(seconds)), "nice", "-n", "10"] + list(cmd)


class Process:
    """A real program started in its own process group; stopped by its PID."""

    def __init__(self, cmd, cwd, seconds, log_name):
        self.log_path = os.path.join(cwd, log_name)
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(nice_cmd(cmd, seconds), cwd=cwd, stdout=self.log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)

    def alive(self):
        return self.proc.poll() is None

    def log_tail(self, n=20):
        self.log.flush()
        try:
            with open(self.log_path, "rb") as f:
                lines = f.read().decode(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    def stop(self):
        if self.proc.poll() is None:
            # The process group is ours (start_new_session): timeout, nice and the
            # program (and a forked child such as varnishd's) share it.
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=10)
        self.log.close()


def free_port(host="127.0.0.1"):
    """A TCP port free on HOST right now (a race is possible; callers retry)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_port(port, proc, seconds=15, host="127.0.0.1"):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not proc.alive():
            raise OracleError(f"the program exited at start:\n{proc.log_tail()}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise OracleError(f"nothing listens on {host}:{port} after {seconds}s:\n{proc.log_tail()}")


def start_on_free_ports(nports, start, bind_error, seconds=15):
    """Starts a program on nports free loopback ports: start(ports) starts it
    (a Process) listening on them. Returns (process, ports) once every port
    accepts connections. A start that fails with bind_error in its log (a
    port taken in the meantime) is retried on other ports, three tries in
    all; any other failure is raised at once."""
    for attempt in range(3):
        ports = [free_port() for _ in range(nports)]
        if len(set(ports)) < nports:
            continue
        proc = start(ports)
        try:
            for port in ports:
                wait_port(port, proc, seconds=seconds)
            return proc, ports
        except OracleError:
            log = proc.log_tail()
            proc.stop()
            if attempt == 2 or bind_error not in log.lower():
                raise
    raise OracleError("could not bind free loopback ports")


def addrs_by_name(keys, got, by_name, what):
    """The ADDR of the server each (status, name) of got names; any other
    status or name is an error."""
    answers = []
    for k, (status, name) in zip(keys, got):
        if status != 200 or name not in by_name:
            raise OracleError(f"key {k!r}: status {status}, {what} {name!r}")
        answers.append(by_name[name])
    return answers


class WorkDir:
    """A private temporary directory, removed at exit unless --keep-temp."""

    def __init__(self, keep=False, prefix="chash-oracle-"):
        self.path = tempfile.mkdtemp(prefix=prefix)
        self.keep = keep

    def __enter__(self):
        return self.path

    def __exit__(self, *exc):
        if self.keep:
            sys.stderr.write(f"kept {self.path}\n")
        else:
            shutil.rmtree(self.path, ignore_errors=True)


def http_exchange(port, requests, header_name, seconds, host="127.0.0.1", batch=64):
    """Sends raw HTTP/1.1 requests (bytes, keep-alive) on one connection, pipelined
    in batches, and returns the value of response header HEADER_NAME for each (None
    if the response lacks it), with the status codes."""
    want = header_name.lower().encode() + b":"
    answers = []
    deadline = time.monotonic() + seconds
    sock = None
    buf = b""

    def connect():
        s = socket.create_connection((host, port), timeout=10)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s

    i = 0
    while i < len(requests):
        if time.monotonic() > deadline:
            raise OracleError(f"over the time bound ({seconds}s) after {i} requests")
        if sock is None:
            sock = connect()
            buf = b""
        chunk = requests[i:i + batch]
        sock.sendall(b"".join(chunk))
        got = []
        closed = False
        while len(got) < len(chunk):
            head_end = buf.find(b"\r\n\r\n")
            if head_end < 0:
                data = sock.recv(65536)
                if not data:
                    closed = True
                    break
                buf += data
                continue
            head = buf[:head_end]
            lines = head.split(b"\r\n")
            status = int(lines[0].split(b" ")[1])
            length = 0
            value = None
            conn_close = False
            for h in lines[1:]:
                low = h.lower()
                if low.startswith(b"content-length:"):
                    length = int(h.split(b":", 1)[1])
                elif low.startswith(want):
                    value = h.split(b":", 1)[1].strip().decode("latin-1")
                elif low.startswith(b"connection:") and b"close" in low:
                    conn_close = True
            while len(buf) < head_end + 4 + length:
                data = sock.recv(65536)
                if not data:
                    raise OracleError("connection closed inside a response body")
                buf += data
            buf = buf[head_end + 4 + length:]
            got.append((status, value))
            if conn_close:
                closed = True
                break
        answers.extend(got)
        i += len(got)
        if closed:
            sock.close()
            sock = None
            if not got:
                raise OracleError(f"the program closed the connection at request {i}")
    if sock is not None:
        sock.close()
    return answers


# ---------------------------------------------------------------- random cases

# Byte sets of the keys each program can take whole (see README.md).
PRINTABLE = bytes(range(0x21, 0x7F))
HIGH = bytes(range(0x80, 0x100))

UTF8_WORDS = ["é", "ß", "ü", "Ω", "ж", "中文", "日本", "한국", "🙂", "€", "ñ", "ø", "ا", "ह"]


def random_key(rng, alphabet, max_len, utf8=True, high=False, prefix=b"", spaces=False):
    """One random key: mostly short ASCII, some UTF-8, some long, some odd bytes."""
    shape = rng.random()
    if shape < 0.45:
        n = rng.randint(1, 24)
    elif shape < 0.8:
        n = rng.randint(1, 80)
    else:
        n = rng.randint(max(1, max_len // 2), max_len)
    n = max(1, n - len(prefix))
    out = bytearray(prefix)
    while len(out) < n + len(prefix):
        r = rng.random()
        if utf8 and r < 0.08:
            out += rng.choice(UTF8_WORDS).encode()
        elif high and r < 0.12:
            out.append(rng.choice(HIGH))
        elif spaces and r < 0.15:
            out.append(0x20)
        else:
            out.append(rng.choice(alphabet))
    key = bytes(out)
    if len(key) > max_len:
        key = key[:max_len]
        # keep UTF-8 whole when the cut falls inside a sequence
        while key and not _valid_tail(key) and not high:
            key = key[:-1]
    return key


def _valid_tail(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def unique_keys(rng, n, make):
    keys, seen = [], set()
    tries = 0
    while len(keys) < n and tries < n * 20:
        tries += 1
        k = make(rng)
        if k in seen or not k or k.startswith(b"#"):
            continue
        seen.add(k)
        keys.append(k)
    return keys


def loopback_addrs(rng, n, ports=(1024, 65000), second_octets=(0,), fixed_port=None):
    """N distinct 127.x.y.z:port addresses (loopback only)."""
    out, seen = [], set()
    while len(out) < n:
        host = f"127.{rng.choice(second_octets)}.{rng.randint(0, 3)}.{rng.randint(2, 254)}"
        port = fixed_port if fixed_port is not None else rng.randint(*ports)
        addr = f"{host}:{port}"
        if addr not in seen:
            seen.add(addr)
            out.append(addr)
    return out


# ---------------------------------------------------------------- CLI


FLEET_SIZES = [1, 2, 3, 7, 20, 50, 100]


def random_case(driver, rng, n_keys, fleet=None, options=None):
    """A random case for driver: (servers, keys, options). The options are
    the driver's random_options unless given, the fleet has `fleet` servers
    or a size drawn from FLEET_SIZES; the driver's random_fleet_and_keys
    makes the servers and the keys for them."""
    o = driver.random_options(rng) if options is None else options
    n = fleet or rng.choice(FLEET_SIZES)
    return driver.random_fleet_and_keys(rng, n, n_keys, o)


def describe(driver, o):
    """driver's options o as command-line text, as options_from_string reads
    them: `--NAME VALUE` for each, `--NAME` for a flag that is on; the ones
    that are off, empty or 0 left out, as are the driver's LOCAL_OPTIONS
    (settings of the driver, not of the program)."""
    words = []
    for name, value in o.items():
        if not value or name in getattr(driver, "LOCAL_OPTIONS", ()):
            continue
        words.append("--" + name.replace("_", "-"))
        if value is not True:
            words.append(shlex.quote(str(value)))
    return " ".join(words)


def options_from_string(driver, text):
    """driver's options from their command-line text (the OPTIONS column of
    a sets.txt)."""
    p = argparse.ArgumentParser()
    driver.add_options(p)
    return driver.options_from_args(p.parse_args(shlex.split(text)))


def main(driver, argv=None):
    """The common command line of every driver (see README.md)."""
    p = argparse.ArgumentParser(description=driver.DESCRIPTION)
    p.add_argument("--servers", help="servers file (ADDR WEIGHT [key=value ...] lines)")
    p.add_argument("--keys", help="keys file (one key a line)")
    p.add_argument("--random", type=int, metavar="N",
                   help="make a random case of N keys (a random fleet too) into --out")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--fleet", type=int, default=None, help="servers in a --random fleet")
    p.add_argument("--out", help="directory for --random: servers.txt keys.txt answers.csv")
    p.add_argument("--seconds", type=float, default=120, help="time bound of one run")
    p.add_argument("--fixed-options", action="store_true",
                   help="with --random: use the program options given, not random ones")
    p.add_argument("--keep-temp", action="store_true")
    driver.add_options(p)
    args = p.parse_args(argv)
    options = driver.options_from_args(args)
    if args.random is not None:
        if not args.out:
            p.error("--random needs --out DIR")
        rng = random.Random(args.seed)
        servers, keys, options = random_case(driver, rng, args.random, args.fleet,
                                              options if args.fixed_options else None)
        answers = driver.run(servers, keys, options, seconds=args.seconds, keep=args.keep_temp)
        os.makedirs(args.out, exist_ok=True)
        desc = describe(driver, options)
        with open(os.path.join(args.out, "servers.txt"), "w") as f:
            f.write(format_servers(servers, [f"random fleet, seed {args.seed}: {desc}"]))
        with open(os.path.join(args.out, "keys.txt"), "wb") as f:
            f.write(format_keys(keys))
        with open(os.path.join(args.out, "answers.csv"), "wb") as f:
            f.write(format_answers(keys, answers, [driver.provenance(), f"options: {desc}"]))
        with open(os.path.join(args.out, "options.txt"), "w") as f:
            f.write(desc + "\n")
        return 0
    if not args.servers or not args.keys:
        p.error("give --servers and --keys, or --random N --out DIR")
    servers = read_servers(args.servers)
    keys = read_keys(args.keys)
    answers = driver.run(servers, keys, options, seconds=args.seconds, keep=args.keep_temp)
    sys.stdout.buffer.write(format_answers(keys, answers))
    return 0


def provenance(program, package, note, script):
    """The first comment line of recorded answers: the program, its Debian
    version, how it was asked, by which driver."""
    return (f"answers of the real {program} {dpkg_version(package)} ({note}), "
            f"tests/oracles/{os.path.basename(script)}")


def dpkg_version(package):
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"
