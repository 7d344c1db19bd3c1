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

import http.client
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time

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


def with_params(servers, params):
    return [Server(s.text, s.weight, s.down, params) for s in servers]


def with_down(rng, servers, fraction):
    """A copy with about fraction of the servers down, the first always."""
    out = [Server(s.text, s.weight, rng.random() < fraction or s.down, s.params)
           for s in servers]
    out[0].down = True
    return out


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
    def conf_text(self, upstreams, http_extra=""):
        # the access log: $arg_i, $upstream_addr, $status, diagnostics, [$chash_ring]
        self.generation += 1
        ring_var = "\\t$chash_ring" if self.module else ""
        ring_var += "".join("\\t" + v for v in self.log_vars)
        locations = "\n".join(
            "        location = /u/%s { proxy_pass http://%s; %s}" %
            (u.name, u.name, u.location_extra) for u in upstreams)
        p = self.prefix
        return f"""# generated by tests/nginx/harness.py
{"load_module " + self.module + ";" if self.module else ""}
worker_processes {self.workers};
daemon off;
master_process on;
pid {p}/logs/nginx.pid;
error_log {p}/logs/error.log {self.error_level};
{"user root;" if os.geteuid() == 0 else ""}
events {{ worker_connections {self.worker_connections}; }}
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

    def write_conf(self, upstreams, tries=0, http_extra=""):
        text = self.conf_text(upstreams, http_extra).replace("{TRIES}", str(tries))
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

    # ---- process
    def start(self, timeout=120):
        assert self.proc is None
        self.stderr = open(os.path.join(self.prefix, "logs", "stderr.log"), "w")
        self.proc = subprocess.Popen(self.command(), stdout=self.stderr,
                                     stderr=subprocess.STDOUT, env=NGINX_ENV)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("nginx exited with %d:\n%s" %
                                   (self.proc.returncode, self.error_log()[-3000:]))
            if self.get("/generation", retry=False) == str(self.generation):
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
            self.close_conn()
            if self.get("/generation", retry=False) == str(self.generation):
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
        """{request id: (upstream_addr list, status, chash_ring)}"""
        out = {}
        with open(os.path.join(self.prefix, "logs", "access.log"), errors="replace") as f:
            for line in f:
                fields = line.rstrip("\n").split("\t")
                if len(fields) < 3 or not fields[0]:
                    continue
                addrs = [a.strip() for a in fields[1].split(",")] if fields[1] != "-" else []
                out[fields[0]] = (addrs, fields[2], fields[9] if len(fields) > 9 else "",
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
        import threading
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
