"""Runs the real nginx in a temporary prefix, for the chash module's tests and
measurements (Python 3 standard library only).

nginx runs as a child process in the foreground (`daemon off`), listens on
127.0.0.1 only, and is stopped by its PID. Every wait is bounded. The
upstream addresses the tests use are checked to refuse connections before
nginx starts, so every try of a request is a refused connect unless a test
starts a listener itself.

When hosts are given, nginx runs in a private mount namespace where a test
hosts file is bind-mounted over /etc/hosts (`unshare -m`, as root, or
`unshare -rm`): that is how a server name resolves to several loopback
addresses without touching the machine's configuration.
"""

import argparse
import bisect
import collections
import contextlib
import http.client
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import zlib

NGINX = "/usr/sbin/nginx"

# Environment of the nginx processes only (not of the chash command the tests
# run): CHASH_NGINX_PRELOAD becomes their LD_PRELOAD, for a module built with
# sanitizers (tools/nginx/test --sanitize), CHASH_NGINX_ASAN_OPTIONS their
# ASAN_OPTIONS.
NGINX_ENV = dict(os.environ)
if os.environ.get("CHASH_NGINX_PRELOAD"):
    NGINX_ENV["LD_PRELOAD"] = os.environ["CHASH_NGINX_PRELOAD"]
if os.environ.get("CHASH_NGINX_ASAN_OPTIONS"):
    NGINX_ENV["ASAN_OPTIONS"] = os.environ["CHASH_NGINX_ASAN_OPTIONS"]
    NGINX_ENV["UBSAN_OPTIONS"] = os.environ.get("CHASH_NGINX_UBSAN_OPTIONS", "")


def free_port(host="127.0.0.1"):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class PortPool:
    """Ports for server lines, each handed out once: below the ephemeral
    range (a connect from ephemeral port P to 127.0.0.1:P would connect to
    itself, TCP simultaneous open). Callers check them closed
    (check_refused) or bind them before nginx starts."""

    def __init__(self, rng):
        self.rng = rng
        self.used = set()
        low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
        self.high = min(low, 32768) - 1

    def take(self):
        for _ in range(1000):
            p = self.rng.randint(10000, self.high)
            if p not in self.used:
                self.used.add(p)
                return p
        raise RuntimeError("no free port")


def refuses(host, port, timeout=1.0):
    """True when a connect to host:port is refused (nothing listens)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect((host, port))
        except ConnectionRefusedError:
            return True
        except OSError:
            return False
        return False


class Server:
    """One `server` line of an upstream block."""

    def __init__(self, text, weight=1, down=False, params=""):
        self.text = text
        self.weight = weight
        self.down = down
        self.params = params

    def line(self):
        parts = ["server", self.text]
        if self.weight != 1:
            parts.append("weight=%d" % self.weight)
        if self.params:
            parts.append(self.params)
        if self.down:
            parts.append("down")
        return "        " + " ".join(parts) + ";"

    def connect_targets(self, hosts):
        """(host, port) pairs nginx will connect to for this line."""
        text = self.text
        port = 80
        if text.startswith("["):
            host, _, rest = text[1:].partition("]")
            if rest.startswith(":"):
                port = int(rest[1:])
            return [(host, port)]
        host, sep, p = text.rpartition(":")
        if sep:
            port = int(p)
        else:
            host = text
        if host in hosts:
            return [(a, port) for a in hosts[host]]
        return [(host, port)]


# ------------------------------------------------------------ shared by suites

# Every check of a suite's process: a failed one is printed at once and
# counted at the end (main returns nonzero when any failed).
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL: " + what, flush=True)
    return cond


def run_phases(phases):
    """Runs each (label, function) of a suite in turn, printing its time."""
    for label, run in phases:
        t0 = time.monotonic()
        run()
        print("-- %s: %.1f s" % (label, time.monotonic() - t0), flush=True)


@contextlib.contextmanager
def work_dir(prefix, keep=False):
    """A temporary folder for a suite's files (readable by nginx's workers),
    removed at the end unless a check failed or keep."""
    path = tempfile.mkdtemp(prefix=prefix)
    os.chmod(path, 0o755)
    try:
        yield path
    finally:
        if not (FAILURES or keep):
            shutil.rmtree(path, ignore_errors=True)


def summary(started, more=""):
    """A suite's last line, and its exit status: 1 when any check failed."""
    print("%d checks failed; %.1f s%s" % (len(FAILURES), time.monotonic() - started, more))
    return 1 if FAILURES else 0


# Names the test hosts file resolves to several loopback addresses.
MULTI_HOSTS = {
    "multi1.chash.test": ["127.250.0.1", "127.250.0.2", "::1"],
    "multi2.chash.test": ["127.250.0.3", "127.250.0.4"],
}


def temp_paths(prefix):
    """The http{} block's temp paths, inside the test prefix (nginx's own
    defaults are under /var/lib/nginx)."""
    return "\n".join("    %s_temp_path %s/tmp/%s;" % (kind, prefix, d) for kind, d in (
        ("client_body", "body"), ("proxy", "proxy"), ("fastcgi", "fastcgi"),
        ("uwsgi", "uwsgi"), ("scgi", "scgi")))


def main_context(prefix, workers, loads, worker_connections, error_level="notice", extra="",
                 user=None):
    """The main context of a generated nginx.conf: the modules to load, the
    workers, the pid and error log in the prefix, the events block. As root,
    the workers run as `user` ("nobody nogroup": an unprivileged worker user,
    as Debian's www-data), root by default."""
    lines = ["load_module %s;" % m for m in loads] + [
        "worker_processes %d;" % workers,
        "daemon off;",
        "master_process on;",
        "pid %s/logs/nginx.pid;" % prefix,
        "error_log %s/logs/error.log %s;" % (prefix, error_level)]
    if os.geteuid() == 0:
        lines.append("user %s;" % (user or "root"))
    if extra:
        lines.append(extra)
    lines.append("events { worker_connections %d; }" % worker_connections)
    return "\n".join(lines)


def with_params(servers, params):
    return [Server(s.text, s.weight, s.down, params) for s in servers]


def with_down(rng, servers, fraction):
    """A copy with about fraction of the servers down, the first always."""
    out = [Server(s.text, s.weight, rng.random() < fraction or s.down, s.params)
           for s in servers]
    out[0].down = True
    return out


# ------------------------------------------------------------ server lists

WEIGHTS = [1, 1, 2, 3, 5, 8, 10]


def v4_text(rng, ports=None, first=0):
    """A random 127.x.y.z (x from first to 249), and a port of ports when
    given."""
    text = "127.%d.%d.%d" % (rng.randint(first, 249), rng.randint(0, 255), rng.randint(1, 254))
    return text if ports is None else "%s:%d" % (text, ports.take())


def client_addresses(rng, n, taken=None):
    """n distinct client addresses 127.x.y.z (x from 1), none of taken
    (which gets them)."""
    taken = set() if taken is None else taken
    out = []
    while len(out) < n:
        a = v4_text(rng, first=1)
        if a not in taken:
            taken.add(a)
            out.append(a)
    return out


def random_servers(rng, ports, n, mix, first=0, heavy=False, params=""):
    """n server lines of distinct texts. mix: [(kind, below)]; a line is of
    the first kind whose below a uniform draw is under: "v4" 127.x.y.z:port
    (x from first), "v6" [::1]:port, "noport" 127.x.y.z, "name" localhost or
    a MULTI_HOSTS name with a port, "dup" an identical copy of a line so far.
    Weights from WEIGHTS; heavy: a few of 20..40 too (drawn for every line,
    a copy's included). params: every line's parameters."""
    kinds = {
        "v4": lambda: v4_text(rng, ports, first),
        "v6": lambda: "[::1]:%d" % ports.take(),
        "noport": lambda: v4_text(rng, first=first),
        "name": lambda: "%s:%d" % (rng.choice(["localhost"] + sorted(MULTI_HOSTS)),
                                   ports.take()),
        "dup": lambda: None,
    }
    servers, texts = [], set()
    while len(servers) < n:
        r = rng.random()
        text = kinds[next(kind for kind, below in mix if r < below)]()
        if heavy:
            weight = rng.choice(WEIGHTS) if rng.random() < 0.95 else rng.randint(20, 40)
        if text is None:
            if servers:
                dup = rng.choice(servers)
                servers.append(Server(dup.text, dup.weight, False, params))
            continue
        if text in texts:
            continue
        texts.add(text)
        servers.append(Server(text, weight if heavy else rng.choice(WEIGHTS), False, params))
    return servers


def ip_port_servers(rng, ports, n):
    """n server lines IPv4:port (about 80%) and [::1]:port."""
    return random_servers(rng, ports, n, [("v4", 0.8), ("v6", 1)])


def routing_fleets(rng, ports, mixed):
    """The server lists both routing suites compare on: the lines with
    max_fails=0, about 15% of them down, with random max_fails (their
    failure state), and a single server."""
    plain = with_params(mixed, "max_fails=0")
    down = with_down(rng, plain, 0.15)
    fails = [Server(s.text, s.weight, False,
                    "max_fails=%d fail_timeout=600s" % rng.choice([0, 1, 1, 2, 3]))
             for s in mixed]
    single = [Server("127.250.1.1:%d" % ports.take(), 3, False, "max_fails=0")]
    return plain, down, fails, single


# ------------------------------------------------------------ ring models

def crc32_ring(nodes, multiple):
    """A ring of CRC32 chains, as nginx's `hash consistent`, pingora-ketama
    and resty.chash build theirs (each with its own bases and order): nodes
    [(base, weight, rank)]; a node has weight x multiple points, each
    CRC32(le32(the previous point)) continued from its base, from 0; points
    sorted by (hash, rank), the first of equal hashes kept. Returns (hashes,
    node indices)."""
    points = []
    for idx, (base, weight, rank) in enumerate(nodes):
        prev = 0
        for _ in range(weight * multiple):
            prev = zlib.crc32(prev.to_bytes(4, "little"), base)
            points.append((prev, rank, idx))
    points.sort()
    hashes, out = [], []
    for h, _, idx in points:
        if hashes and hashes[-1] == h:
            continue
        hashes.append(h)
        out.append(idx)
    return hashes, out


def ring_walk(ring, servers, key, tries, members=None):
    """The indices of the servers tried for key with every connect refused:
    each node once in ring order from the key's point (CRC32 of the key),
    down servers (and nodes outside members) skipped, at most tries and at
    most the live ones."""
    hashes, nodes = ring
    i = bisect.bisect_left(hashes, zlib.crc32(key.encode()))
    live = [k for k, s in enumerate(servers)
            if not s.down and (members is None or k in members)]
    limit = min(tries, len(live))
    seen, out = set(), []
    for step in range(len(hashes)):
        node = nodes[(i + step) % len(hashes)]
        if node in seen:
            continue
        seen.add(node)
        if servers[node].down or (members is not None and node not in members):
            continue
        out.append(node)
        if len(out) == limit:
            break
    return out


# ------------------------------------------------------------ checks of routes

def normalize(addrs, upstream_name):
    return ["<busy>" if a == upstream_name else a for a in addrs]


def compare_pair(results, hname, cname, keys, label, statuses=("502",), first_only=False,
                 unit="key"):
    """Stock hash against chash, key by key. results: {(upstream, key
    index): a logged request or session (.addrs, .status)}; keys: the keys
    (HTTP) or client addresses (stream). Each must end in one of statuses,
    and both upstreams try the same peers in the same order (the first
    only: first_only). Returns (tries a key, distinct first peers)."""
    nkeys = len(keys)
    same, shown, lengths, first = 0, 0, [], set()
    for name in (hname, cname):
        odd = [(keys[ki], results[(name, ki)]) for ki in range(nkeys)
               if (name, ki) in results and results[(name, ki)].status not in statuses]
        check(not odd, "%s: %s: %d %ss did not end in %s; first: %s" %
              (label, name, len(odd), unit, "/".join(statuses), odd[:1]))
    for ki in range(nkeys):
        if (hname, ki) not in results or (cname, ki) not in results:
            continue
        ha = normalize(results[(hname, ki)].addrs, hname)
        ca = normalize(results[(cname, ki)].addrs, cname)
        if first_only:
            ha, ca = ha[:1], ca[:1]
        lengths.append(len(ha))
        if ha:
            first.add(ha[0])
        if ha == ca:
            same += 1
        elif shown < 3:
            shown += 1
            d = next(i for i in range(max(len(ha), len(ca))) if ha[i:i + 1] != ca[i:i + 1])
            print("  %s %r (%d), first difference at try %d:\n    hash  %s\n    chash %s" %
                  (unit, keys[ki], ki, d + 1, ha[max(0, d - 2):d + 3], ca[max(0, d - 2):d + 3]))
    check(same == nkeys, "%s: %s and %s agree on %d of %d %ss" %
          (label, hname, cname, same, nkeys, unit))
    print("%s: %s vs %s: %d/%d %ss identical, %d distinct first peers, tries %d..%d" %
          (label, hname, cname, same, nkeys, unit, len(first), min(lengths or [0]),
           max(lengths or [0])), flush=True)
    return lengths, first


def check_notices(ngx, upstreams, show=2):
    """At the first start nginx logs the configuration's messages to stderr
    (the error_log file is not open yet): one notice a chash upstream."""
    notices = re.findall(r"chash upstream .*", ngx.stderr_log())
    nchash = sum(1 for u in upstreams if u.balancer.startswith("chash"))
    check(len(notices) == nchash, "error log: %d chash notices for %d chash upstreams" %
          (len(notices), nchash))
    for line in notices[:show]:
        print("error log: " + line.split(" while ")[0][:200])


def check_refusals(nginx_t, same, own):
    """nginx -t's refusals: each (label, stock balancer, chash balancer,
    lines, message) of same refused by both with message; each (label, chash
    balancer, lines, message) of own by chash. nginx_t(balancer, lines):
    (exit status, output) of an upstream of that balancer and those lines."""
    for label, hbal, cbal, lines, message in same:
        hrc, hout = nginx_t(hbal, lines)
        crc, cout = nginx_t(cbal, lines)
        check(hrc != 0 and message in hout, "errors: %s: hash says %r" % (label, hout[-300:]))
        check(crc != 0 and message in cout, "errors: %s: chash says %r" % (label, cout[-300:]))
        print("errors: %s: both refused with %r" % (label, message))
    for label, cbal, lines, message in own:
        crc, cout = nginx_t(cbal, lines)
        check(crc != 0 and message in cout, "errors: %s: chash says %r" % (label, cout[-400:]))
        print("errors: %s: refused: %s" % (label, cout.strip().splitlines()[0][:160]))


def upstream_lines(balancer, lines):
    """The edit (for Nginx.test_edited) that puts raw lines (server lines,
    directives) after an upstream's balancer line."""
    return ("        %s;\n" % balancer,
            "        %s;\n        %s\n" % (balancer, "\n        ".join(lines)))


# ------------------------------------------------------------ command lines

def arg_parser(module_help, keys, servers, seed, module_required=True, keys_help=None):
    """The options of a suite: --module, --keys, --servers, --seed, --keep."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", required=module_required, help=module_help)
    ap.add_argument("--keys", type=int, default=keys, help=keys_help)
    ap.add_argument("--servers", type=int, default=servers)
    ap.add_argument("--seed", type=int, default=seed)
    ap.add_argument("--keep", action="store_true", help="keep the nginx prefixes")
    return ap


def parse_stock_only(ap, *modules):
    """Adds --stock-only (the stock balancer alone: the harness itself) and
    parses; --module is required without it. With it, --module and the
    other modules named are left out."""
    ap.add_argument("--stock-only", action="store_true",
                    help="run the stock hash upstreams only (the harness alone)")
    args = ap.parse_args()
    if not args.stock_only and not args.module:
        ap.error("--module is required (or --stock-only)")
    if args.stock_only:
        for name in ("module",) + modules:
            setattr(args, name, None)
    return args


class Upstream:
    def __init__(self, name, balancer, servers, extra="", location_extra=""):
        self.name = name
        self.location_extra = location_extra
        self.balancer = balancer  # e.g. "hash $arg_k consistent" or "chash $arg_k"
        self.servers = servers
        self.extra = extra

    def block(self):
        lines = ["    upstream %s {" % self.name, "        %s;" % self.balancer]
        if self.extra:
            lines.append("        " + self.extra)
        lines += [s.line() for s in self.servers]
        lines.append("    }")
        return "\n".join(lines)


# A request of the access log (what access_log gives; a tuple, in this order).
Logged = collections.namedtuple("Logged", "addrs status ring diagnostics")

LOG_FORMAT = "$arg_i\\t$upstream_addr\\t$status\\t$connection\\t$connection_requests\\t$request_time\\t$request_length\\t$bytes_sent\\t$upstream_status"


class Nginx:
    """The real nginx in a temporary prefix, a child process stopped by PID."""

    def __init__(self, module=None, hosts=None, workers=1, error_level="notice",
                 nginx=NGINX, keep=False, worker_connections=1024, log_vars=()):
        self.worker_connections = worker_connections
        self.log_vars = list(log_vars)  # more variables at the end of each access log line
        self.module = module
        self.hosts = hosts or {}
        self.workers = workers
        self.error_level = error_level
        self.nginx = nginx
        self.keep = keep
        self.prefix = tempfile.mkdtemp(prefix="chash-nginx-")
        os.chmod(self.prefix, 0o755)
        for d in ("logs", "tmp"):
            os.makedirs(os.path.join(self.prefix, d), exist_ok=True)
        self.port = free_port()
        self.proc = None
        self.generation = 0
        self.conn = None
        self.resent = 0
        self.last_error = ""

    # ---- configuration
    def conf_text(self, upstreams, http_extra="", main_extra=""):
        # the access log: $arg_i, $upstream_addr, $status, diagnostics, [$chash_ring]
        self.generation += 1
        ring_var = "\\t$chash_ring" if self.module else ""
        ring_var += "".join("\\t" + v for v in self.log_vars)
        locations = "\n".join(
            "        location = /u/%s { proxy_pass http://%s; %s}" %
            (u.name, u.name, u.location_extra) for u in upstreams)
        p = self.prefix
        return f"""# generated by tests/nginx/harness.py
{main_context(p, self.workers, [self.module] if self.module else [],
              self.worker_connections, self.error_level, main_extra)}
http {{
    access_log off;
{temp_paths(p)}
    {"chash_state_path " + p + "/state;" if self.module else ""}
    log_format t "{LOG_FORMAT}{ring_var}";
{chr(10).join(u.block() for u in upstreams)}
    server {{
        listen 127.0.0.1:{self.port};
        keepalive_requests 100000000;
        access_log {p}/logs/access.log t;
        # every refused connect is an error line: keep them out of the notices
        error_log {p}/logs/requests-error.log crit;
        proxy_connect_timeout 2s;
        proxy_read_timeout 5s;
        proxy_next_upstream error timeout;
        proxy_next_upstream_tries {{TRIES}};
        location = /generation {{ return 200 "{self.generation}"; }}
{locations}
{http_extra}
    }}
}}
"""

    def write_conf(self, upstreams, tries=0, http_extra="", main_extra=""):
        return self.write_text(self.conf_text(upstreams, http_extra, main_extra).replace(
            "{TRIES}", str(tries)))

    def write_text(self, text):
        """Writes text as the prefix's nginx.conf (the configuration used)."""
        self.conf = os.path.join(self.prefix, "nginx.conf")
        with open(self.conf, "w") as f:
            f.write(text)
        return self.conf

    def hosts_file(self):
        path = os.path.join(self.prefix, "hosts")
        with open(path, "w") as f:
            f.write("127.0.0.1 localhost\n::1 localhost ip6-localhost\n")
            for name, addrs in self.hosts.items():
                for a in addrs:
                    f.write("%s %s\n" % (a, name))
        return path

    def command(self, *args):
        cmd = [self.nginx, "-p", self.prefix + "/", "-c", self.conf, *args]
        if not self.hosts:
            return cmd
        ns = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-rm"]
        script = 'mount --bind "$0" /etc/hosts && exec "$@"'
        return ns + ["sh", "-c", script, self.hosts_file()] + cmd

    def test_config(self):
        """`nginx -t`: (exit status, output)."""
        r = subprocess.run(self.command("-t"), capture_output=True, text=True,
                           timeout=600, env=NGINX_ENV)
        return r.returncode, r.stdout + r.stderr

    def test_edited(self, *edits):
        """`nginx -t` of the configuration written last with each (old, new)
        of edits made in its text (what the generators do not write: lines
        nginx must refuse), then the prefix removed: (exit status, output,
        the text tested)."""
        try:
            with open(self.conf) as f:
                text = f.read()
            for old, new in edits:
                text = text.replace(old, new)
            self.write_text(text)
            rc, out = self.test_config()
            return rc, out, text
        finally:
            self.cleanup()

    # ---- process
    def answered_generation(self):
        """The generation of the configuration that answers a new
        connection (None: no answer)."""
        self.close_conn()
        return self.get("/generation", retry=False)

    def start_log(self):
        """What nginx said when it stopped at start."""
        return self.error_log()

    def start(self, timeout=120):
        assert self.proc is None
        self.stderr = open(os.path.join(self.prefix, "logs", "stderr.log"), "w")
        self.proc = subprocess.Popen(self.command(), stdout=self.stderr,
                                     stderr=subprocess.STDOUT, env=NGINX_ENV)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("nginx exited with %d:\n%s" %
                                   (self.proc.returncode, self.start_log()[-3000:]))
            if self.answered_generation() == str(self.generation):
                return
            time.sleep(0.05)
        raise RuntimeError("nginx did not answer on 127.0.0.1:%d" % self.port)

    def reload(self, timeout=120, sighup=False):
        """`nginx -s reload` (or, sighup=True, the SIGHUP it sends, to the
        master's PID: `nginx -s` first parses the whole configuration itself,
        rings included), then waits until a new connection is served by the
        new configuration (its /generation answers)."""
        if sighup:
            self.proc.send_signal(signal.SIGHUP)
        else:
            r = subprocess.run(self.command("-s", "reload"), capture_output=True,
                               text=True, timeout=600, env=NGINX_ENV)
            if r.returncode != 0:
                raise RuntimeError("nginx -s reload failed: " + r.stderr)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.answered_generation() == str(self.generation):
                return
            if self.proc.poll() is not None:
                raise RuntimeError("nginx exited during reload")
            time.sleep(0.05)
        raise RuntimeError("nginx did not load generation %d" % self.generation)

    def stop(self, timeout=30):
        self.close_conn()
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # graceful shutdown
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
        self.proc = None
        self.stderr.close()

    def cleanup(self):
        self.stop()
        if not self.keep:
            shutil.rmtree(self.prefix, ignore_errors=True)

    def finish(self, *closers):
        """Stops nginx, then calls each of closers (what closes the backends,
        listeners, ... nginx used); removes the prefix unless a check failed
        or keep (then says where it is)."""
        self.stop()
        for close in closers:
            close()
        if FAILURES or self.keep:
            print("nginx prefix kept: " + self.prefix, flush=True)
        else:
            self.cleanup()

    # ---- requests
    def close_conn(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def get(self, path, retry=False):
        """GET on a kept-alive connection; the body, or None on a failure.
        Requests that route keys are never retried: a repeated request would
        change the balancers' state."""
        for _ in range(2 if retry else 1):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                                           timeout=30)
                self.conn.request("GET", path)
                resp = self.conn.getresponse()
                body = resp.read().decode("utf-8", "replace")
                if resp.getheader("Connection", "").lower() == "close":
                    self.close_conn()
                return body
            except (OSError, http.client.HTTPException) as e:
                self.last_error = repr(e)
                self.close_conn()
        return None

    # ---- logs
    def error_log(self):
        """The error log; what nginx printed instead when it stopped before
        opening it (a configuration refused at start)."""
        try:
            with open(os.path.join(self.prefix, "logs", "error.log"), errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return self.stderr_log() if self.stderr else ""

    def stderr_log(self):
        self.stderr.flush()
        with open(os.path.join(self.prefix, "logs", "stderr.log"), errors="replace") as f:
            return f.read()

    def access_log(self):
        """{request id: Logged(upstream_addr list, status, chash_ring,
        diagnostics)}"""
        out = {}
        with open(os.path.join(self.prefix, "logs", "access.log"), errors="replace") as f:
            for line in f:
                fields = line.rstrip("\n").split("\t")
                if len(fields) < 3 or not fields[0]:
                    continue
                addrs = [a.strip() for a in fields[1].split(",")] if fields[1] != "-" else []
                out[fields[0]] = Logged(addrs, fields[2], fields[9] if len(fields) > 9 else "",
                                        fields[3:9])
        return out

    def access_fields(self):
        """{request id: every field of its access log line}"""
        out = {}
        with open(os.path.join(self.prefix, "logs", "access.log"), errors="replace") as f:
            for line in f:
                fields = line.rstrip("\n").split("\t")
                if fields and fields[0]:
                    out[fields[0]] = fields
        return out

    def logged(self, ids, fields=False, timeout=30):
        """The access log (access_fields() with fields, else access_log())
        once every request id of ids is in it, or after timeout seconds."""
        read = self.access_fields if fields else self.access_log
        deadline = time.monotonic() + timeout
        log = read()
        while not all(k in log for k in ids) and time.monotonic() < deadline:
            time.sleep(0.1)
            log = read()
        return log

    def send_key(self, path, key):
        """GET path with key, any bytes but CR, LF and NUL, in an X-Key
        header, on a connection of its own, read until nginx closes it."""
        req = b"GET %s HTTP/1.1\r\nHost: t\r\nX-Key: %s\r\nConnection: close\r\n\r\n" % (
            path.encode(), key)
        with socket.create_connection(("127.0.0.1", self.port), timeout=60) as s:
            s.sendall(req)
            while s.recv(65536):
                pass

    def truncate_access_log(self):
        """Keeps the log so far as access.log.N, starts an empty one."""
        path = os.path.join(self.prefix, "logs", "access.log")
        shutil.copyfile(path, "%s.%d" % (path, self.generation))
        open(path, "w").close()


class HangingListener:
    """Accepts connections on host:port and never answers them (an upstream
    that times out, and holds a connection for max_conns). A thread polls
    with a timeout and stops when asked; close() closes every socket."""

    def __init__(self, host, port):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(64)
        self.sock.settimeout(0.05)
        self.accepted = []
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
                self.accepted.append(conn)
            except (socket.timeout, OSError):
                continue

    def wait_accepted(self, n, timeout=10):
        deadline = time.monotonic() + timeout
        while len(self.accepted) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        return len(self.accepted) >= n

    def close(self):
        self.stopping = True
        self.thread.join(timeout=5)
        for c in self.accepted:
            c.close()
        self.sock.close()


def read_until_closed(sock, size=4096, reset_ends=False):
    """The bytes sock receives until the peer closes (reset_ends: or resets)
    the connection."""
    data = b""
    try:
        while True:
            chunk = sock.recv(size)
            if not chunk:
                break
            data += chunk
    except ConnectionResetError:
        if not reset_ends:
            raise
    return data


class Traffic:
    """Threads that each run self.run(thread index) until stop() or a
    deadline (every loop bounded): run loops while self.running() and hands
    its results to self.add. A subclass sets what run needs before calling
    this __init__ (the threads start in it)."""

    def __init__(self, threads=2, seconds=120):
        self.stop_flag = False
        self.results = []
        self.lock = threading.Lock()
        self.deadline = time.monotonic() + seconds
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True)
                        for i in range(threads)]
        for t in self.threads:
            t.start()

    def running(self):
        return not self.stop_flag and time.monotonic() < self.deadline

    def add(self, result):
        with self.lock:
            self.results.append(result)

    def stop(self, timeout=30):
        self.stop_flag = True
        for t in self.threads:
            t.join(timeout=timeout)


def fetch(port, path, timeout=60):
    """One GET on its own connection (for concurrent requests)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        return conn.getresponse().read()
    finally:
        conn.close()


def stop_keeping_failures(ngx, keep):
    """Stops nginx; its prefix is kept (and printed) after a failed check
    or with keep, else removed."""
    ngx.stop()
    if FAILURES or keep:
        print("nginx prefix kept: " + ngx.prefix)
    else:
        ngx.cleanup()


def check_refused(servers, hosts):
    """Every address the servers connect to must refuse connections now."""
    seen = set()
    for s in servers:
        for target in s.connect_targets(hosts):
            if target in seen:
                continue
            seen.add(target)
            if not refuses(*target):
                raise RuntimeError("%s:%d accepts connections or cannot be reached; "
                                   "the test needs it closed" % target)
    return len(seen)


def check_closed(label, upstreams, servers, counted=""):
    """check_refused over servers (no hosts), then the run's size on a line:
    "LABEL: N upstreams, M addresses checked closed[, COUNTED]"."""
    n = check_refused(servers, {})
    print("%s: %d upstreams, %d addresses checked closed%s" %
          (label, len(upstreams), n, ", " + counted if counted else ""), flush=True)


def random_keys(rng, n):
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~"
    keys = ["", "a", "0"]
    while len(keys) < n:
        keys.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))))
    return keys


def url_for(upstream, key, i):
    return "/u/%s?i=%d&k=%s" % (upstream, i, key)


def run_keys(ngx, upstream_names, keys, start_id=0):
    """Sends every key to every upstream, interleaved (key 1 to each upstream,
    then key 2, ...), so each upstream sees the same sequence of keys: their
    round robin and failure states evolve alike. Returns {(upstream, key
    index): (addrs, status, ring)} from the access log."""
    ids = {}
    i = start_id
    for ki, key in enumerate(keys):
        for name in upstream_names:
            i += 1
            ids[str(i)] = (name, ki)
            if ngx.get(url_for(name, key, i)) is None:
                # The connection died (rarely, around reloads on this VM).
                # Resend only a request nginx never logged: a request routed
                # twice would change the balancers' state.
                deadline = time.monotonic() + 3
                while str(i) not in ngx.access_log() and time.monotonic() < deadline:
                    time.sleep(0.1)
                if str(i) not in ngx.access_log():
                    ngx.resent += 1
                    if ngx.get(url_for(name, key, i)) is None:
                        raise RuntimeError("no answer from nginx for %s: %s" %
                                           (url_for(name, key, i), ngx.last_error))
    log = {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        log = ngx.access_log()
        if all(k in log for k in ids):
            break
        time.sleep(0.05)
    missing = [k for k in ids if k not in log]
    if missing:
        raise RuntimeError("%d requests missing from the access log" % len(missing))
    return {ids[k]: log[k] for k in ids}, i
