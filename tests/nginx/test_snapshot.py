#!/usr/bin/env python3
"""chash_snapshot, subsets, chash_migrate, the $chash_* variables and hot swap
in the real nginx (Debian's 1.22.1), against stock `hash KEY consistent;`
over the same servers and against `chash route --ring`.

    tests/nginx/test_snapshot.py --module PATH --chash-cli PATH [--keys N]

Snapshot files are written by `chash build`. Upstreams whose addresses
refuse connections show every try in $upstream_addr; the hot-swap part runs
small HTTP backends on loopback that answer, so that a failed request is a
real failure. Exit status 0 only when every check ran and passed.
"""

import http.client
import http.server
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import Nginx, Server, Upstream, check  # noqa: E402
import test_nginx as tn  # noqa: E402  (the pingora model, peer_name, compare_pairs)

TRIES = 30  # past nginx's 20 ring tries into round robin
LOG_VARS = ["$chash_ring_version", "$chash_ring_choice", "$chash_subset"]


class Cli:
    def __init__(self, path, workdir):
        self.path = path
        self.workdir = workdir

    def run(self, *args, stdin=None):
        r = subprocess.run([self.path, *args], input=stdin, capture_output=True, text=True,
                           timeout=300)
        if r.returncode != 0:
            raise RuntimeError("chash %s: %s" % (" ".join(args), r.stderr))
        return r.stdout

    def servers_file(self, name, servers):
        path = os.path.join(self.workdir, name)
        with open(path, "w") as f:
            f.write("".join("%s %d\n" % (s.text, s.weight) for s in servers))
        return path

    def build(self, out, servers, version=0, mode="nginx", multiple=None, subsets=None,
              sign=None):
        """Builds a snapshot into a temporary name, then renames it to out."""
        args = ["build", "--servers", self.servers_file(os.path.basename(out) + ".servers",
                                                          servers),
                "--mode", mode, "--config-version", str(version)]
        if multiple:
            args += ["--multiple", str(multiple)]
        for name, members in (subsets or {}).items():
            args += ["--subset", "%s=%s" % (name, self.servers_file(
                "%s.%s.subset" % (os.path.basename(out), name), members))]
        if sign:
            args += ["--sign", sign]
        tmp = out + ".tmp.chash"
        self.run(*args, "--out", tmp)
        os.rename(tmp, out)
        return out

    def fingerprint(self, ring):
        return json.loads(self.run("inspect", ring, "--json"))["fingerprint"]

    def route(self, keys, *args):
        out = self.run("route", *args, stdin="".join(k + "\n" for k in keys))
        return [line.split(",") for line in out.splitlines()]


def snapshot_servers(rng, ports, n):
    """nginx flavor: IPv4:port, [::1]:port and IPv4 without a port."""
    return harness.random_servers(rng, ports, n, [("v4", 0.6), ("v6", 0.8), ("noport", 1)])


def pick(rng, servers, fraction):
    out = [s for s in servers if rng.random() < fraction]
    return out or [servers[0]]


STATUS_LOCATION = "        location = /chash-status { chash_status; allow 127.0.0.1; deny all; }"


def status(port, query="", method="GET"):
    """(HTTP status, content type, body) of the chash_status location."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request(method, "/chash-status" + query)
        r = c.getresponse()
        return r.status, r.getheader("Content-Type"), r.read().decode()
    finally:
        c.close()


def prometheus_samples(text):
    """{(name, frozenset(labels)): value}; checks each family is one group."""
    samples = {}
    families = []
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            families.append(line.split()[2])
            continue
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r'([a-z_]+)\{(.*)\} (\d+)', line)
        check(m is not None, "prometheus line %r" % line)
        if not m:
            continue
        check(families and families[-1] == m.group(1), "sample %s outside its family" %
              m.group(1))
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
        samples[(m.group(1), labels)] = int(m.group(3))
    check(len(families) == len(set(families)), "each family once: %s" % families)
    return samples


def config_error(module, upstream_body, http_extra="", http_extra_main=""):
    """`nginx -t` of one upstream: (exit status, output)."""
    ngx = Nginx(module=module)
    ngx.write_conf([Upstream("u", "chash $arg_k", [])])
    edits = [("        chash $arg_k;\n", upstream_body + "\n")]
    if http_extra_main:
        edits.append(("    log_format t", http_extra_main + "\n    log_format t"))
    return ngx.test_edited(*edits)[:2]


# ---------------------------------------------------------------- part 1

def routing(args, cli, rng, ports, keys, workdir):
    """Snapshot upstreams = stock hash over the same servers, retries and
    failure state included; subsets = stock over the subset's servers;
    pingora snapshots = the pingora-ketama model and `chash route --ring`;
    migrations = `chash route --ring --new-ring --rollout`."""
    cli.run("keygen", "--out", os.path.join(workdir, "key"))
    key = os.path.join(workdir, "key")
    pub = key + ".pub"

    servers = snapshot_servers(rng, ports, args.servers)
    sub_a = pick(rng, servers, 0.3)
    sub_b = pick(rng, servers, 0.05)
    ring = cli.build(os.path.join(workdir, "nginx.chash"), servers, version=5,
                     subsets={"a": sub_a, "b": sub_b, "one": [servers[3]]}, sign=key)
    ipp = harness.ip_port_servers(rng, ports, max(20, args.servers // 3))
    ipp_sub = pick(rng, ipp, 0.3)
    p1 = cli.build(os.path.join(workdir, "p1.chash"), ipp, version=1, mode="pingora-v1",
                   subsets={"a": ipp_sub})
    p2 = cli.build(os.path.join(workdir, "p2.chash"), ipp, version=1, mode="pingora-v2",
                   multiple=16, subsets={"a": ipp_sub})

    def snap(name, path, params="", balancer="chash $arg_k", location_extra=""):
        return Upstream(name, balancer, [], extra="chash_snapshot %s %s;" % (path, params),
                        location_extra=location_extra)

    plain = harness.with_params(servers, "max_fails=0")
    fails_params = "max_fails=2 fail_timeout=600s"
    upstreams = [
        Upstream("whole_hash", "hash $arg_k consistent", plain),
        snap("whole_chash", ring, "trusted_key=%s max_fails=0" % pub),
        Upstream("fails_hash", "hash $arg_k consistent",
                 harness.with_params(servers, fails_params)),
        snap("fails_chash", ring, fails_params),
        Upstream("suba_hash", "hash $arg_k consistent", harness.with_params(sub_a, "max_fails=0")),
        snap("suba_chash", ring, "max_fails=0", "chash $arg_k subset=a"),
        Upstream("subb_hash", "hash $arg_k consistent", harness.with_params(sub_b, "max_fails=0")),
        snap("subb_chash", ring, "max_fails=0", "chash $arg_k subset=$arg_s",
             "error_log %s/subset-error.log error; " % workdir),
        snap("p1_chash", p1, "max_fails=0", "chash $arg_k flavor=pingora-v1"),
        snap("p1sub_chash", p1, "max_fails=0", "chash $arg_k subset=a"),
        snap("copy_chash", p1, "copy max_fails=0"),
    ]
    for name, sub in (("mig", ""), ("migsub", " subset=a")):
        upstreams.append(Upstream(name + "_chash", "chash $arg_k" + sub, [], extra=(
            "chash_snapshot %s max_fails=0;\n        chash_migrate %s rollout=$arg_r "
            "scope=$arg_sc seed=7;" % (p1, p2))))
    pairs = [("whole_hash", "whole_chash"), ("fails_hash", "fails_chash"),
             ("suba_hash", "suba_chash")]

    all_servers = servers + ipp
    n = harness.check_refused(all_servers, {})
    print("routing: %d upstreams, %d servers (%d checked closed), %d keys" %
          (len(upstreams), len(all_servers), n, len(keys)), flush=True)

    ngx = Nginx(module=args.module, keep=args.keep, log_vars=LOG_VARS)
    try:
        ngx.write_conf(upstreams, tries=TRIES, http_extra=STATUS_LOCATION)
        ngx.start()
        notices = re.findall(r"chash_(?:snapshot|migrate) \S+ in upstream \S+: flavor=.*",
                             ngx.stderr_log())
        nfiles = sum(u.extra.count("chash_snapshot") + u.extra.count("chash_migrate")
                     for u in upstreams)
        check(len(notices) == nfiles, "one notice a snapshot load at start: %d of %d" %
              (len(notices), nfiles))
        print("error log: " + (notices[0].split(" in /")[0] if notices else "(none)"))
        names = ["whole_hash", "whole_chash", "fails_hash", "fails_chash", "suba_hash",
                 "suba_chash", "p1_chash", "p1sub_chash", "copy_chash"]
        results, last_id = harness.run_keys(ngx, names, keys)
        tn.compare_pairs(results, pairs, keys, "snapshot")
        fields = ngx.access_fields()

        fp = cli.fingerprint(ring)[:16]
        rings = {results[("whole_chash", ki)][2] for ki in range(len(keys))}
        check(rings == {fp}, "$chash_ring of whole_chash %s, the file's %s" % (rings, fp))
        # ids of whole_chash requests: the log's extra fields
        versions = {f[10] for f in fields.values() if len(f) > 12 and f[9] == fp}
        check(versions == {"5"}, "$chash_ring_version %s, want 5" % versions)

        # a subset never leaves its servers, the round robin fallback included
        inside = {tn.peer_name(s.text if ":" in s.text else s.text + ":80") for s in sub_a}
        leaks = [results[("suba_chash", ki)][0] for ki in range(len(keys))
                 if not set(results[("suba_chash", ki)][0]) <= inside]
        check(not leaks, "subset a: %d requests tried a server outside it: %s" %
              (len(leaks), leaks[:1]))
        longest = max(len(results[("suba_chash", ki)][0]) for ki in range(len(keys)))
        check(longest == min(TRIES, len(sub_a)), "subset a: longest try chain %d of %d" %
              (longest, min(TRIES, len(sub_a))))
        print("subset a (%d servers): every try inside it, longest chain %d" %
              (len(sub_a), longest))

        # pingora snapshots: the model's distinct walk, and chash route --ring
        model = tn.pingora_ring(ipp, "pingora-v1", 160)
        for name in ("p1_chash", "copy_chash"):
            same = sum(1 for ki, k in enumerate(keys)
                       if results[(name, ki)][0] == tn.pingora_expected(model, ipp, k, TRIES))
            check(same == len(keys), "%s: %d of %d keys walk as the pingora model" %
                  (name, same, len(keys)))
        routes = cli.route(keys, "--ring", p1)
        same = sum(1 for ki in range(len(keys))
                   if results[("p1_chash", ki)][0][:1] == [tn.peer_name(routes[ki][1])])
        check(same == len(keys), "p1_chash: first peer = chash route --ring on %d of %d" %
              (same, len(keys)))
        routes = cli.route(keys, "--ring", p1, "--subset", "a")
        same = sum(1 for ki in range(len(keys))
                   if results[("p1sub_chash", ki)][0][:1] == [tn.peer_name(routes[ki][1])])
        check(same == len(keys), "p1sub_chash: first peer = chash route --ring --subset a "
              "on %d of %d" % (same, len(keys)))
        print("pingora-v1 snapshot (mapped and copy): the model's walk; first peers = "
              "`chash route --ring` (whole and subset a)", flush=True)

        # subset from a variable: b against stock over b's servers; unknown
        # and empty names
        ngx.truncate_access_log()
        ids = {}
        for ki, k in enumerate(keys[:200]):
            for u, s in (("subb_hash", ""), ("subb_chash", "b")):
                last_id += 1
                ids[(u, ki)] = str(last_id)
                ngx.get("/u/%s?i=%d&k=%s&s=%s" % (u, last_id, k, s))
        last_id += 1
        unknown_id = str(last_id)
        ngx.get("/u/subb_chash?i=%d&k=x&s=nosuch" % last_id)
        last_id += 1
        empty_id = str(last_id)
        ngx.get("/u/subb_chash?i=%d&k=x&s=" % last_id)
        time.sleep(0.3)
        log = ngx.access_fields()
        same = sum(1 for ki in range(200)
                   if log[ids[("subb_hash", ki)]][1] == log[ids[("subb_chash", ki)]][1])
        check(same == 200, "subset=$arg_s (b): %d of 200 keys as stock over b" % same)
        check(log[unknown_id][2] == "502" and log[unknown_id][1] == "subb_chash"
              and log[unknown_id][12] == "nosuch",
              "unknown subset: 502 and no server tried: %s" % log[unknown_id][:3])
        with open(os.path.join(workdir, "subset-error.log")) as f:
            check('no subset "nosuch"' in f.read(), "unknown subset named in the error log")
        check(len(log[empty_id][1].split(",")) == min(TRIES, len(servers)) and
              log[empty_id][12] == "", "empty subset value: the whole ring: %s" %
              log[empty_id][1][:80])
        print("subset=$arg_s: b = stock over b's %d servers on 200 keys; unknown name: 502, "
              "logged; empty: whole ring" % len(sub_b), flush=True)

        # migrations: every first pick and side as chash route predicts
        ngx.truncate_access_log()
        ids = {}
        cases = [("0", "1"), ("5%", "1"), ("0.25", "on"), ("50%", "1"), ("100%", "1"),
                 ("50%", "off"), ("50%", "0"), ("50%", "")]
        for r, sc in cases:
            for u in ("mig_chash", "migsub_chash"):
                for ki, k in enumerate(keys[:150]):
                    last_id += 1
                    ids[(r, sc, u, ki)] = str(last_id)
                    ngx.get("/u/%s?i=%d&k=%s&r=%s&sc=%s" % (u, last_id, k, r, sc))
        time.sleep(0.3)
        log = ngx.access_fields()
        news = {}
        for r, sc in cases:
            scope = ["--scope", "in"] if sc not in ("", "0", "off") else ["--scope", "out"]
            for u, extra in (("mig_chash", []), ("migsub_chash", ["--subset", "a"])):
                routes = cli.route(keys[:150], "--ring", p1, "--new-ring", p2, "--rollout", r,
                                   "--seed", "7", *scope, *extra)
                same = 0
                for ki in range(150):
                    f = log[ids[(r, sc, u, ki)]]
                    want_addr = tn.peer_name(routes[ki][1])
                    if f[1].split(", ")[0] == want_addr and f[11] == routes[ki][2]:
                        same += 1
                news[(r, sc, u)] = {ki for ki in range(150) if routes[ki][2] == "new"}
                check(same == 150, "%s rollout=%s scope=%r: %d of 150 first picks and sides "
                      "as chash route" % (u, r, sc, same))
        check(news[("5%", "1", "mig_chash")] <= news[("0.25", "on", "mig_chash")]
              <= news[("50%", "1", "mig_chash")], "raising the rollout only adds new keys")
        print("chash_migrate: %d rollout/scope cases x 150 keys, whole ring and subset a: "
              "first pick and old|new = chash route --ring --new-ring" % len(cases),
              flush=True)

        # the status: counters from shared memory
        code, ctype, body = status(ngx.port)
        check(code == 200 and ctype == "application/json", "status: %s %s" % (code, ctype))
        doc = json.loads(body)["upstreams"]
        w = doc["whole_chash"]
        check(w["fingerprint"] == fp and w["config_version"] == 5 and w["nodes"] == len(servers)
              and w["requests"] == {"old": len(keys), "new": 0} and w["key_id"] and
              w["file"] == ring and [x["config_version"] for x in w["workers"]] == [5],
              "status of whole_chash: %s" % {k: w[k] for k in w if k != "subsets"})
        b = doc["subb_chash"]
        check(b["subsets"].get("b") == 200 and b["unknown_subset"] == 1 and
              b["requests"]["old"] == 202, "status of subb_chash: subsets %s, unknown %s, "
              "requests %s" % (b["subsets"], b["unknown_subset"], b["requests"]))
        m = doc["mig_chash"]
        want_new = sum(len(news[(r, sc, "mig_chash")]) for r, sc in cases
                       if sc not in ("", "0", "off"))
        check(m["requests"] == {"old": 150 * len(cases) - want_new, "new": want_new} and
              m["migration"]["file"] == p2 and m["migration"]["rollout"] == "$arg_r" and
              m["migration"]["allow_mismatch"] is False, "status of mig_chash: %s %s" %
              (m["requests"], m["migration"]))
        code, ctype, body = status(ngx.port, "?format=prometheus")
        check(code == 200 and ctype == "text/plain; version=0.0.4", "prometheus: %s %s" %
              (code, ctype))
        samples = prometheus_samples(body)
        check(samples.get(("chash_requests_total", frozenset({("upstream", "mig_chash"),
                                                               ("ring", "new")}))) == want_new,
              "prometheus chash_requests_total of mig_chash, new")
        check(samples.get(("chash_subset_requests_total",
                           frozenset({("upstream", "subb_chash"), ("subset", "b")}))) == 200,
              "prometheus chash_subset_requests_total")
        code, _, body = status(ngx.port, method="HEAD")
        check(code == 200 and body == "", "HEAD status: %s %r" % (code, body[:40]))
        code, _, _ = status(ngx.port, method="POST")
        check(code == 405, "POST status: %s" % code)
        print("chash_status: JSON and Prometheus (%d samples) agree with the requests sent; "
              "HEAD answered, POST refused" % len(samples), flush=True)
    finally:
        ngx.finish()
    return ring, key, pub, servers


def config_errors(args, cli, rng, ports, workdir, ring, key, pub, servers):
    other = os.path.join(workdir, "other")
    cli.run("keygen", "--out", other)
    unsigned = cli.build(os.path.join(workdir, "unsigned.chash"), servers[:5], version=5)
    truncated = os.path.join(workdir, "truncated.chash")
    with open(ring, "rb") as f, open(truncated, "wb") as g:
        g.write(f.read()[:1000])
    named = cli.build(os.path.join(workdir, "named.chash"), [Server("localhost:%d" %
                                                                    ports.take(), 1)])
    p1 = os.path.join(workdir, "p1.chash")
    odd = cli.build(os.path.join(workdir, "odd.chash"), servers[:7], version=6)
    cases = [
        ("server lines", "chash $arg_k; chash_snapshot %s; server 127.0.0.1:1;" % ring,
         "remove its `server` lines"),
        ("flavor", "chash $arg_k flavor=pingora-v1; chash_snapshot %s;" % ring,
         "check flavor failed"),
        ("unsigned", "chash $arg_k; chash_snapshot %s trusted_key=%s;" % (unsigned, pub),
         "check signature failed"),
        ("other key", "chash $arg_k; chash_snapshot %s trusted_key=%s.pub;" % (ring, other),
         "check signature failed"),
        ("min_version", "chash $arg_k; chash_snapshot %s min_version=6;" % ring,
         "check min_version failed"),
        ("truncated", "chash $arg_k; chash_snapshot %s;" % truncated, "check size failed"),
        ("missing", "chash $arg_k; chash_snapshot %s/none.chash;" % workdir, "check io failed"),
        ("name", "chash $arg_k; chash_snapshot %s;" % named, "check address failed"),
        ("zone", "chash $arg_k; zone z 1m; chash_snapshot %s;" % ring, "`zone` is not supported"),
        ("id", "chash $arg_k flavor=resty id=apisix; chash_snapshot %s;" % ring,
         '"id=" is for server lines'),
        ("mismatch", "chash $arg_k; chash_snapshot %s; chash_migrate %s rollout=5%%;" %
         (ring, odd), "check backend_mismatch failed"),
        ("no rollout", "chash $arg_k; chash_snapshot %s; chash_migrate %s;" % (ring, ring),
         "needs rollout="),
        ("bad rollout", "chash $arg_k; chash_snapshot %s; chash_migrate %s rollout=120%%;" %
         (ring, ring), 'invalid parameter "rollout=120%"'),
        ("subset without snapshot", "chash $arg_k subset=a; server 127.0.0.1:1;",
         "needs chash_snapshot"),
        ("multiple", "chash $arg_k flavor=pingora-v2 multiple=16; chash_snapshot %s;" % p1,
         '"multiple=" comes from the snapshot'),
        ("threads=0", "chash $arg_k; chash_snapshot %s threads=0;" % ring,
         'invalid parameter "threads=0"'),
        ("max_size=x", "chash $arg_k; chash_snapshot %s max_size=x;" % ring,
         'invalid parameter "max_size=x"'),
        ("max_size below the file", "chash $arg_k; chash_snapshot %s max_size=4k;" % ring,
         "check max_size failed"),
    ]
    for label, body, message in cases:
        rc, out = config_error(args.module, "        " + body.replace("; ", ";\n        "))
        check(rc != 0 and message in out, "nginx -t: %s: %r" % (label, out[-400:]))
        line = next((x for x in out.splitlines() if "emerg" in x), out)
        print("nginx -t: %s: refused: %s" % (label, line.split("] ", 1)[-1][:150]))
    rc, out = config_error(args.module, "        chash $arg_k; chash_snapshot %s; "
                           "chash_migrate %s rollout=5%% allow_mismatch;" % (ring, odd))
    check(rc == 0, "nginx -t: allow_mismatch accepts other backends: %s" % out[-300:])
    # the load modes and the state's parameters are accepted; the state
    # directory's name is said when there is none
    for body, note in (("chash_snapshot %s copy threads=1 max_size=2g;" % ring, "copied"),
                       ("chash_snapshot %s map state=off;" % ring, "mapped, no state")):
        rc, out = config_error(args.module, "        chash $arg_k; " + body)
        check(rc == 0 and note in out, "nginx -t: %s: %s" % (body, out[-300:]))
    rc, out = config_error(args.module, "        chash $arg_k; chash_snapshot %s;" % ring,
                           http_extra_main="    chash_state_path off;")
    check(rc != 0 and '"chash_state_path" directive is duplicate' in out,
          "nginx -t: a second chash_state_path: %s" % out[-300:])
    print("nginx -t: copy, map, threads=, max_size=, state=off accepted; a second "
          "chash_state_path refused")


# ---------------------------------------------------------------- part 2: hot swap

class Backend:
    """An HTTP server on loopback that answers 200 with its port (after
    ?d=SECONDS). A thread a connection; stopped by shutdown()."""

    def __init__(self, port):
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                m = re.search(r"[?&]d=([0-9.]+)", self.path)
                if m:
                    time.sleep(min(float(m.group(1)), 10))
                body = str(port).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        # nginx closing a connection (a worker killed, a reload) is no error here
        self.server.handle_error = lambda request, address: None
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def shutdown(self):
        self.server.shutdown()
        self.server.server_close()


class Traffic(harness.Traffic):
    """Threads sending requests to /u/live until stopped (bounded by a
    deadline); each result is (time, status, version) or (time, 0, error)."""

    def __init__(self, port, threads=2, seconds=120):
        self.port = port
        super().__init__(threads, seconds)

    def run(self, n):
        i = 0
        conn = None

        def ask(conn):
            conn.request("GET", "/u/live?k=t%d-%d" % (n, i))
            resp = conn.getresponse()
            resp.read()
            return (time.monotonic(), resp.status, resp.getheader("X-Ring-Version"))

        while self.running():
            i += 1
            try:
                if conn is None or i % 20 == 0:  # new connections: every worker
                    if conn:
                        conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                r = ask(conn)
            except (OSError, http.client.HTTPException) as e:
                # a kept-alive connection closed by a worker that exits (reload,
                # SIGKILL): a client resends an idempotent GET once
                conn = None
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
                    r = ask(conn)
                except (OSError, http.client.HTTPException) as e2:
                    r = (time.monotonic(), 0, repr(e) + " then " + repr(e2))
                    conn = None
            self.add(r)
            time.sleep(0.002)

    def stop(self):
        super().stop(timeout=15)


def version_seen(port, path="/u/live?k=probe", conns=12):
    """The versions answered on `conns` new connections (spread over the
    workers by the kernel)."""
    seen = []
    for i in range(conns):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            c.request("GET", path + str(i))
            r = c.getresponse()
            r.read()
            seen.append(r.getheader("X-Ring-Version"))
        except (OSError, http.client.HTTPException):
            seen.append(None)
        finally:
            c.close()
    return seen


def worker_versions(ngx):
    """The version each live worker serves, from the error log's notices."""
    served = {}
    for m in re.finditer(r"\[notice\] (\d+)#\d+: chash_snapshot \S+ in upstream \"live\": "
                         r"serving config version (\d+)", ngx.error_log()):
        served[int(m.group(1))] = int(m.group(2))
    return served


def wait_version(ngx, version, timeout=20):
    """Seconds until every answer on new connections carries `version`."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if all(v == str(version) for v in version_seen(ngx.port)):
            return time.monotonic() - start
        time.sleep(0.02)
    return None


def hot_swap(args, cli, rng, ports, workdir):
    key = os.path.join(workdir, "key")
    pub = key + ".pub"
    other = os.path.join(workdir, "other")
    bports = []
    while len(bports) < 4:
        p = ports.take()
        if harness.refuses("127.0.0.1", p):
            bports.append(p)
    backends = [Backend(p) for p in bports]
    fleet = [Server("127.0.0.1:%d" % p, w) for p, w in zip(bports, (1, 2, 3, 4))]

    live_dir = os.path.join(workdir, "live")
    os.makedirs(live_dir)
    path = os.path.join(live_dir, "live.chash")
    cli.build(path, fleet, version=10, sign=key)
    # ConfigMap style: cm/live.chash -> ..data/live.chash, ..data -> ..v1
    cm = os.path.join(workdir, "cm")
    os.makedirs(os.path.join(cm, "..v1"))
    cli.build(os.path.join(cm, "..v1", "live.chash"), fleet, version=1, sign=key)
    os.symlink("..v1", os.path.join(cm, "..data"))
    os.symlink("..data/live.chash", os.path.join(cm, "live.chash"))

    hdr = "add_header X-Ring-Version $chash_ring_version always; "
    mig_old = cli.build(os.path.join(live_dir, "mig-old.chash"), fleet, version=1,
                        mode="pingora-v1")
    mig_new = cli.build(os.path.join(live_dir, "mig-new.chash"), fleet, version=1,
                        mode="pingora-v2", multiple=16)
    ups = [Upstream("mig", "chash $arg_k", [], extra=(
        "chash_snapshot %s poll=100ms;\n        chash_migrate %s rollout=$arg_r seed=3 "
        "poll=100ms;" % (mig_old, mig_new)), location_extra=hdr),
           Upstream("live", "chash $arg_k", [], extra="chash_snapshot %s trusted_key=%s "
                    "poll=100ms;" % (path, pub), location_extra=hdr),
           Upstream("cm", "chash $arg_k", [], extra="chash_snapshot %s/live.chash "
                    "trusted_key=%s poll=100ms copy;" % (cm, pub), location_extra=hdr)]
    ngx = Nginx(module=args.module, workers=2, keep=args.keep, log_vars=LOG_VARS)
    traffic = None
    try:
        ngx.write_conf(ups, tries=3, http_extra=STATUS_LOCATION)
        ngx.start()
        check(wait_version(ngx, 10) is not None, "serving version 10 at start")

        # swaps under traffic; a slow request in flight keeps its ring
        traffic = Traffic(ngx.port)
        times = []
        for version in (11, 12, 13):
            slow = {}

            def slow_request():
                c = http.client.HTTPConnection("127.0.0.1", ngx.port, timeout=30)
                c.request("GET", "/u/live?k=slow&d=1.0")
                r = c.getresponse()
                r.read()
                slow["r"] = (r.status, r.getheader("X-Ring-Version"))

            t = threading.Thread(target=slow_request)
            t.start()
            time.sleep(0.3)
            members = fleet[:] if version % 2 else fleet[1:]
            members = [Server(s.text, rng.randint(1, 5)) for s in members]
            cli.build(path, members, version=version, sign=key)   # an atomic rename
            took = wait_version(ngx, version)
            check(took is not None, "every worker serves version %d" % version)
            times.append(took or 99)
            t.join(timeout=30)
            check(slow.get("r") == (200, str(version - 1)),
                  "a request in flight at the swap finishes on its ring: %r" % (slow.get("r"),))
        print("hot swap: 3 renames under traffic; every worker served the new ring after "
              "%s s (new connections probed); in-flight requests kept their rings" %
              ", ".join("%.2f" % t for t in times), flush=True)

        # bad files: each refused, logged once per file identity, serving goes on
        served = 13
        bad = os.path.join(workdir, "bad.chash")
        if not os.path.exists(other + ".pub"):
            cli.run("keygen", "--out", other)
        cli.build(bad, fleet, version=14, sign=key)
        with open(bad, "rb") as f:
            data = f.read()
        cases = [("unsigned", "signature"), ("untrusted key", "signature"),
                 ("lower version", "rollback"), ("same version, other ring", "same_version"),
                 ("truncated", "size"), ("damaged", None), ("a name", "address")]
        for label, check_name in cases:
            if label == "truncated":
                with open(bad, "wb") as f:
                    f.write(data[:len(data) // 2])
            elif label == "damaged":
                d = bytearray(data)
                d[len(d) // 2] ^= 0xff
                with open(bad, "wb") as f:
                    f.write(bytes(d))
            elif label == "unsigned":
                cli.build(bad, fleet, version=14)
            elif label == "untrusted key":
                cli.build(bad, fleet, version=14, sign=other)
            elif label == "lower version":
                cli.build(bad, fleet, version=12, sign=key)
            elif label == "same version, other ring":
                cli.build(bad, fleet[:2], version=13, sign=key)
            elif label == "a name":
                cli.build(bad, [Server("localhost:%d" % bports[0], 1)], version=14, sign=key)
            before = ngx.error_log().count(": refused, check ")
            os.rename(bad, path)
            time.sleep(0.6)   # 6 polls
            log = ngx.error_log()
            lines = [x for x in log.splitlines() if ": refused, check " in x][-2:]
            new = log.count(": refused, check ") - before
            ok = new == 2 and (check_name is None or
                               all("check %s:" % check_name in x for x in lines))
            check(ok, "bad file %s: %d refusal lines (one a worker): %s" %
                  (label, new, lines[-1:]))
            seen = version_seen(ngx.port)
            check(all(v == str(served) for v in seen), "after the %s file, still %d: %s" %
                  (label, served, seen))
            print("bad file, %s: refused by both workers, once%s; still serving %d" %
                  (label, (" (check %s)" % check_name) if check_name else
                   " (" + lines[-1].split("check ")[1].split(":")[0] + ")" if lines else "",
                   served), flush=True)
        time.sleep(0.5)
        check(ngx.error_log().count(": refused, check ") == 2 * len(cases),
              "no refusal repeated for a file already refused")
        live = json.loads(status(ngx.port)[2])["upstreams"]["live"]
        check(live["loads"] == {"ok": 6, "refused": 2 * len(cases)} and
              live["last_refusal"]["check"] == "address" and
              sorted(x["config_version"] for x in live["workers"]) == [13, 13],
              "status after the swaps and bad files: loads %s, last refusal %s, workers %s" %
              (live["loads"], live["last_refusal"], live["workers"]))
        print("status: loads %s, workers %s, last refusal %r" %
              (live["loads"], live["workers"], live["last_refusal"]["check"]))

        # a ConfigMap ..data swap (the `cm` upstream, copy mode)
        check(all(v == "1" for v in version_seen(ngx.port, "/u/cm?k=")), "cm serves 1")
        os.makedirs(os.path.join(cm, "..v2"))
        cli.build(os.path.join(cm, "..v2", "live.chash"), fleet[:3], version=2, sign=key)
        os.symlink("..v2", os.path.join(cm, "..data_tmp"))
        os.rename(os.path.join(cm, "..data_tmp"), os.path.join(cm, "..data"))
        shutil.rmtree(os.path.join(cm, "..v1"))
        start = time.monotonic()
        while time.monotonic() - start < 10:
            if all(v == "2" for v in version_seen(ngx.port, "/u/cm?k=")):
                break
            time.sleep(0.05)
        check(all(v == "2" for v in version_seen(ngx.port, "/u/cm?k=")),
              "a ..data symlink swap is served")
        print("ConfigMap ..data swap (copy mode): served after %.2f s" %
              (time.monotonic() - start), flush=True)

        # a migration across swaps of either file: first picks and sides as
        # chash route predicts, before and after each swap; a new file of
        # other backends is refused
        mkeys = ["m%d" % i for i in range(120)]
        mid = [100000]

        def migration_matches(label):
            ids = []
            for k in mkeys:
                mid[0] += 1
                ids.append(str(mid[0]))
                ngx.get("/u/mig?i=%d&k=%s&r=50%%" % (mid[0], k))
            time.sleep(0.3)
            log = ngx.access_fields()
            routes = cli.route(mkeys, "--ring", mig_old, "--new-ring", mig_new, "--rollout",
                               "50%", "--seed", "3")
            same = sum(1 for i, k in enumerate(mkeys)
                       if log[ids[i]][1] == routes[i][1] and log[ids[i]][11] == routes[i][2])
            check(same == len(mkeys), "migration %s: %d of %d first picks and sides as chash "
                  "route" % (label, same, len(mkeys)))
            return same

        def migration_versions():
            return sorted((w["config_version"], w["migration_config_version"])
                          for w in json.loads(status(ngx.port)[2])["upstreams"]["mig"]
                          ["workers"])

        def wait_migration(want):
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and migration_versions() != [want, want]:
                time.sleep(0.05)
            check(migration_versions() == [want, want], "migration versions %s, want %s" %
                  (migration_versions(), want))

        migration_matches("at start")
        cli.build(mig_new, fleet, version=2, mode="pingora-v2", multiple=4)
        wait_migration((1, 2))
        migration_matches("after a swap of the new file")
        cli.build(mig_old, fleet, version=2, mode="pingora-v2", multiple=32)
        wait_migration((2, 2))
        migration_matches("after a swap of the old file")
        before = ngx.error_log().count("check backend_mismatch")
        cli.build(mig_new, fleet[:3], version=3, mode="pingora-v2", multiple=4)
        time.sleep(0.6)
        check(ngx.error_log().count("check backend_mismatch") - before == 2,
              "a new file of other backends refused by both workers")
        check(migration_versions() == [(2, 2), (2, 2)], "still serving (2, 2)")
        cli.build(mig_new, fleet, version=4, mode="pingora-v2", multiple=4)  # back in line
        wait_migration((2, 4))
        migration_matches("after the refusal")
        print("chash_migrate across swaps of either file (pingora-v1 -> v2, 120 keys at "
              "50%): first picks and sides = chash route each time; other backends "
              "refused (backend_mismatch)", flush=True)

        # a worker killed with SIGKILL right after a rename: its replacement
        # serves the new file before its first request
        pids = sorted(worker_versions(ngx))
        cli.build(path, fleet, version=20, sign=key)
        kill_at = time.monotonic()
        if pids:
            os.kill(pids[0], signal.SIGKILL)
        check(wait_version(ngx, 20) is not None, "after SIGKILL every worker serves 20")

        # the same ring as config time's at a new version: the replacement
        # must serve the file's generation (and log it), not keep the one it
        # inherited from the master because the rings match
        def respawned_serves_20():
            return any(pid not in pids and v == 20 for pid, v in worker_versions(ngx).items())
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not respawned_serves_20():
            time.sleep(0.05)
        check(respawned_serves_20(), "the respawned worker serves version 20 from its start")
        kill_end = time.monotonic()

        # nginx -s reload while polls and loads run: new workers serve the file
        cli.build(path, fleet[1:], version=21, sign=key)
        ngx.write_conf(ups, tries=3, http_extra=STATUS_LOCATION)
        ngx.reload()
        check(wait_version(ngx, 21) is not None, "after a reload every worker serves 21")
        traffic.stop()
        res = traffic.results
        failed = [r for r in res if r[1] != 200 and not (kill_at - 0.5 <= r[0] <= kill_end)]
        check(res and not failed, "traffic: %d requests, %d failed outside the SIGKILL "
              "window: %s" % (len(res), len(failed), failed[:3]))
        versions = {r[2] for r in res if r[1] == 200}
        check(versions <= {"10", "11", "12", "13", "20", "21"},
              "every answer carries a version that was served: %s" % versions)
        print("traffic: %d requests during the swaps, bad files, SIGKILL and reload; %d "
              "failed outside the SIGKILL window; versions seen %s" %
              (len(res), len(failed), sorted(versions, key=int)), flush=True)

        # nginx -s quit while polls run: prompt exit
        start = time.monotonic()
        ngx.stop(timeout=20)
        took = time.monotonic() - start
        check(took < 5, "nginx -s quit took %.1f s" % took)
        print("quit with polls running: %.2f s" % took)
    finally:
        if traffic:
            traffic.stop()
        ngx.finish(*[b.shutdown for b in backends])


def main():
    ap = harness.arg_parser("ngx_http_upstream_chash_module.so", keys=600, servers=120,
                            seed=20261201)
    ap.add_argument("--chash-cli", required=True)
    args = ap.parse_args()
    args.module = os.path.abspath(args.module)
    args.chash_cli = os.path.abspath(args.chash_cli)
    started = time.monotonic()
    rng = random.Random(args.seed)
    ports = harness.PortPool(rng)
    keys = harness.random_keys(rng, args.keys)
    with harness.work_dir("chash-snapshots-", args.keep) as workdir:
        cli = Cli(args.chash_cli, workdir)
        ring, key, pub, servers = routing(args, cli, rng, ports, keys, workdir)
        config_errors(args, cli, rng, ports, workdir, ring, key, pub, servers)
        hot_swap(args, cli, rng, ports, workdir)
    return harness.summary(started)


if __name__ == "__main__":
    sys.exit(main())
