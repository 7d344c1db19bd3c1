#!/usr/bin/env python3
"""Questions the real twemproxy (Debian 12: nutcracker 0.5.0) about `distribution: ketama`.

It writes a one-pool nutcracker.yml in a private temporary directory, starts fake
memcached backends (fake_memcached.py: one listener per server ADDR, loopback only,
each answering `get KEY` with its own ADDR), starts `nutcracker` on 127.0.0.1 (stats
on 127.0.0.1 too) under `timeout`, sends `get KEY` for every key (pipelined on one
connection) and reads which backend answered.

Servers file: `HOST:PORT WEIGHT [name=NAME]` (HOST a 127.x.y.z address: the fake
backends must listen there; WEIGHT >= 1). The pool line is `HOST:PORT:WEIGHT [NAME]`;
the ring hashes NAME, else HOST when PORT is 11211, else HOST:PORT.

    python3 tests/oracles/nutcracker_oracle.py --servers S --keys K \
        [--hash fnv1a_64|md5|crc32a|crc32|crc16|one_at_a_time|fnv1_64|fnv1_32|fnv1a_32|
                hsieh|murmur|jenkins] [--hash-tag XY]
"""

import os
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import OracleError  # noqa: E402

DESCRIPTION = "key -> server answers of the real nutcracker (twemproxy, ketama)"
PROGRAM = "nutcracker"
HASHES = ("fnv1a_64", "md5", "crc32a", "crc32", "crc16", "one_at_a_time", "fnv1_64",
          "fnv1_32", "fnv1a_32", "hsieh", "murmur", "jenkins")
MAX_KEY = 250
NAME_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,60}$")


def add_options(p):
    p.add_argument("--hash", choices=HASHES, default="fnv1a_64")
    p.add_argument("--hash-tag", default="", help="two characters, e.g. {} (default: none)")


def options_from_args(args):
    if args.hash_tag and len(args.hash_tag) != 2:
        raise SystemExit("--hash-tag takes two characters")
    return {"hash": args.hash, "hash_tag": args.hash_tag}


def provenance():
    return common.provenance("nutcracker", "nutcracker", "twemproxy, Debian 12", __file__)


def check_servers(servers):
    for s in servers:
        host, port = s.host_port()
        if not host.startswith("127."):
            raise OracleError(f"{s.addr}: the fake backends listen on loopback only (127.x.y.z)")
        if set(s.attrs) - {"name"}:
            raise OracleError(f"{s.addr}: unknown attribute(s) {sorted(set(s.attrs) - {'name'})}")
        if "name" in s.attrs and not NAME_RE.match(s.attrs["name"]):
            raise OracleError(f"{s.addr}: name '{s.attrs['name']}' (1..60 of [A-Za-z0-9_.:-])")
        if int(s.weight) < 1:
            raise OracleError(f"{s.addr}: weight must be >= 1")


def check_key(k):
    if not k or len(k) > MAX_KEY or any(b in (0x20, 0x0d, 0x0a, 0x00) for b in k):
        raise OracleError(f"key {k!r}: 1..250 bytes, no space, CR, LF or NUL")


def config(servers, o, port):
    def q(v):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    lines = [
        "oracle:",
        f"  listen: 127.0.0.1:{port}",
        f"  hash: {o['hash']}",
        "  distribution: ketama",
        "  auto_eject_hosts: false",
        "  preconnect: false",
        "  timeout: 10000",
        "  server_connections: 1",
    ]
    if o.get("hash_tag"):
        lines.append(f"  hash_tag: {q(o['hash_tag'])}")
    lines.append("  servers:")
    for s in servers:
        host, p = s.host_port()
        line = f"   - {host}:{p}:{int(s.weight)}"
        if "name" in s.attrs:
            line += f" {s.attrs['name']}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def exchange(port, keys, seconds, batch=100):
    deadline = time.monotonic() + seconds
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    answers = []
    for start in range(0, len(keys), batch):
        if time.monotonic() > deadline:
            raise OracleError(f"over the time bound ({seconds}s)")
        chunk = keys[start:start + batch]
        sock.sendall(b"".join(b"get " + k + b"\r\n" for k in chunk))
        for k in chunk:
            # VALUE <key> <flags> <len>\r\n<data>\r\nEND\r\n
            while True:
                nl = buf.find(b"\r\n")
                if nl >= 0:
                    break
                data = sock.recv(65536)
                if not data:
                    raise OracleError(f"nutcracker closed the connection at key {k!r}")
                buf += data
            head = buf[:nl]
            if not head.startswith(b"VALUE "):
                raise OracleError(f"key {k!r}: nutcracker answered {head[:200]!r}")
            parts = head.split(b" ")
            if parts[1] != k:
                raise OracleError(f"answer for {parts[1]!r} while expecting {k!r}")
            n = int(parts[-1])
            need = nl + 2 + n + 2 + len(b"END\r\n")
            while len(buf) < need:
                data = sock.recv(65536)
                if not data:
                    raise OracleError("connection closed inside a value")
                buf += data
            value = buf[nl + 2:nl + 2 + n]
            if buf[nl + 2 + n:need] != b"\r\nEND\r\n":
                raise OracleError(f"key {k!r}: malformed value")
            buf = buf[need:]
            answers.append(value.decode())
    sock.close()
    return answers


def run(servers, keys, o, seconds=120, keep=False):
    check_servers(servers)
    for k in keys:
        check_key(k)
    by_addr = {}
    for s in servers:
        host, port = s.host_port()
        by_addr[f"{host}:{port}"] = s.addr
    with common.WorkDir(keep) as tmp:
        fake = subprocess.Popen(
            common.nice_cmd([sys.executable, os.path.join(common.HERE, "fake_memcached.py"),
                             "--seconds", str(seconds + 5), "--max-requests",
                             str(len(keys) + 1000)] + list(by_addr), seconds + 15),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True)
        proc = None
        try:
            ready = fake.stdout.readline().decode().strip()
            if ready != "ready":
                raise OracleError(f"fake memcached backends: {ready or 'exited'}")
            cfg = os.path.join(tmp, "nutcracker.yml")

            def start(ports):
                with open(cfg, "w") as f:
                    f.write(config(servers, o, ports[0]))
                return common.Process(
                    ["nutcracker", "-c", cfg, "-s", str(common.free_port()), "-a", "127.0.0.1",
                     "-v", "4", "-p", os.path.join(tmp, "nutcracker.pid"), "-m", "16384"],
                    tmp, seconds + 10, "nutcracker.log")

            proc, (port,) = common.start_on_free_ports(1, start, "address already in use")
            got = exchange(port, keys, seconds)
        finally:
            if proc is not None:
                proc.stop()
            try:
                fake.stdin.close()
            except OSError:
                pass
            try:
                fake.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(fake.pid, 9)
                fake.wait(timeout=10)
    answers = []
    for k, a in zip(keys, got):
        if a not in by_addr:
            raise OracleError(f"key {k!r}: answered by unknown backend {a!r}")
        answers.append(by_addr[a])
    return answers


# ---------------------------------------------------------------- random cases

ALPHABET = bytes(b for b in range(0x21, 0x7F))


def random_fleet(rng, n):
    default_port = rng.random() < 0.3
    addrs = common.loopback_addrs(rng, n, ports=(20000, 60000),
                                  fixed_port=11211 if default_port else None)
    style = rng.choice(["ones", "ones", "mixed", "wide"])
    named = rng.random() < 0.3
    servers = []
    for i, a in enumerate(addrs, 1):
        w = 1 if style == "ones" else rng.randint(1, 10) if style == "mixed" else rng.randint(1, 300)
        attrs = {"name": f"cache-{i:03d}"} if named else {}
        servers.append(common.Server(a, w, attrs))
    return servers


def random_keys(rng, n, o):
    tag = o.get("hash_tag", "")

    def make(r):
        k = common.random_key(r, ALPHABET, MAX_KEY, high=True)
        if tag and r.random() < 0.4:
            inner = common.random_key(r, ALPHABET, 20).replace(tag[1].encode(), b"")
            k = (k[:30] + tag[0].encode() + inner + tag[1].encode() + k[30:60])[:MAX_KEY]
        return k
    return common.unique_keys(rng, n, make)


def random_options(rng):
    return {"hash": rng.choice(HASHES), "hash_tag": rng.choice(["", "", "{}", "::"])}


def random_fleet_and_keys(rng, n, n_keys, o):
    return random_fleet(rng, n), random_keys(rng, n_keys, o), o


if __name__ == "__main__":
    sys.exit(common.main(sys.modules[__name__]))
