#!/usr/bin/env python3
"""A bad push never takes a proxy down: the faults of issue 31 against the
real nginx (Debian's 1.22.1), in HTTP and in stream.

    tests/nginx/test_faults.py --http-module PATH --stream-module PATH
        --chash-cli PATH [--protocol http|stream|both] [--only CASE,...]
        [--legacy] [--sanitized] [--keep]

Cases (each in HTTP and in stream, each in a fresh nginx prefix and state
directory, loopback only, every loop bounded, nginx stopped by its PID):

  inplace    the served file overwritten, then random bytes written into
             it, then truncated, all in place while traffic runs (and random
             bytes into a `map` upstream's file): no worker dies, every
             answer comes from a server of a ring that was served
  fifo       a FIFO renamed over one upstream's path while another upstream
             swaps (one thread in the pool): the swap lands, the FIFO is
             refused (not_regular), `nginx -s quit` finishes
  sparse     a valid file followed by a 4 GiB hole: refused within a second
             of the rename (max_size, and sparse with max_size=8g), workers'
             memory flat
  tls        60 swaps of an upstream of TLS backends against the same swaps
             without TLS (the control): the worker's RSS grows no more
  bounded    bounded_load=1.25 with 2 of 8 backends drained, down or failed
             (max_fails), 60 concurrent requests or sessions: none refused
  respawn    a worker SIGKILLed after a refused file (the one that verified
             the served file, then the other): its replacement serves the
             newest good version from its first request
  versions   an older signed file, then an expired one: refused, and still
             refused after `nginx -s reload` and after a restart (the last
             good file is served)
  migration  a server drained during a 5% migration, the old file first,
             then (another server) the new file first: it lands in every
             worker, the drained server's keys move, no other key moves

--legacy runs the same cases against a module that predates the state
directory and the new parameters (the code before issue 31): directives it
does not know are left out, so that each case can be seen to fail there.
--sanitized: the module runs under ASan+UBSan (tools/nginx/test-faults
--sanitize): the RSS comparisons of tls and sparse are then not asserted
(the sanitizer's allocator keeps freed memory in quarantine), which the
output says.
"""

import argparse
import collections
import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402
import stream_harness as sh  # noqa: E402

CASES = ["inplace", "fifo", "sparse", "tls", "bounded", "respawn", "versions",
         "refused_at_start", "migration"]


# ------------------------------------------------------------------ helpers

class Cli:
    def __init__(self, path, workdir):
        self.path = path
        self.workdir = workdir
        self.n = 0

    def run(self, *args):
        r = subprocess.run([self.path, *args], capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise RuntimeError("chash %s: %s" % (" ".join(args), r.stderr))
        return r.stdout

    def build(self, out, servers, version, flavor="pingora-v1", sign=None, expires=None,
              multiple=None, rename=True):
        """servers: [(address, weight)]; written beside out, renamed over it."""
        self.n += 1
        sfile = os.path.join(self.workdir, "servers.%d" % self.n)
        with open(sfile, "w") as f:
            f.write("".join("%s %d\n" % s for s in servers))
        tmp = out + ".tmp%d.chash" % self.n
        args = ["build", "--servers", sfile, "--flavor", flavor, "--config-version",
                str(version), "--out", tmp]
        if sign:
            args += ["--sign", sign]
        if expires:
            args += ["--expires", str(expires)]
            if expires <= time.time():
                args += ["--allow-expired"]
        if multiple:
            args += ["--multiple", str(multiple)]
        self.run(*args)
        if rename:
            os.rename(tmp, out)
            return out
        return tmp

    def route(self, ring, keys, *extra):
        r = subprocess.run([self.path, "route", "--ring", ring, *extra],
                           input="".join(k + "\n" for k in keys), capture_output=True,
                           text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError("chash route: " + r.stderr)
        return [line.split(",")[1] for line in r.stdout.splitlines()]


def ports(n, rng, taken):
    """n loopback ports that refuse connections now, below the ephemeral
    range."""
    pool = harness.PortPool(rng)
    pool.used |= taken
    out = []
    while len(out) < n:
        p = pool.take()
        if harness.refuses("127.0.0.1", p):
            out.append(p)
            taken.add(p)
    return out


def rss_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return 0
    return 0


def http_get(port, path, timeout=15, headers=None):
    """(status, body, headers) or (0, error, {})."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read().decode("utf-8", "replace"), dict(r.getheaders())
    except (OSError, http.client.HTTPException) as e:
        return 0, repr(e), {}
    finally:
        c.close()


def stream_get(port, src=None, timeout=15):
    """The bytes a stream session answers (the backend's port), or None."""
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(timeout)
        if src:
            s.bind((src, 0))
        s.connect(("127.0.0.1", port))
        data = harness.read_until_closed(s, 64)
        s.close()
        return data.decode() or None
    except OSError:
        return None


class Rig:
    """One nginx in a fresh prefix with both chash modules: an http{} block
    (status, /generation, HTTP upstreams and their locations on the main
    port, HTTP backends answering their port) and a stream{} block (stream
    upstreams, one listen port each, stream backends answering their port).
    """

    def __init__(self, args, workers=2, user=None, default_state=False):
        """user: the workers' (as root; root by default). default_state: no
        chash_state_path (the module's default directory)."""
        self.args = args
        self.ngx = harness.Nginx(module=None, workers=workers, keep=args.keep)
        self.p = self.ngx.prefix
        self.state = os.path.join(self.p, "state")
        self.user = user
        self.default_state = default_state
        self.stream_ports = {}
        self.upstreams = []

    def conf(self, upstreams, http_backends=(), stream_backends=(), tls_backends=(),
             tls_proto="http", main_extra="", http_extra="", stream_extra=""):
        """upstreams: dicts with proto, name, body (the upstream's lines),
        and for HTTP tls (proxy to https) and location extra."""
        a = self.args
        ngx = self.ngx
        ngx.generation += 1
        p = self.p
        state = "" if a.legacy or self.default_state else "chash_state_path %s;" % self.state
        http_ups, locations, stream_ups = [], [], []
        for u in upstreams:
            body = "\n        ".join(u["body"])
            if u["proto"] == "http":
                http_ups.append("    upstream %s {\n        %s\n    }" % (u["name"], body))
                scheme = "https" if u.get("tls") else "http"
                locations.append(
                    "        location /u/%s { proxy_pass %s://%s; %s "
                    "add_header X-Ring-Version $chash_ring_version always; }"
                    % (u["name"], scheme, u["name"], u.get("location", "")))
            else:
                if u["name"] not in self.stream_ports:
                    self.stream_ports[u["name"]] = sh.listen_port()
                stream_ups.append(
                    "    upstream %s {\n        %s\n    }\n    server { listen 127.0.0.1:%d; "
                    "proxy_pass %s; %s }" % (u["name"], body, self.stream_ports[u["name"]],
                                             u["name"], u.get("server", "")))
        cert = os.path.join(p, "cert.pem")
        key = os.path.join(p, "key.pem")
        if tls_backends and not os.path.exists(cert):
            subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                            "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=chash-test",
                            "-days", "2", "-keyout", key, "-out", cert],
                           check=True, capture_output=True, timeout=60)
        backend_http = ""
        if http_backends:
            backend_http = ("    server {\n%s\n        access_log off;\n"
                            "        location / { return 200 \"$server_port\"; }\n    }" %
                            "\n".join("        listen 127.0.0.1:%d;" % q for q in http_backends))
        backend_tls = ""
        stream_tls = ""
        listens = "\n".join("        listen 127.0.0.1:%d ssl;" % q for q in tls_backends)
        if tls_backends and tls_proto == "http":
            backend_tls = ("    server {\n%s\n        ssl_certificate %s;\n"
                           "        ssl_certificate_key %s;\n        access_log off;\n"
                           "        location / { return 200 \"$server_port\"; }\n    }" % (
                               listens, cert, key))
        elif tls_backends:
            stream_tls = ("    server {\n%s\n        ssl_certificate %s;\n"
                          "        ssl_certificate_key %s;\n"
                          "        return \"$server_port\";\n    }" % (listens, cert, key))
        backend_stream = ""
        if stream_backends:
            backend_stream = "    server {\n%s\n        return \"$server_port\";\n    }" % (
                "\n".join("        listen 127.0.0.1:%d;" % q for q in stream_backends))
        loads = [sh.STREAM_MODULE, a.stream_module, a.http_module]
        text = f"""# generated by tests/nginx/test_faults.py
{harness.main_context(p, ngx.workers, loads, 4096, extra=main_extra, user=self.user)}
http {{
    access_log off;
{harness.temp_paths(p)}
    {state}
{chr(10).join(http_ups)}
    server {{
        listen 127.0.0.1:{ngx.port};
        error_log {p}/logs/requests-error.log crit;
        proxy_connect_timeout 2s;
        proxy_read_timeout 10s;
        proxy_next_upstream error timeout;
        location = /generation {{ return 200 "{ngx.generation}"; }}
        location = /chash-status {{ chash_status; }}
{chr(10).join(locations)}
{http_extra}
    }}
{backend_http}
{backend_tls}
}}
stream {{
    {state}
    error_log {p}/logs/session-error.log crit;
    proxy_connect_timeout 2s;
    proxy_timeout 10s;
    proxy_next_upstream on;
{stream_extra}
{chr(10).join(stream_ups)}
{backend_stream}
{stream_tls}
}}
"""
        ngx.write_text(text)

    def start(self):
        self.ngx.start()

    def status(self):
        code, body, _ = http_get(self.ngx.port, "/chash-status")
        if code != 200:
            return {}
        d = json.loads(body)
        out = dict(d.get("upstreams", {}))
        out.update(d.get("stream_upstreams", {}))
        return out

    def workers(self, name, side="config_version"):
        """{pid: version} of the live workers serving upstream name."""
        u = self.status().get(name)
        return {w["pid"]: w.get(side) for w in u["workers"]} if u else {}

    def wait_versions(self, name, want, timeout=15, side="config_version", n=None):
        """Seconds until every live worker (n of them) serves want; None."""
        start = time.monotonic()
        n = n or self.ngx.workers
        while time.monotonic() - start < timeout:
            w = self.workers(name, side)
            if len(w) == n and all(v == want for v in w.values()):
                return time.monotonic() - start
            time.sleep(0.05)
        return None

    def worker_pids(self):
        """The master's children (its workers), from /proc."""
        if self.ngx.proc is None:
            return []
        master = self.ngx.proc.pid
        pids = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open("/proc/%s/stat" % d) as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                    if int(fields[1]) == master:
                        pids.append(int(d))
                except (OSError, IndexError, ValueError):
                    pass
        return pids

    def crashes(self):
        return re.findall(r"worker process \d+ exited on signal \d+", self.ngx.error_log())

    def error_lines(self, pattern):
        return [ln for ln in self.ngx.error_log().splitlines() if re.search(pattern, ln)]

    def ask(self, u, key):
        """One request (HTTP) or session (stream) of upstream u: the port that
        answered (int), or None."""
        if u["proto"] == "http":
            code, body, _ = http_get(self.ngx.port, "/u/%s?k=%s" % (u["name"], key))
            return int(body) if code == 200 and body.isdigit() else None
        body = stream_get(self.stream_ports[u["name"]], src=key)
        return int(body) if body and body.isdigit() else None

    def stop(self, timeout=30):
        """Stops nginx; its workers too, by PID, if the master is gone and
        they are not."""
        pids = self.worker_pids()
        self.ngx.stop(timeout=timeout)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def cleanup(self):
        self.stop()
        self.ngx.finish()

    def start_serving(self, name, upstreams, **kw):
        """Writes the configuration and starts nginx: {pid: version} of the
        workers serving upstream name, or {"start failed": why}."""
        self.conf(upstreams, **kw)
        try:
            self.start()
            return self.workers(name)
        except RuntimeError as e:
            return {"start failed": str(e).splitlines()[-1][:200]}


def key_for(proto, rng):
    """A request's key: ?k= in HTTP; in stream the client's source address
    (chash $remote_addr)."""
    if proto == "http":
        return "k%d" % rng.randrange(10 ** 9)
    return "127.%d.%d.%d" % (rng.randint(1, 250), rng.randint(0, 255), rng.randint(1, 254))


def chash_line(proto, flavor, extra=""):
    return "chash %s flavor=%s%s;" % ("$arg_k" if proto == "http" else "$remote_addr",
                                      flavor, extra)


def snap_line(args, path, params):
    """chash_snapshot PATH params: the new parameters left out with --legacy."""
    if args.legacy:
        params = " ".join(w for w in params.split()
                          if not w.startswith(("threads=", "max_size=", "state=")) and w != "map")
    return "chash_snapshot %s %s;" % (path, params)


def snap_upstream(args, proto, name, path, params="poll=100ms"):
    """Upstream PROTO_name of Rig.conf: `chash KEY flavor=pingora-v1`
    serving the snapshot at path (chash_snapshot path params)."""
    return {"proto": proto, "name": "%s_%s" % (proto, name),
            "body": [chash_line(proto, "pingora-v1"), snap_line(args, path, params)]}


def answering(proto, backends):
    """Rig.conf's keyword argument for backends that answer in proto."""
    return {"http_backends" if proto == "http" else "stream_backends": backends}


def weight_one(backends):
    """A fleet of the backends' ports on 127.0.0.1, weight 1 each."""
    return [("127.0.0.1:%d" % q, 1) for q in backends]


def rig_and_snapshot(args, cli, rng, proto, taken, name, n=6, version=1, workers=2, **build):
    """A case's start: a fresh Rig, n backends (ports that refuse now), and
    the snapshot WORKDIR/PROTO-NAME.chash of them at weight 1: (rig,
    backends, fleet, the snapshot's path)."""
    rig = Rig(args, workers=workers)
    backends = ports(n, rng, taken)
    fleet = weight_one(backends)
    path = cli.build(os.path.join(cli.workdir, "%s-%s.chash" % (proto, name)), fleet, version,
                     **build)
    return rig, backends, fleet, path


class Traffic(harness.Traffic):
    """Threads asking upstream u with random keys until stopped (bounded by a
    deadline): (port or None) a result."""

    def __init__(self, rig, u, threads=2, seconds=120):
        self.rig = rig
        self.u = u
        super().__init__(threads, seconds)

    def run(self, i):
        rng = random.Random(i)
        while self.running():
            self.add(self.rig.ask(self.u, key_for(self.u["proto"], rng)))


# -------------------------------------------------------------------- cases

def case_inplace(args, cli, rng, proto, taken):
    """Writes in place into the served file under traffic."""
    rig = Rig(args)
    backends = ports(48, rng, taken)
    fleet = [("127.0.0.1:%d" % q, 100 + 20 * (i % 5)) for i, q in enumerate(backends)]
    path = os.path.join(cli.workdir, "%s-inplace.chash" % proto)
    mpath = os.path.join(cli.workdir, "%s-inplace-map.chash" % proto)
    cli.build(path, fleet, 1)
    cli.build(mpath, fleet, 1)
    u = snap_upstream(args, proto, "inplace", path)
    m = snap_upstream(args, proto, "inplace_map", mpath, "poll=100ms map")
    allowed = set(backends)
    traffic = None
    try:
        rig.conf([u, m], **answering(proto, backends))
        rig.start()
        check(rig.wait_versions(u["name"], 1) is not None, "%s inplace: serving 1" % proto)
        traffic = [Traffic(rig, u), Traffic(rig, m, threads=1)]
        time.sleep(0.5)
        # cp NEW OLD: the file truncated, then a valid newer one written in
        newer = cli.build(path, [(a, w + 7) for a, w in fleet], 2, rename=False)
        with open(newer, "rb") as f:
            data = f.read()
        os.remove(newer)
        with open(path, "r+b") as f:
            f.truncate(0)
            f.write(data)
        time.sleep(1.5)
        # random bytes over the middle of the (now version 2) file, and of
        # the map upstream's file
        for target in (path, mpath):
            size = os.path.getsize(target)
            with open(target, "r+b") as f:
                f.seek(size // 4)
                f.write(os.urandom(size // 2))
        time.sleep(1.5)
        # truncated in place to a page
        os.truncate(path, 4096)
        time.sleep(1.5)
        # a good file renamed in: served again
        cli.build(path, fleet, 3)
        took = rig.wait_versions(u["name"], 3)
        check(took is not None, "%s inplace: a good file after the faults is served" % proto)
        time.sleep(0.5)
    finally:
        for t in traffic or []:
            t.stop()
        crashes = rig.crashes()
        rig.cleanup()
    res = traffic[0].results if traffic else []
    mres = traffic[1].results if traffic else []
    bad = [r for r in res if r not in allowed]
    mbad = [r for r in mres if r not in allowed]
    check(not crashes, "%s inplace: %d worker crashes: %s" % (proto, len(crashes), crashes[:3]))
    check(res and not bad, "%s inplace: %d of %d answers not from a served ring's server "
          "(None: failed): %s" % (proto, len(bad), len(res), bad[:5]))
    check(mres and not mbad, "%s inplace, map: %d of %d answers not from the file's servers: "
          "%s" % (proto, len(mbad), len(mres), mbad[:5]))
    print("%s inplace: overwrite, random bytes, truncation of the served file under traffic: "
          "%d worker crashes, %d answers, %d outside the served rings; map mode with random "
          "bytes: %d answers, %d outside" % (proto, len(crashes), len(res), len(bad),
                                              len(mres), len(mbad)), flush=True)


def case_fifo(args, cli, rng, proto, taken):
    """A FIFO at one path while another upstream swaps, then quit."""
    rig, backends, fleet, pa = rig_and_snapshot(args, cli, rng, proto, taken, "fifo-a")
    pb = cli.build(os.path.join(cli.workdir, "%s-fifo-b.chash" % proto), fleet, 1)
    ua = snap_upstream(args, proto, "fifo_a", pa, "poll=100ms thread_pool=chash1")
    ub = snap_upstream(args, proto, "fifo_b", pb, "poll=100ms thread_pool=chash1")
    quit_took = None
    writer = None
    try:
        rig.conf([ua, ub], main_extra="thread_pool chash1 threads=1;",
                 **answering(proto, backends))
        rig.start()
        fifo = pa + ".fifo"
        os.mkfifo(fifo)
        os.rename(fifo, pa)
        time.sleep(0.5)
        cli.build(pb, fleet[1:], 2)
        took = rig.wait_versions(ub["name"], 2, timeout=10)
        check(took is not None, "%s fifo: the other upstream's swap lands while a FIFO sits at "
              "this one's path" % proto)
        answers = [rig.ask(ua, key_for(proto, rng)) for _ in range(20)]
        check(all(a in backends for a in answers), "%s fifo: the FIFO's upstream serves on: %s"
              % (proto, answers))
        refused = rig.error_lines(r'fifo-a\.chash.*refused, check not_regular')
        check(len(refused) == rig.ngx.workers, "%s fifo: refused (not_regular) once a worker: "
              "%d lines" % (proto, len(refused)))
        pids = rig.worker_pids()
        start = time.monotonic()
        rig.ngx.proc.send_signal(signal.SIGQUIT)
        try:
            rig.ngx.proc.wait(timeout=10)
            quit_took = time.monotonic() - start
        except subprocess.TimeoutExpired:
            pass
        check(quit_took is not None, "%s fifo: nginx -s quit finished (not within 10 s)" % proto)
        if quit_took is None:
            # unblock what waits in open() of the FIFO, so that it can exit
            try:
                writer = os.open(pa, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                pass
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    finally:
        rig.cleanup()
        if writer is not None:
            os.close(writer)
        if os.path.exists(pa):
            os.remove(pa)
    print("%s fifo: the other upstream swapped, the FIFO was refused, quit took %s" %
          (proto, "%.2f s" % quit_took if quit_took is not None else "more than 10 s"),
          flush=True)


def case_sparse(args, cli, rng, proto, taken):
    """A valid file followed by a 4 GiB hole."""
    rig, backends, fleet, pa = rig_and_snapshot(args, cli, rng, proto, taken, "sparse")
    pb = cli.build(os.path.join(cli.workdir, "%s-sparse8g.chash" % proto), fleet, 1)
    ua = snap_upstream(args, proto, "sparse", pa)
    ub = snap_upstream(args, proto, "sparse8g", pb, "poll=100ms max_size=8g")
    results = []
    try:
        rig.conf([ua, ub], **answering(proto, backends))
        rig.start()
        pids = rig.worker_pids()
        for u, path, check_name in ((ua, pa, "max_size"), (ub, pb, "sparse")):
            before = {pid: rss_kib(pid) for pid in pids}
            tmp = cli.build(path, fleet[1:], 2, rename=False)
            os.truncate(tmp, 4 << 30)
            start = time.monotonic()
            os.rename(tmp, path)
            took = None
            deadline = start + 15
            pattern = r'%s\.chash" in upstream "%s": refused' % (
                os.path.basename(path)[:-6], u["name"])
            while time.monotonic() < deadline:
                if len(rig.error_lines(pattern)) >= len(pids):
                    took = time.monotonic() - start
                    break
                time.sleep(0.01)
            lines = rig.error_lines(pattern)
            growth = max(rss_kib(pid) - before[pid] for pid in pids) / 1024
            results.append((u["name"], took, growth, lines[-1:]))
            check(took is not None and took < 1.0, "%s sparse: a 4 GiB sparse file refused by "
                  "every worker within a second of the rename: %s" %
                  (u["name"], "%.2f s" % took if took is not None else "not in 15 s"))
            check(all(("check %s:" % check_name) in ln for ln in lines) or args.legacy,
                  "%s sparse: refused by check %s: %s" % (u["name"], check_name, lines[-1:]))
            if args.sanitized:
                continue
            check(growth < 16, "%s sparse: worker RSS grew %.1f MiB" % (u["name"], growth))
            check(rig.wait_versions(u["name"], 1, timeout=2) is not None,
                  "%s sparse: still serving 1" % u["name"])
    finally:
        rig.cleanup()
    for name, took, growth, lines in results:
        print("%s: refused %s after the rename, worker RSS %+.1f MiB%s: %s" % (
            name, "%.3f s" % took if took is not None else "not", growth,
            " (not asserted under ASan)" if args.sanitized else "",
            (lines[0].split("refused, ", 1)[-1][:90] if lines else "")), flush=True)


def case_tls(args, cli, rng, proto, taken):
    """60 swaps with TLS backends against 60 without: the worker's RSS."""
    swaps = 60
    growth = {}
    for tls in (False, True):
        rig, backends, fleet, path = rig_and_snapshot(args, cli, rng, proto, taken,
                                                      "tls-%d" % tls, n=48, workers=1)
        u = snap_upstream(args, proto, "tls" if tls else "plain", path,
                          "poll=50ms thread_pool=chash1")
        u["tls"] = tls
        name = u["name"]
        if proto == "http":
            u["location"] = "proxy_ssl_session_reuse on;" if tls else ""
        else:
            u["server"] = "proxy_ssl on; proxy_ssl_session_reuse on;" if tls else ""
        # a key a backend (every backend asked after every swap)
        pool = [key_for(proto, rng) for _ in range(6000)]
        routed = cli.route(path, pool)
        keys = {}
        for k, addr in zip(pool, routed):
            keys.setdefault(addr, k)
        try:
            if tls:
                kw = {"tls_backends": backends, "tls_proto": proto}
            else:
                kw = answering(proto, backends)
            rig.conf([u], main_extra="thread_pool chash1 threads=1;", **kw)
            rig.start()
            pid = rig.worker_pids()[0]
            marks = {}
            failed = 0
            for v in range(2, swaps + 2):
                cli.build(path, fleet, v)
                if rig.wait_versions(name, v, timeout=10) is None:
                    check(False, "%s: swap to %d" % (name, v))
                    break
                for addr, k in keys.items():
                    failed += rig.ask(u, k) is None
                if v - 1 in (10, swaps):
                    marks[v - 1] = rss_kib(pid)
            growth[tls] = (marks.get(swaps, 0) - marks.get(10, 0)) / 1024
            check(failed == 0, "%s: %d failed requests" % (name, failed))
            check(len(keys) == len(backends), "%s: a key for each of the %d backends" %
                  (name, len(backends)))
        finally:
            rig.cleanup()
    extra = growth.get(True, 0) - growth.get(False, 0)
    if not args.sanitized:
        check(extra < 4, "%s tls: the worker grew %.1f MiB over 50 swaps with TLS, %.1f without"
              % (proto, growth.get(True, 0), growth.get(False, 0)))
    print("%s tls: %d swaps, every backend asked after each: worker RSS from swap 10 to %d "
          "%+.1f MiB with TLS, %+.1f MiB without%s" % (
              proto, swaps, swaps, growth.get(True, 0), growth.get(False, 0),
              " (not asserted under ASan)" if args.sanitized else ""), flush=True)


class SlowBackends:
    """Listeners that accept, wait `delay` seconds, answer their port (an
    HTTP response, or the bare port for stream) and close: connections that
    overlap, so that loads build up."""

    def __init__(self, port_list, http, delay):
        self.socks = []
        self.stopping = False
        self.threads = []
        for q in port_list:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", q))
            s.listen(256)
            s.settimeout(0.05)
            self.socks.append(s)
            t = threading.Thread(target=self.accept, args=(s, q, http, delay), daemon=True)
            t.start()
            self.threads.append(t)

    def accept(self, s, q, http, delay):
        while not self.stopping:
            try:
                c, _ = s.accept()
            except (socket.timeout, OSError):
                continue
            threading.Thread(target=self.serve, args=(c, q, http, delay), daemon=True).start()

    def serve(self, c, q, http, delay):
        try:
            c.settimeout(15)
            if http:
                data = b""
                while b"\r\n\r\n" not in data and len(data) < 65536:
                    chunk = c.recv(4096)
                    if not chunk:
                        return
                    data += chunk
            time.sleep(delay)
            body = str(q).encode()
            if http:
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                          % len(body) + body)
            else:
                c.sendall(body)
        except OSError:
            pass
        finally:
            c.close()

    def close(self):
        self.stopping = True
        for t in self.threads:
            t.join(timeout=5)
        for s in self.socks:
            s.close()


def case_bounded(args, cli, rng, proto, taken):
    """bounded_load with 2 of 8 servers drained, down or failed."""
    backends = ports(8, rng, taken)
    live = backends[:6]
    out = backends[6:]
    concurrency = 60
    lines_of = {
        "drained": None,   # a snapshot: weight 0
        "down": ["server 127.0.0.1:%d%s;" % (q, " down" if q in out else "") for q in backends],
        "failed": ["server 127.0.0.1:%d max_fails=1 fail_timeout=600s;" % q for q in backends],
    }
    for flavor in ("pingora-v1", "nginx"):
        path = cli.build(os.path.join(cli.workdir, "%s-bounded-%s.chash" % (proto, flavor)),
                         [("127.0.0.1:%d" % q, 0 if q in out else 1) for q in backends], 1,
                         flavor=flavor)
        ups = []
        for kind, lines in lines_of.items():
            body = [chash_line(proto, flavor, " bounded_load=1.25")]
            if lines is None:
                body.append(snap_line(args, path, "poll=off max_fails=0"))
            else:
                body += lines
            ups.append({"proto": proto, "name": "%s_%s_%s" % (proto, kind,
                                                             flavor.replace("-", "_")),
                        "body": body, "kind": kind})
        rig = Rig(args, workers=1)
        slow = SlowBackends(live, proto == "http", 1.5)
        try:
            rig.conf(ups)
            rig.start()
            for u in ups:
                if u["kind"] == "failed":
                    # keys fail over the two closed ports: they are failed
                    # (max_fails=1) for the rest of the case
                    warm = [threading.Thread(target=rig.ask, args=(u, key_for(proto, rng)))
                            for _ in range(24)]
                    for t in warm:
                        t.start()
                    for t in warm:
                        t.join(timeout=30)
                results = []
                lock = threading.Lock()

                def one(k, u=u):
                    got = rig.ask(u, k)
                    with lock:
                        results.append(got)

                threads = [threading.Thread(target=one, args=(key_for(proto, rng),))
                           for _ in range(concurrency)]
                for t in threads:
                    t.start()
                    time.sleep(0.005)
                for t in threads:
                    t.join(timeout=30)
                refused = [r for r in results if r not in live]
                check(len(results) == concurrency and not refused,
                      "%s: %d of %d concurrent %s refused or failed" %
                      (u["name"], len(refused), concurrency,
                       "requests" if proto == "http" else "sessions"))
                print("%s: bounded_load=1.25, 2 of 8 servers %s, %d concurrent: %d answered, "
                      "%d refused" % (u["name"], u["kind"], concurrency,
                                      len(results) - len(refused), len(refused)), flush=True)
            if not args.legacy:
                st = rig.status()
                snap = st.get("%s_drained_%s" % (proto, flavor.replace("-", "_")), {})
                print("%s %s: bounded_load_passes in the status: %s" %
                      (proto, flavor, snap.get("bounded_load_passes")), flush=True)
        finally:
            slow.close()
            rig.cleanup()


def case_respawn(args, cli, rng, proto, taken):
    """SIGKILL after a refused file: the replacement serves the newest good
    version."""
    rig, backends, fleet, path = rig_and_snapshot(args, cli, rng, proto, taken, "respawn")
    u = snap_upstream(args, proto, "respawn", path)
    name = u["name"]
    try:
        rig.conf([u], **answering(proto, backends))
        rig.start()
        cli.build(path, fleet[1:], 2)
        check(rig.wait_versions(name, 2) is not None, "%s: serving 2" % name)
        verifier = [int(m.group(1)) for m in re.finditer(
            r"\[notice\] (\d+)#\d+: chash_snapshot \S+ in upstream \"%s\": serving config "
            r"version 2 \(ring \w+\), was 1\n" % name, rig.ngx.error_log())]
        # a newer version, damaged: refused (its body fails the checksum)
        bad = cli.build(path, fleet[2:], 3, rename=False)
        with open(bad, "rb") as f:
            data = bytearray(f.read())
        data[len(data) // 2] ^= 0xff
        with open(bad, "wb") as f:
            f.write(bytes(data))
        os.rename(bad, path)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(rig.error_lines(
                r'upstream "%s": refused' % name)) < 2:
            time.sleep(0.05)
        check(len(rig.error_lines(r'upstream "%s": refused' % name)) == 2,
              "%s: the damaged file refused by both workers" % name)
        order = ["the verifier", "the other"]
        pids = list(rig.workers(name))
        victims = []
        if verifier and verifier[0] in pids:
            victims = [verifier[0]] + [p for p in pids if p != verifier[0]]
        else:
            victims = pids
            order = ["a worker (which verified: not logged)", "the other"]
        for label, victim in zip(order, victims):
            os.kill(victim, signal.SIGKILL)
            new = None
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                w = rig.workers(name)
                fresh = [p for p in w if p not in pids and p != victim]
                if fresh and len(w) == 2:
                    new = fresh[0]
                    break
                time.sleep(0.02)
            first = rig.workers(name).get(new) if new else None
            check(first == 2, "%s: the worker respawned after %s was SIGKILLed serves %s, "
                  "not 2" % (name, label, first))
            pids.append(new)
            print("%s: %s SIGKILLed after a refused file: its replacement serves %s from its "
                  "start" % (name, label, first), flush=True)
        answers = {rig.ask(u, key_for(proto, rng)) for _ in range(30)}
        check(answers <= {q for q in backends[1:]}, "%s: answers from version 2's servers: %s"
              % (name, answers))
    finally:
        rig.cleanup()


def case_versions(args, cli, rng, proto, taken):
    """An older signed file, an expired one: refused across reloads and a
    restart."""
    key = os.path.join(cli.workdir, "key")
    if not os.path.exists(key):
        cli.run("keygen", "--out", key)
    rig, backends, fleet, path = rig_and_snapshot(args, cli, rng, proto, taken, "versions",
                                                  version=5, workers=1, sign=key)
    u = snap_upstream(args, proto, "versions", path, "trusted_key=%s.pub poll=100ms" % key)
    name = u["name"]
    kw = answering(proto, backends)
    try:
        rig.conf([u], **kw)
        rig.start()
        check(rig.wait_versions(name, 5, n=1) is not None, "%s: serving 5" % name)
        for label, version, expires, check_name in (
                ("an older signed file", 3, None, "rollback"),
                ("an expired signed file", 6, int(time.time()) - 60, "expired")):
            cli.build(path, fleet[1:], version, sign=key, expires=expires)
            time.sleep(0.6)
            got = rig.workers(name)
            check(list(got.values()) == [5], "%s: %s: still 5, not %s" % (name, label, got))
            lines = rig.error_lines(r'upstream "%s": refused, check %s' % (name, check_name))
            check(lines or args.legacy, "%s: %s refused, check %s" % (name, label, check_name))
            rig.conf([u], **kw)
            rig.ngx.reload()
            after_reload = rig.workers(name)
            check(list(after_reload.values()) == [5], "%s: %s, after nginx -s reload: %s, not "
                  "5" % (name, label, after_reload))
            rig.stop()
            rig.ngx.proc = None
            after_restart = rig.start_serving(name, [u], **kw)
            check(list(after_restart.values()) == [5], "%s: %s, after a restart: %s, not 5" %
                  (name, label, after_restart))
            print("%s: %s (check %s): refused; after a reload %s, after a restart %s" % (
                name, label, check_name, list(after_reload.values()),
                list(after_restart.values())), flush=True)
        cli.build(path, fleet, 7, sign=key)
        check(rig.wait_versions(name, 7, n=1) is not None, "%s: a newer file is served" % name)
    finally:
        rig.cleanup()


def case_refused_at_start(args, cli, rng, proto, taken):
    """A file the module refuses when nginx starts (another flavor than the
    chash line's) leaves no trace in the state: a later, lower version that
    the module accepts is served, not refused as a rollback."""
    rig, backends, fleet, path = rig_and_snapshot(args, cli, rng, proto, taken,
                                                  "refused-at-start", n=4, version=9,
                                                  workers=1, flavor="pingora-v2")
    u = snap_upstream(args, proto, "refused_at_start", path)
    name = u["name"]
    kw = answering(proto, backends)
    try:
        rig.conf([u], **kw)
        try:
            rig.start()
            started = True
        except RuntimeError:
            started = False
        rig.ngx.proc = None
        check(not started, "%s: nginx started with a file of another flavor" % name)
        logs = ""
        for log in ("error.log", "stderr.log"):
            try:
                with open(os.path.join(rig.p, "logs", log), errors="replace") as f:
                    logs += f.read()
            except OSError:
                pass
        check("check flavor failed" in logs,
              "%s: the start names the flavor check" % name)
        leftovers = sorted(f for f in os.listdir(rig.state) if f.endswith((".state", ".good"))) \
            if os.path.isdir(rig.state) else []
        check(args.legacy or not leftovers,
              "%s: the refused file left %s in the state directory" % (name, leftovers))
        cli.build(path, fleet, 4)
        served = rig.start_serving(name, [u], **kw)
        check(list(served.values()) == [4], "%s: version 4 after a refused version 9: %s" %
              (name, served))
        print("%s: version 9 of another flavor refused at start, state left %s; version 4 "
              "then serves %s" % (name, leftovers, list(served.values())), flush=True)
    finally:
        rig.cleanup()


def case_migration(args, cli, rng, proto, taken):
    """A drain during a 5% migration, old file first and new file first."""
    rig = Rig(args)
    backends = ports(8, rng, taken)
    fleet = {"127.0.0.1:%d" % q: 1 + i % 3 for i, q in enumerate(backends)}
    old = os.path.join(cli.workdir, "%s-mig-old.chash" % proto)
    new = os.path.join(cli.workdir, "%s-mig-new.chash" % proto)
    cli.build(old, list(fleet.items()), 1)
    cli.build(new, list(fleet.items()), 1, flavor="pingora-v2", multiple=40)
    name = "%s_migration" % proto
    rollout = "5%"
    mig = "chash_migrate %s rollout=%s seed=11 poll=100ms;" % (new, rollout)
    u = {"proto": proto, "name": name,
         "body": [chash_line(proto, "pingora-v1").replace(" flavor=pingora-v1", ""),
                  snap_line(args, old, "poll=100ms"), mig]}
    keys = [key_for(proto, rng) for _ in range(400)]
    try:
        rig.conf([u], **answering(proto, backends))
        rig.start()

        def routes():
            return [rig.ask(u, k) for k in keys]

        def both(want):
            a = rig.wait_versions(name, want[0], timeout=10)
            b = rig.wait_versions(name, want[1], timeout=10, side="migration_config_version")
            return a is not None and b is not None

        before = routes()
        check(None not in before, "%s: every key answered at start" % name)
        drained = set()
        for step, (first, second) in enumerate((("old", "new"), ("new", "old"))):
            victim = max(set(before) - drained - {None}, key=before.count)
            drained.add(victim)
            weights = [(a, 0 if int(a.rsplit(":", 1)[1]) in drained else w)
                       for a, w in fleet.items()]
            version = step + 2
            files = {"old": (old, {}), "new": (new, {"flavor": "pingora-v2", "multiple": 40})}
            path, kw = files[first]
            cli.build(path, weights, version, **kw)
            time.sleep(1.0)
            half = {w: rig.workers(name, s) for w, s in (("old", "config_version"),
                                                       ("new", "migration_config_version"))}
            check(all(v == version - 1 for d in half.values() for v in d.values()),
                  "%s: the %s file alone is not served (its backends wait for the %s's): %s" %
                  (name, first, second, half))
            path, kw = files[second]
            cli.build(path, weights, version, **kw)
            landed = both((version, version))
            check(landed, "%s: the drain of %d lands in every worker (%s file first): %s" % (
                name, victim, first, {w: rig.workers(name, s) for w, s in (
                    ("old", "config_version"), ("new", "migration_config_version"))}))
            after = routes()
            moved = [i for i in range(len(keys)) if after[i] != before[i]]
            wrong = [i for i in moved if before[i] != victim]
            stayed = [i for i in range(len(keys)) if before[i] == victim and after[i] == victim]
            check(not wrong and not stayed and None not in after,
                  "%s: after draining %d, %d keys moved that were not on it, %d stayed on it" %
                  (name, victim, len(wrong), len(stayed)))
            print("%s: %s file first, then %s: the drain of %d %s; %d keys moved, %d of them "
                  "not the drained server's, %d stayed on it" % (
                      name, first, second, victim,
                      "landed in every worker" if landed else "did not land",
                      len(moved), len(wrong), len(stayed)), flush=True)
            before = after
        if not args.legacy:
            waiting = rig.error_lines(r'upstream "%s": refused, check backend_mismatch: .*'
                                      r'waiting for' % name)
            # Once a step a worker; a second line when the file's identity
            # is seen to change twice under load is noise, a line every
            # poll (10 a second) would be a flood.
            said = collections.Counter(re.search(r"\] (\d+)#", ln).group(1) for ln in waiting)
            check(len(said) == rig.ngx.workers and all(2 <= n <= 4 for n in said.values()),
                  "%s: each worker said once a step (2 steps) that a side waits for the "
                  "other file: lines by worker pid %s" % (name, dict(said)))
    finally:
        rig.cleanup()


def main():
    args = suite_arguments(20261203, legacy=True)
    return run_cases(args, CASES, globals(), "chash-faults-")


def suite_arguments(seed, legacy=False):
    """The command line of a suite of cases: the modules, the CLI,
    --protocol, --only, --keep, --seed (and with legacy, --legacy and
    --sanitized; else both false), paths made absolute."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--http-module", required=True)
    ap.add_argument("--stream-module", required=True)
    ap.add_argument("--chash-cli", required=True)
    ap.add_argument("--protocol", default="both", choices=["http", "stream", "both"])
    ap.add_argument("--only", default="")
    if legacy:
        ap.add_argument("--legacy", action="store_true")
        ap.add_argument("--sanitized", action="store_true")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--seed", type=int, default=seed)
    args = ap.parse_args()
    if not legacy:
        args.legacy = args.sanitized = False
    args.http_module = os.path.abspath(args.http_module)
    args.stream_module = os.path.abspath(args.stream_module)
    args.chash_cli = os.path.abspath(args.chash_cli)
    return args


def run_cases(args, all_cases, functions, prefix, first=None):
    """Runs functions["case_" + CASE](args, cli, rng, proto, taken) for each
    case of all_cases that --only names (all without it) in each protocol
    of --protocol, after first(args, cli, rng, taken) if given, in a work
    folder named prefix...: a case that raises fails (its traceback
    printed); the suite's summary line and exit status."""
    cases = [c for c in all_cases if not args.only or c in args.only.split(",")]
    protos = ["http", "stream"] if args.protocol == "both" else [args.protocol]
    rng = random.Random(args.seed)
    taken = set()
    started = time.monotonic()
    with harness.work_dir(prefix, args.keep) as workdir:
        cli = Cli(args.chash_cli, workdir)
        steps = [("", "first", lambda: first(args, cli, rng, taken))] if first else []
        steps += [(proto, case, lambda case=case, proto=proto:
                   functions["case_" + case](args, cli, rng, proto, taken))
                  for case in cases for proto in protos]
        for proto, case, step in steps:
            t = time.monotonic()
            try:
                step()
            except Exception as e:  # a case that could not run fails
                check(False, "%s %s: %r" % (proto, case, e))
                traceback.print_exc()
            print("-- %s %s: %.1f s" % (proto, case, time.monotonic() - t), flush=True)
    return harness.summary(started)


if __name__ == "__main__":
    sys.exit(main())
