#!/usr/bin/env python3
"""chash_snapshot, subset=, chash_migrate, the $chash_* variables and hot swap
in stream (TCP) upstreams of the real nginx (Debian's 1.22.1 and
libnginx-mod-stream), against stock stream `hash $remote_addr consistent;`
over the same servers and against `chash route --ring [--new-ring]`.

    tests/nginx/test_stream_snapshot.py --module STREAM.so --chash-cli PATH

Sessions run one at a time (stream_harness.py): the access log's line i is
session i, and `$upstream_addr` lists every peer a session tried. Upstream
addresses refuse connections (checked) in the routing part, so every session
tries 30 peers; the hot-swap part runs backends that answer their port.
Exit status 0 only when every check ran and passed.
"""

import json
import os
import random
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import Server, check  # noqa: E402
import stream_harness as sh  # noqa: E402
from stream_harness import StreamNginx, StreamUpstream  # noqa: E402
import test_nginx as tn  # noqa: E402  (peer_name)
import test_snapshot as tsnap  # noqa: E402  (the chash command: build, route)
import test_stream as ts  # noqa: E402  (run_tcp, compare_pair, PortEchoBackends)

TRIES = 30


class PolicySession(sh.Session):
    """A log line with $chash_ring_version, $chash_ring_choice, $chash_subset
    after $chash_ring ("-" or "" when empty)."""

    def __init__(self, fields):
        super().__init__(fields)
        extra = [("" if f == "-" else f) for f in fields[7:10]]
        self.version, self.choice, self.subset = (extra + ["", "", ""])[:3]


sh.Session = PolicySession  # stream_harness builds its log lines with it


def write_conf(ngx, upstreams, **kw):
    text = ngx.stream_conf_text(upstreams, **kw).replace(
        '\\t$chash_ring"',
        '\\t$chash_ring\\t$chash_ring_version\\t$chash_ring_choice\\t$chash_subset"')
    check("$chash_subset" in text, "the log format carries the $chash_* variables")
    ngx.write_text(text)


def routing(args, cli, rng, ports, workdir):
    """A snapshot upstream = stock over the same server lines (every try,
    failure state); subset=a = stock over a's servers; a migration = chash
    route --ring --new-ring --rollout at several rollouts and scopes."""
    cli.run("keygen", "--out", os.path.join(workdir, "key"))
    pub = os.path.join(workdir, "key.pub")
    servers = harness.ip_port_servers(rng, ports, args.servers)
    sub_a = tsnap.pick(rng, servers, 0.3)
    ring = cli.build(os.path.join(workdir, "nginx.chash"), servers, version=5,
                     subsets={"a": sub_a}, sign=os.path.join(workdir, "key"))
    ipp = harness.ip_port_servers(rng, ports, max(20, args.servers // 3))
    ipp_sub = tsnap.pick(rng, ipp, 0.3)
    p1 = cli.build(os.path.join(workdir, "p1.chash"), ipp, version=1, mode="pingora-v1",
                   subsets={"a": ipp_sub})
    p2 = cli.build(os.path.join(workdir, "p2.chash"), ipp, version=1, mode="pingora-v2",
                   multiple=16, subsets={"a": ipp_sub})

    port_of = {}

    def up(name, balancer, servers_, extra=""):
        port_of[name] = [sh.listen_port()]
        return StreamUpstream(name, balancer, servers_, port_of[name], extra=extra)

    fails = "max_fails=2 fail_timeout=600s"
    upstreams = [
        up("whole_hash", "hash $remote_addr consistent",
           harness.with_params(servers, "max_fails=0")),
        up("whole_chash", "chash $remote_addr", [],
           "chash_snapshot %s trusted_key=%s max_fails=0;" % (ring, pub)),
        up("fails_hash", "hash $remote_addr consistent", harness.with_params(servers, fails)),
        up("fails_chash", "chash $remote_addr", [], "chash_snapshot %s %s;" % (ring, fails)),
        up("suba_hash", "hash $remote_addr consistent",
           harness.with_params(sub_a, "max_fails=0")),
        up("suba_chash", "chash $remote_addr subset=a", [],
           "chash_snapshot %s max_fails=0;" % ring),
    ]
    # migrations: one listen port a (rollout, scope) case, through maps
    cases = [("0", "1"), ("5%", "1"), ("0.25", "on"), ("50%", "1"), ("100%", "1"),
             ("50%", "off"), ("50%", "")]
    mig_ports = [sh.listen_port() for _ in cases]
    for name, sub in (("mig_chash", ""), ("migsub_chash", " subset=a")):
        lports = [sh.listen_port() for _ in cases]
        port_of[name] = lports
        mig_ports += lports
        upstreams.append(StreamUpstream(
            name, "chash $remote_addr" + sub, [], lports,
            extra="chash_snapshot %s max_fails=0; chash_migrate %s rollout=$mr scope=$ms "
                  "seed=7;" % (p1, p2)))
    mr = ["    map $server_port $mr {", '        default "0";']
    ms = ["    map $server_port $ms {", '        default "";']
    for name in ("mig_chash", "migsub_chash"):
        for (r, sc), p in zip(cases, port_of[name]):
            mr.append('        %d "%s";' % (p, r))
            ms.append('        %d "%s";' % (p, sc))
    maps = "\n".join(mr + ["    }"] + ms + ["    }"])

    n = harness.check_refused(servers + ipp, {})
    clients = harness.client_addresses(rng, args.keys)
    print("routing: %d stream upstreams, %d servers (%d addresses checked closed), %d clients"
          % (len(upstreams), len(servers) + len(ipp), n, len(clients)), flush=True)
    ngx = StreamNginx(stream_module=args.module, keep=args.keep)
    try:
        write_conf(ngx, upstreams, tries=TRIES, stream_extra=maps)
        ngx.start()
        plan = []
        names = ["whole_hash", "whole_chash", "fails_hash", "fails_chash", "suba_hash",
                 "suba_chash"]
        for ki, src in enumerate(clients):
            for name in names:
                plan.append(((name, ki), src, port_of[name][0]))
        t0 = time.monotonic()
        results = ts.run_tcp(ngx, plan)
        print("%d sessions in %.1f s" % (len(plan), time.monotonic() - t0), flush=True)
        nk = len(clients)
        lengths, _ = ts.compare_pair(results, "whole_hash", "whole_chash", clients, "snapshot")
        check(max(lengths or [0]) == TRIES, "the snapshot walk reaches round robin (%d tries)"
              % max(lengths or [0]))
        ts.compare_pair(results, "fails_hash", "fails_chash", clients, "snapshot, max_fails=2")
        ts.compare_pair(results, "suba_hash", "suba_chash", clients, "subset a")
        inside = {tn.peer_name(s.text) for s in sub_a}
        outside = [a for ki in range(nk) if ("suba_chash", ki) in results
                   for a in results[("suba_chash", ki)].addrs if a not in inside]
        check(not outside, "subset a: every try inside it (%d outside)" % len(outside))
        versions = {results[(nm, ki)].version for nm in ("whole_chash", "suba_chash")
                    for ki in range(nk) if (nm, ki) in results}
        subsets = {results[("suba_chash", ki)].subset for ki in range(nk)
                   if ("suba_chash", ki) in results}
        wholes = {results[("whole_chash", ki)].subset for ki in range(nk)
                  if ("whole_chash", ki) in results}
        check(versions == {"5"}, "$chash_ring_version 5 on every session: %s" % versions)
        check(subsets == {"a"} and wholes == {""}, "$chash_subset: a, and empty for the whole "
              "ring: %s %s" % (subsets, wholes))
        print("subset a (%d servers): every try inside it; $chash_ring_version, $chash_subset "
              "logged" % len(sub_a), flush=True)

        # migrations: first pick and old|new as chash route predicts
        mclients = clients[:150]
        plan = []
        for ci, (r, sc) in enumerate(cases):
            for name in ("mig_chash", "migsub_chash"):
                for ki, src in enumerate(mclients):
                    plan.append(((name, ci, ki), src, port_of[name][ci]))
        results = ts.run_tcp(ngx, plan)
        news = {}
        for ci, (r, sc) in enumerate(cases):
            scope = ["--scope", "in"] if sc not in ("", "0", "off") else ["--scope", "out"]
            for name, extra in (("mig_chash", []), ("migsub_chash", ["--subset", "a"])):
                routes = cli.route(mclients, "--ring", p1, "--new-ring", p2, "--rollout", r,
                                   "--seed", "7", *scope, *extra)
                same = 0
                for ki in range(len(mclients)):
                    got = results.get((name, ci, ki))
                    if (got and got.addrs and got.addrs[0] == tn.peer_name(routes[ki][1])
                            and got.choice == routes[ki][2]):
                        same += 1
                news[(ci, name)] = {ki for ki in range(len(mclients))
                                    if routes[ki][2] == "new"}
                check(same == len(mclients), "%s rollout=%s scope=%r: %d of %d first picks "
                      "and sides as chash route" % (name, r, sc, same, len(mclients)))
        check(news[(1, "mig_chash")] <= news[(2, "mig_chash")] <= news[(3, "mig_chash")],
              "raising the rollout only adds new keys")
        check(not news[(0, "mig_chash")] and len(news[(4, "mig_chash")]) == len(mclients),
              "rollout 0: all old; 100%: all new")
        print("chash_migrate: %d rollout/scope cases x %d clients, whole ring and subset a: "
              "first pick and $chash_ring_choice = chash route --ring --new-ring"
              % (len(cases), len(mclients)), flush=True)
    finally:
        ngx.finish()


class Traffic:
    """Sessions one after another from random client addresses, each sending
    a byte and expecting a backend's port back; bounded in count and time."""

    def __init__(self, rng, port, backends, limit=50000, seconds=90):
        self.rng = random.Random(rng.random())
        self.port = port
        self.backends = {str(p) for p in backends}
        self.limit = limit
        self.deadline = time.monotonic() + seconds
        self.stop = threading.Event()
        self.ok = 0
        self.failed = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.is_set() and self.ok + len(self.failed) < self.limit \
                and time.monotonic() < self.deadline:
            src = harness.v4_text(self.rng, first=1)
            try:
                _, data = sh.tcp_session(src, self.port, send=b"x", timeout=10)
                if data.decode() in self.backends:
                    self.ok += 1
                else:
                    self.failed.append(data[:40])
            except OSError as e:
                self.failed.append(str(e))

    def finish(self):
        self.stop.set()
        self.thread.join(timeout=20)


def served_versions(ngx, port, n=12):
    """The versions logged for n new sessions (spread over the workers)."""
    start = len(ngx.log_lines())
    for i in range(n):
        sh.tcp_session("127.0.0.1", port, send=b"p", timeout=10)
    lines = sh.wait_lines(ngx, start + n)[start:]
    return [ln.version for ln in lines if ln.server_port == port]


def wait_version(ngx, port, version, timeout=20):
    deadline = time.monotonic() + timeout
    t0 = time.monotonic()
    while time.monotonic() < deadline:
        seen = served_versions(ngx, port)
        if seen and all(v == version for v in seen):
            return time.monotonic() - t0
        time.sleep(0.05)
    return None


def hot_swap(args, cli, rng, ports, workdir):
    """2 workers, answering backends, traffic throughout: renames of new
    versions are served by every worker, a session open across a swap keeps
    its ring, a lower version is refused while serving continues, zero
    failed sessions."""
    addrs = [("127.0.0.1", ports.take()) for _ in range(6)]
    backends = ts.PortEchoBackends(addrs)
    servers = [Server("%s:%d" % a, 1 + i % 3) for i, a in enumerate(addrs)]
    live = os.path.join(workdir, "live.chash")
    cli.build(live, servers, version=10)
    lport = sh.listen_port()
    u = StreamUpstream("live", "chash $remote_addr", [], [lport],
                       extra="chash_snapshot %s poll=100ms;" % live)
    ngx = StreamNginx(stream_module=args.module, workers=2, keep=args.keep)
    traffic = None
    try:
        write_conf(ngx, [u], tries=3)
        ngx.start()
        check(wait_version(ngx, lport, "10") is not None, "version 10 served at start")
        traffic = Traffic(rng, lport, [a[1] for a in addrs])
        served = ["10"]
        for version, members in ((11, servers[:5]), (12, servers[1:]), (13, servers)):
            # a session that holds its upstream connection across the swap
            held = socket.create_connection(("127.0.0.1", lport), timeout=10)
            held_port = held.getsockname()[1]
            time.sleep(0.2)
            cli.build(live, members, version=version)
            took = wait_version(ngx, lport, str(version))
            check(took is not None, "version %d served by every worker" % version)
            served.append(str(version))
            held.sendall(b"h")
            data = harness.read_until_closed(held, 64)
            held.close()
            check(data.decode() in {str(a[1]) for a in addrs},
                  "the session open across the swap to %d answered: %r" % (version, data))
            lines = sh.wait_lines(ngx, len(ngx.log_lines()))
            mine = [ln for ln in lines if ln.remote_port == held_port and
                    ln.server_port == lport]
            check(mine and mine[-1].version == served[-2],
                  "the session open across the swap kept version %s: %s" %
                  (served[-2], mine[-1].version if mine else None))
            print("swap to %d: every worker in %.2f s; a session open across it finished "
                  "on %s" % (version, took or -1, served[-2]), flush=True)
        # a lower version: refused, serving continues on 13
        cli.build(live, servers[:3], version=9)
        time.sleep(1.0)
        seen = served_versions(ngx, lport)
        check(seen and all(v == "13" for v in seen), "after a lower version: still 13: %s"
              % seen)
        refusals = [ln for ln in ngx.error_log().splitlines()
                    if "[error]" in ln and "live.chash" in ln
                    and "refused, check rollback" in ln and "config version 9 " in ln]
        check(len(refusals) == 2, "the lower version refused, logged once by each of the 2 "
              "workers: %d lines" % len(refusals))
        traffic.finish()
        versions = {ln.version for ln in ngx.log_lines() if ln.server_port == lport}
        check(traffic.failed == [], "zero failed sessions during the swaps (%d ok, failed "
              "%s)" % (traffic.ok, traffic.failed[:3]))
        check(versions <= set(served), "every session carries a served version: %s" %
              sorted(versions))
        print("traffic: %d sessions during 3 swaps and a refused file, 0 failed; versions %s"
              % (traffic.ok, sorted(versions)), flush=True)
    finally:
        if traffic:
            traffic.finish()
        ngx.finish(backends.close)


def status_both(args, cli, rng, ports, workdir):
    """Both modules in one nginx: the HTTP module's chash_status shows the
    stream snapshot upstreams (JSON stream_upstreams, Prometheus
    protocol="stream") beside an HTTP one, counters equal to the sessions."""
    servers = harness.ip_port_servers(rng, ports, 30)
    sub_a = tsnap.pick(rng, servers, 0.4)
    ring = cli.build(os.path.join(workdir, "status.chash"), servers, version=7,
                     subsets={"a": sub_a})
    nxt = cli.build(os.path.join(workdir, "status-next.chash"), servers, version=8)
    harness.check_refused(servers, {})
    ngx = StreamNginx(stream_module=args.module, http_module=args.http_module,
                      keep=args.keep)
    http_port = sh.listen_port()
    p = ngx.prefix
    http_block = f"""http {{
    access_log off;
{harness.temp_paths(p)}
    chash_state_path {p}/state;
    upstream h_snap {{ chash $arg_k; chash_snapshot {ring} max_fails=0; }}
    server {{
        listen 127.0.0.1:{http_port};
        error_log {p}/logs/http-error.log crit;
        location = /chash-status {{ chash_status; allow 127.0.0.1; deny all; }}
    }}
}}"""
    sub_ports = [sh.listen_port() for _ in range(3)]
    maps = ("    map $server_port $ss {\n        %d \"\";\n        %d a;\n        %d nosuch;\n"
            "    }" % tuple(sub_ports))
    ups = [StreamUpstream("s_sub", "chash $remote_addr subset=$ss", [], sub_ports,
                          extra="chash_snapshot %s max_fails=0;" % ring),
           StreamUpstream("s_mig", "chash $remote_addr", [], [sh.listen_port()],
                          extra="chash_snapshot %s max_fails=0; chash_migrate %s "
                                "rollout=100%%;" % (ring, nxt))]
    counts = {"whole": 25, "a": 15, "nosuch": 5, "mig": 10}
    try:
        write_conf(ngx, ups, tries=3, stream_extra=maps, http_block=http_block)
        ngx.start()
        plan = []
        for (tag, port) in (("whole", sub_ports[0]), ("a", sub_ports[1]),
                            ("nosuch", sub_ports[2]), ("mig", ups[1].ports[0])):
            for i in range(counts[tag]):
                plan.append(((tag, i), "127.0.%d.%d" % (len(plan) // 200 + 1,
                                                        len(plan) % 200 + 1), port))
        results = ts.run_tcp(ngx, plan)
        check(all(results[(("nosuch", i))].addrs == ["s_sub"] or
                  results[("nosuch", i)].addrs == []
                  for i in range(counts["nosuch"])),
              "an unknown subset routes nowhere: %s" % results.get(("nosuch", 0)))
        code, ctype, body = tsnap.status(http_port)
        doc = json.loads(body)
        check(code == 200 and "h_snap" in doc.get("upstreams", {}),
              "chash_status: the HTTP snapshot upstream under upstreams")
        st = doc.get("stream_upstreams", {})
        sub, mig = st.get("s_sub", {}), st.get("s_mig", {})
        check(sub.get("config_version") == 7 and sub.get("requests", {}).get("old") ==
              counts["whole"] + counts["a"] + counts["nosuch"]
              and sub.get("subsets", {}).get("a") == counts["a"]
              and sub.get("unknown_subset") == counts["nosuch"],
              "stream_upstreams.s_sub: version, requests, subsets, unknown: %s" %
              {k: sub.get(k) for k in ("config_version", "requests", "subsets",
                                       "unknown_subset")})
        check(mig.get("requests") == {"old": 0, "new": counts["mig"]}
              and mig.get("migration", {}).get("config_version") == 8
              and len(sub.get("workers", [])) == 1,
              "stream_upstreams.s_mig: the migration and its requests: %s" %
              {k: mig.get(k) for k in ("requests", "migration")})
        code, ctype, text = tsnap.status(http_port, "?format=prometheus")
        samples = tsnap.prometheus_samples(text)
        want = {("chash_requests_total", frozenset({("protocol", "stream"),
                                                    ("upstream", "s_mig"),
                                                    ("ring", "new")})): counts["mig"],
                ("chash_subset_requests_total", frozenset({("protocol", "stream"),
                                                           ("upstream", "s_sub"),
                                                           ("subset", "a")})): counts["a"],
                ("chash_unknown_subset_total", frozenset({("protocol", "stream"),
                                                          ("upstream", "s_sub")})):
                    counts["nosuch"]}
        for k, v in want.items():
            check(samples.get(k) == v, "prometheus %s %s = %s, want %d" %
                  (k[0], sorted(k[1]), samples.get(k), v))
        check(ctype.startswith("text/plain; version=0.0.4"), "prometheus content type")
        http_only = [k for k in samples if k[0] == "chash_requests_total"
                     and ("upstream", "h_snap") in k[1]]
        check(http_only and all(("protocol", "stream") not in k[1] for k in http_only),
              "the HTTP upstream's samples carry no protocol=\"stream\" label")
        print("chash_status with both modules: stream_upstreams (requests, subsets, "
              "unknown, migration) and protocol=\"stream\" samples = the %d sessions"
              % len(plan), flush=True)
    finally:
        ngx.finish()


def config_errors(args, cli, rng, ports, workdir):
    """nginx -t refuses what a stream snapshot upstream cannot serve, naming
    it: the checks are the core's, the no-port refusal stream's own."""
    key, other = os.path.join(workdir, "ck"), os.path.join(workdir, "other")
    cli.run("keygen", "--out", key)
    cli.run("keygen", "--out", other)
    servers = harness.ip_port_servers(rng, ports, 8)
    signed = cli.build(os.path.join(workdir, "ce.chash"), servers, version=4, sign=key)
    noport = cli.build(os.path.join(workdir, "noport.chash"),
                       servers[:3] + [Server("127.0.0.9", 1)], version=4)
    nxt = cli.build(os.path.join(workdir, "ce-next.chash"), servers, version=4)
    cases = [
        ("server lines", "chash $remote_addr; chash_snapshot %s; server 127.0.0.1:1;" % signed,
         "remove its `server` lines"),
        ("a node without a port", "chash $remote_addr; chash_snapshot %s;" % noport,
         "no port (a stream upstream's servers need one)"),
        ("untrusted key", "chash $remote_addr; chash_snapshot %s trusted_key=%s.pub;"
         % (signed, other), "signature"),
        ("min_version", "chash $remote_addr; chash_snapshot %s min_version=5;" % signed,
         "min_version"),
        ("flavor", "chash $remote_addr flavor=pingora-v1; chash_snapshot %s;" % signed,
         "the snapshot is flavor=nginx"),
        ("zone", "chash $remote_addr; chash_snapshot %s; zone z 1m;" % signed,
         "`zone` is not supported"),
        ("subset without a snapshot", "chash $remote_addr subset=a; server 127.0.0.1:1;",
         "needs chash_snapshot"),
        ("migrate without rollout", "chash $remote_addr; chash_snapshot %s; "
         "chash_migrate %s;" % (signed, nxt), "chash_migrate needs rollout=VALUE"),
        ("bad rollout", "chash $remote_addr; chash_snapshot %s; "
         "chash_migrate %s rollout=150%%;" % (signed, nxt), 'invalid parameter "rollout=150%"'),
    ]
    for label, body, message in cases:
        ngx = StreamNginx(stream_module=args.module)
        ngx.write_stream_conf([StreamUpstream("u", "chash $remote_addr", [], [sh.listen_port()])])
        rc, out, _ = ngx.test_edited(("        chash $remote_addr;\n", "        %s\n" % body))
        check(rc != 0 and message in out, "nginx -t, %s: %r" % (label, out[-400:]))
        print("nginx -t, %s: refused (%s)" % (label, message), flush=True)
    ok = StreamNginx(stream_module=args.module)
    try:
        ok.write_stream_conf([StreamUpstream("u", "chash $remote_addr", [], [sh.listen_port()],
                                             extra="chash_snapshot %s trusted_key=%s.pub "
                                                   "min_version=4;" % (signed, key))])
        rc, out = ok.test_config()
    finally:
        ok.cleanup()
    check(rc == 0, "nginx -t accepts the signed snapshot with its key: %r" % out[-300:])


def main():
    ap = harness.arg_parser("ngx_stream_upstream_chash_module.so", keys=300, servers=100,
                            seed=20261201, keys_help="client addresses")
    ap.add_argument("--chash-cli", required=True)
    ap.add_argument("--http-module", help="ngx_http_upstream_chash_module.so: chash_status")
    args = ap.parse_args()
    args.module = os.path.abspath(args.module)
    started = time.monotonic()
    rng = random.Random(args.seed)
    ports = harness.PortPool(rng)
    with harness.work_dir("chash-stream-snapshots-", args.keep) as workdir:
        cli = tsnap.Cli(os.path.abspath(args.chash_cli), workdir)
        phases = [("routing", lambda: routing(args, cli, rng, ports, workdir)),
                  ("hot swap", lambda: hot_swap(args, cli, rng, ports, workdir)),
                  ("nginx -t", lambda: config_errors(args, cli, rng, ports, workdir))]
        if args.http_module:
            args.http_module = os.path.abspath(args.http_module)
            phases.append(("status", lambda: status_both(args, cli, rng, ports, workdir)))
        harness.run_phases(phases)
    return harness.summary(started)


if __name__ == "__main__":
    sys.exit(main())
