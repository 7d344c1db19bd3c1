#!/usr/bin/env python3
"""The chash stream module against the real nginx: in stream{} upstreams,
`chash KEY;` must pick the same peers in the same order as stock `hash KEY
consistent;` over the same server lines, session by session, with every
retry of proxy_next_upstream visible in $upstream_addr; for TCP (refused
connects, a connect timeout, max_conns, down, max_fails, the 20-try
fallback, an empty key, one peer, names with several addresses) and UDP
(first picks). Then the cases of nginx-tests' stream_upstream_hash.t, run
against stock and against chash, over real backends that answer with their
port; nginx -t's configuration errors; both chash modules in one nginx;
bounded_load=F in both modules against libchash's own bounded-load lookup.

    tests/nginx/test_stream.py --module STREAM_SO [--http-module HTTP_SO]
        [--libchash LIBCHASH_SO] [--keys N]
    tests/nginx/test_stream.py --stock-only      # the stock balancer alone

Exit status 0 only when every check ran and passed.
"""

import bisect
import errno
import http.client
import os
import random
import re
import selectors
import socket
import sys
import threading
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MULTI_HOSTS, Server, check  # noqa: E402
import stream_harness as sh  # noqa: E402
import test_nginx  # noqa: E402  (its pingora-ketama model)
from stream_harness import StreamNginx, StreamUpstream  # noqa: E402

TRIES = 30  # proxy_next_upstream_tries: past nginx's 20 ring tries into round robin


def bound_listener(listener, host, ports):
    """listener(host, port) on the first port of the pool that is free: a
    port the pool hands out may be taken by another program on the machine
    (EADDRINUSE), which must not fail the run. Returns (listener, (host, port))."""
    for _ in range(20):
        port = ports.take()
        try:
            return listener(host, port), (host, port)
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise
    raise RuntimeError("no free port for a listener on %s" % host)


# ---------------------------------------------------------------- server lists

def stream_servers(rng, ports, n, names=True):
    """n server lines, every one with a port (stream refuses the others):
    IPv4, [::1], names (one resolving to 3 addresses), identical lines;
    weights 1..10 with a few large ones. names=False: IPv4 only."""
    mix = [("v4", 0.65), ("v6", 0.82), ("name", 0.93), ("dup", 1)] if names else [("v4", 1)]
    return harness.random_servers(rng, ports, n, mix, first=1, heavy=True)


# ---------------------------------------------------------------- nginx ring model

def address_for(rng, servers, target, taken):
    """A client address 127.x.y.z whose $remote_addr key goes first to
    servers[target] (IPv4:port lines of distinct texts: nginx's ring is
    pingora-v1's)."""
    hashes, nodes = test_nginx.pingora_ring(servers, "pingora-v1", 160)
    for _ in range(200000):
        a = harness.v4_text(rng, first=1)
        i = bisect.bisect_left(hashes, zlib.crc32(a.encode())) % len(hashes)
        if a not in taken and nodes[i] == target:
            taken.add(a)
            return a
    raise RuntimeError("no client address found for %s" % servers[target].text)


# ---------------------------------------------------------------- sessions

def match_sessions(ngx, done, start):
    """done: [(tag, src, port, client port)]; the log lines from line start
    on, matched by (listen port, client address, client port), in order.
    Returns {tag: Session}."""
    lines = sh.wait_lines(ngx, start + len(done))[start:]
    by_tuple = {}
    for line in lines:
        by_tuple.setdefault((line.server_port, line.remote_addr, line.remote_port),
                            []).append(line)
    out = {}
    for tag, src, port, cport in done:
        got = by_tuple.get((port, src, cport))
        if not check(got, "no log line for session %s from %s:%d to %d" % (tag, src, cport, port)):
            continue
        out[tag] = got.pop(0)
    return out


def run_tcp(ngx, plan):
    """plan: [(tag, src, port)], run one after another."""
    start = len(ngx.log_lines())
    done = []
    for tag, src, port in plan:
        cport, _ = sh.tcp_session(src, port)
        done.append((tag, src, port, cport))
    return match_sessions(ngx, done, start)


def compare_pair(results, hname, cname, clients, label, **kw):
    """harness.compare_pair, session by session (the key: the client's
    address)."""
    return harness.compare_pair(results, hname, cname, clients, label, unit="session", **kw)


# ---------------------------------------------------------------- backends

class PortEchoBackends:
    """TCP listeners that read what the client sends and answer their own
    port, then close (nginx-tests' stream_daemon). One thread, selectors,
    stopped by close()."""

    def __init__(self, addrs):
        self.sel = selectors.DefaultSelector()
        self.listeners = []
        for host, port in addrs:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
            s.listen(64)
            s.setblocking(False)
            self.sel.register(s, selectors.EVENT_READ, ("listen", port))
            self.listeners.append(s)
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping:
            for key, _ in self.sel.select(timeout=0.05):
                kind, port = key.data
                if kind == "listen":
                    try:
                        conn, _ = key.fileobj.accept()
                    except OSError:
                        continue
                    conn.setblocking(False)
                    self.sel.register(conn, selectors.EVENT_READ, ("conn", port))
                else:
                    conn = key.fileobj
                    try:
                        data = conn.recv(65536)
                        if data:
                            conn.sendall(str(port).encode())
                    except OSError:
                        pass
                    self.sel.unregister(conn)
                    conn.close()

    def close(self):
        self.stopping = True
        self.thread.join(timeout=5)
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()
        self.sel.close()


# ---------------------------------------------------------------- cases

def routing_cases(args, rng, ports):
    """Stock `hash KEY consistent;` beside `chash KEY;`, session by session."""
    nkeys = args.keys
    mixed = stream_servers(rng, ports, args.servers)
    plain, down, fails, single = harness.routing_fleets(rng, ports, mixed)
    udp = harness.with_params(stream_servers(rng, ports, max(40, args.servers // 3)),
                              "max_fails=0")

    taken = set()
    clients = harness.client_addresses(rng, nkeys, taken)

    upstreams, pairs = [], []
    port_of = {}

    def pair(name, servers, key="$remote_addr", nports=1, zone=False, udp_=False,
             server_extra=""):
        for kind in ("hash", "chash"):
            if kind == "chash" and not args.module:
                continue
            uname = "%s_%s" % (name, kind)
            bal = "hash %s consistent" % key if kind == "hash" else "chash %s" % key
            lports = [sh.listen_port() for _ in range(nports)]
            port_of[uname] = lports
            upstreams.append(StreamUpstream(uname, bal, servers, lports,
                                            extra="zone %s 1m;" % uname if zone else "",
                                            udp=udp_, server_extra=server_extra))
        pairs.append((name + "_hash", name + "_chash"))

    pair("addr", plain)
    pair("down", down)
    pair("fails", fails)
    pair("zone", fails, zone=True)
    pair("single", single)
    # the key from a map of $server_port: 12 listen ports a side, the first
    # mapped to an empty key (round robin)
    pair("port", plain, key="$pk", nports=12)
    pair("udp", udp, udp_=True, server_extra="proxy_responses 0;")
    pk_keys = [""] + ["pk%d-%d" % (j, rng.randrange(10**6)) for j in range(11)]
    map_lines = ["    map $server_port $pk {", '        default "";']
    for kind in ("hash", "chash"):
        for j, p in enumerate(port_of.get("port_" + kind, [])):
            map_lines.append('        %d "%s";' % (p, pk_keys[j]))
    map_lines.append("    }")

    # a connect timeout and max_conns, each in an upstream of refusing IPv4
    # peers: one whose accept queue is full (connects hang), one that
    # accepts and holds
    blackhole, black = bound_listener(sh.Blackhole, "127.251.0.1", ports)
    hold, holder = bound_listener(harness.HangingListener, "127.251.0.2", ports)
    hang_sets = {}
    for tag, addr in (("black", black), ("hold", holder)):
        servers = stream_servers(rng, ports, 40, names=False)
        servers.insert(rng.randrange(41), Server("%s:%d" % addr, 4))
        hang_sets[tag] = harness.with_params(servers, "max_conns=1 max_fails=0")
        if args.module:
            pair(tag, hang_sets[tag], server_extra="proxy_connect_timeout 1s; "
                 "proxy_next_upstream_tries 6;")

    # the pingora flavors: the distinct walk of pingora-ketama's ring
    pingora = []
    if args.module:
        ipp = harness.with_params(
            stream_servers(rng, ports, max(20, args.servers // 3), names=False)
            + [Server("[::1]:%d" % ports.take(), 2) for _ in range(5)], "max_fails=0")
        for flavor, multiple, servers, tag in (("pingora-v1", 160, ipp, "up"),
                                               ("pingora-v2", 16, ipp, "up"),
                                               ("pingora-v1", 160,
                                                harness.with_down(rng, ipp, 0.2),
                                                "down")):
            name = "%s_%d_%s" % (flavor.replace("-", "_"), multiple, tag)
            bal = "chash $remote_addr flavor=%s" % flavor
            if flavor == "pingora-v2":
                bal += " multiple=%d" % multiple
            port_of[name] = [sh.listen_port()]
            upstreams.append(StreamUpstream(name, bal, servers, port_of[name]))
            pingora.append((name, flavor, multiple, servers))

    all_servers = [s for u in upstreams for s in u.servers
                   if s.text not in ("%s:%d" % black, "%s:%d" % holder)]
    n = harness.check_refused(all_servers, MULTI_HOSTS)
    print("%d stream upstreams, %d server lines, %d addresses checked closed, "
          "%d client addresses" % (len(upstreams), len(all_servers), n, nkeys), flush=True)

    ngx = StreamNginx(stream_module=args.module, hosts=MULTI_HOSTS, keep=args.keep)
    started = time.monotonic()
    try:
        ngx.write_stream_conf(upstreams, tries=TRIES, stream_extra="\n".join(map_lines))
        ngx.start()
        if args.module:
            harness.check_notices(ngx, upstreams, show=1)

        tcp_pairs = [p for p in pairs if not p[0].startswith(("udp", "black", "hold"))]
        plan = []
        for ki, src in enumerate(clients):
            for hname, cname in tcp_pairs + [(p[0], p[0]) for p in pingora]:
                for name in sorted({hname, cname}):
                    if name not in port_of:
                        continue
                    lports = port_of[name]
                    plan.append(((name, ki), src, lports[ki % len(lports)]))
        results = run_tcp(ngx, plan)
        print("TCP: %d sessions in %.1f s" % (len(plan), time.monotonic() - started), flush=True)

        # the harness itself: stock shows long retry chains and spreads keys
        lengths = [len(results[("addr_hash", ki)].addrs) for ki in range(nkeys)]
        firsts = {results[("addr_hash", ki)].addrs[0] for ki in range(nkeys)}
        check(max(lengths) == TRIES, "addr_hash: longest try sequence %d, expected %d"
              " (past the 20 ring tries into round robin)" % (max(lengths), TRIES))
        check(len(firsts) >= min(nkeys // 4, 100),
              "addr_hash: %d distinct first peers" % len(firsts))
        check(all(len(results[("single_hash", ki)].addrs) == 1 for ki in range(nkeys)),
              "single: one try a session")
        empty = [results[("port_hash", ki)].addrs[0] for ki in range(0, nkeys, 12)]
        check(len(set(empty)) > 1 or len(empty) < 3,
              "port_hash: the empty key goes round robin: %s" % empty[:6])
        fails_busy = sum(1 for ki in range(nkeys) if results[("fails_hash", ki)].addrs
                         == ["fails_hash"])
        print("stock: tries 1..%d, %d distinct first peers, fails: %d sessions found no "
              "live upstream" % (max(lengths), len(firsts), fails_busy))

        if args.module:
            for hname, cname in tcp_pairs:
                compare_pair(results, hname, cname, clients, "TCP")

            for name, flavor, multiple, servers in pingora:
                ring = test_nginx.pingora_ring(servers, flavor, multiple)
                same = 0
                for ki, src in enumerate(clients):
                    got = results[(name, ki)].addrs
                    want = test_nginx.pingora_expected(ring, servers, src, TRIES)
                    if got == want:
                        same += 1
                    elif same + 3 > ki:
                        print("  %s client %s: nginx %s\n    model %s" % (name, src, got[:6],
                                                                      want[:6]))
                check(same == nkeys, "%s: %d of %d sessions walk as the model" %
                      (name, same, nkeys))
                print("%s: %d/%d sessions: the distinct walk of the pingora-ketama model" %
                      (name, same, nkeys), flush=True)

            # UDP: first picks (proxy_responses 0: a session ends once sent)
            start = len(ngx.log_lines())
            done = []
            t0 = time.monotonic()
            for ki, src in enumerate(clients):
                for name in ("udp_hash", "udp_chash"):
                    port = port_of[name][0]
                    cport = sh.udp_session(ngx, src, port, start + len(done))
                    done.append(((name, ki), src, port, cport))
            udp_results = match_sessions(ngx, done, start)
            check(all(r.protocol == "UDP" for r in udp_results.values()), "UDP sessions")
            print("UDP: %d sessions in %.1f s" % (len(done), time.monotonic() - t0))
            compare_pair(udp_results, "udp_hash", "udp_chash", clients, "UDP",
                         statuses=("200",), first_only=True)

            hang_cases(ngx, rng, hang_sets, black, holder, hold, port_of, taken)
            ring_ids = {results[(c, 0)].ring for _, c in tcp_pairs}
            check(all(re.fullmatch(r"[0-9a-f]{16}", r) for r in ring_ids),
                  "$chash_ring in stream: %s" % ring_ids)
            check(all(results[(h, 0)].ring == "-" for h, _ in tcp_pairs),
                  "$chash_ring is empty for stock hash upstreams")
    finally:
        ngx.finish(blackhole.close, hold.close)


def hang_cases(ngx, rng, hang_sets, black, holder, hold, port_of, taken):
    """A connect that times out (proxy_connect_timeout 1s) and goes on; a
    peer at max_conns=1 skipped while a session holds it."""
    bname, hname = "%s:%d" % black, "%s:%d" % holder
    bsrc = address_for(rng, hang_sets["black"],
                       [s.text for s in hang_sets["black"]].index(bname), taken)
    hsrc = address_for(rng, hang_sets["hold"],
                       [s.text for s in hang_sets["hold"]].index(hname), taken)

    ups = ("black_hash", "black_chash")
    r = run_tcp(ngx, [(u, bsrc, port_of[u][0]) for u in ups])
    a, b = r[ups[0]].addrs, r[ups[1]].addrs
    check(a == b, "connect timeout: hash %s, chash %s" % (a, b))
    check(a[:1] == [bname] and len(a) == 6,
          "connect timeout: the first try should time out on %s, then 5 more: %s"
          % (bname, a))
    print("connect timeout, client %s: %s then %d more tries: hash = chash" %
          (bsrc, a[:1], len(a) - 1), flush=True)

    ups = ("hold_hash", "hold_chash")
    # A: a session through the holding peer, kept open by its client
    start = len(ngx.log_lines())
    held = []
    before = len(hold.accepted)
    for u in ups:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((hsrc, 0))
        s.settimeout(10)
        s.connect(("127.0.0.1", port_of[u][0]))
        held.append(((u + "_A"), hsrc, port_of[u][0], s.getsockname()[1], s))
    ok = hold.wait_accepted(before + 2)
    check(ok, "the holding peer did not get both sessions")
    done = []
    for u in ups:
        cport, _ = sh.tcp_session(hsrc, port_of[u][0])
        done.append((u + "_B", hsrc, port_of[u][0], cport))
    for tag, src, port, cport, s in held:
        s.close()
        done.append((tag, src, port, cport))
    r = match_sessions(ngx, done, start)
    ah, ac = r["hold_hash_A"].addrs, r["hold_chash_A"].addrs
    bh, bc = r["hold_hash_B"].addrs, r["hold_chash_B"].addrs
    check(ah == ac == [hname], "max_conns: A should connect to %s: %s / %s" % (hname, ah, ac))
    check(bh == bc, "max_conns: B differs: hash %s, chash %s" % (bh, bc))
    check(ok and hname not in bh and len(bh) == 6,
          "max_conns: B should skip %s: %s" % (hname, bh))
    print("max_conns=1, client %s: A %s, B skips it: %s...: hash = chash" %
          (hsrc, ah, bh[:2]), flush=True)


def nginx_tests_cases(args, ports):
    """nginx-tests' stream_upstream_hash.t, as our own test, with stock `hash
    ... consistent` and then with `chash` in its place: 10 sessions from
    127.0.0.1 go to one backend; an empty key ($proxy_protocol_addr on a
    listener without proxy_protocol) goes round robin (2 and 2 of 4); plus a
    real PROXY protocol key: the backend follows the address the client
    claims, the same with both balancers."""
    p2, p3 = ports.take(), ports.take()
    backends = PortEchoBackends([("127.0.0.1", p2), ("127.0.0.1", p3)])
    servers = [Server("127.0.0.1:%d" % p2), Server("127.0.0.1:%d" % p3)]
    rng = random.Random(args.seed + 1)
    claimed = sorted({"10.%d.%d.%d" % (rng.randint(0, 255), rng.randint(0, 255),
                                         rng.randint(1, 254)) for _ in range(120)})
    answers = {}
    modes = ["stock"] + (["chash"] if args.module else [])
    try:
        for mode in modes:
            def cons(key):
                return "hash %s consistent" % key if mode == "stock" else "chash %s" % key
            ups = [StreamUpstream("hash", "hash $remote_addr", servers, [sh.listen_port()]),
                   StreamUpstream("cons", cons("$remote_addr"), servers, [sh.listen_port()]),
                   StreamUpstream("empty", "hash $proxy_protocol_addr", servers,
                                  [sh.listen_port()]),
                   StreamUpstream("cempty", cons("$proxy_protocol_addr"), servers,
                                  [sh.listen_port()]),
                   StreamUpstream("pp", cons("$proxy_protocol_addr"), servers,
                                  [sh.listen_port()], listen_params="proxy_protocol")]
            port = {u.name: u.ports[0] for u in ups}
            ngx = StreamNginx(stream_module=args.module if mode == "chash" else None,
                              keep=args.keep)
            try:
                ngx.write_stream_conf(ups, log_ring=False)
                ngx.start()

                def many(count, name, send=b"."):
                    got = {}
                    for _ in range(count):
                        _, data = sh.tcp_session("127.0.0.1", port[name], send)
                        m = re.search(rb"(\d+)", data)
                        if m:
                            got[int(m.group(1))] = got.get(int(m.group(1)), 0) + 1
                    return ", ".join("%d: %d" % (p, got[p]) for p in (p2, p3) if p in got)

                r = many(10, "hash")
                check(r == "%d: 10" % p3, "%s: hash: %s" % (mode, r))
                r = many(10, "cons")
                check(re.fullmatch(r"(%d|%d): 10" % (p2, p3), r) is not None,
                      "%s: hash consistent: %s" % (mode, r))
                answers[(mode, "cons")] = r
                r = many(4, "empty")
                check(r == "%d: 2, %d: 2" % (p2, p3), "%s: empty key: %s" % (mode, r))
                r = many(4, "cempty")
                check(r == "%d: 2, %d: 2" % (p2, p3), "%s: empty key - consistent: %s" % (mode, r))
                picks = {}
                for a in claimed:
                    header = ("PROXY TCP4 %s 127.0.0.1 40000 %d\r\n" % (a, port["pp"])).encode()
                    _, data = sh.tcp_session("127.0.0.1", port["pp"], header + b".")
                    picks[a] = data.decode(errors="replace")
                answers[(mode, "pp")] = picks
                check(set(picks.values()) == {str(p2), str(p3)},
                      "%s: $proxy_protocol_addr: answers %s" % (mode, set(picks.values())))
                print("stream_upstream_hash.t, %s: hash %s; consistent %s; empty key 2/2, "
                      "consistent 2/2; PROXY protocol key: %d addresses over both backends" %
                      (mode, "%d: 10" % p3, answers[(mode, "cons")], len(claimed)), flush=True)
            finally:
                ngx.finish()
        if args.module:
            check(answers[("stock", "cons")] == answers[("chash", "cons")],
                  "consistent: stock %s, chash %s" % (answers[("stock", "cons")],
                                                      answers[("chash", "cons")]))
            same = sum(1 for a in claimed
                       if answers[("stock", "pp")][a] == answers[("chash", "pp")][a])
            check(same == len(claimed), "PROXY protocol key: chash = stock on %d of %d "
                  "addresses" % (same, len(claimed)))
            print("stream_upstream_hash.t: chash = stock: consistent %s, PROXY protocol "
                  "key %d/%d addresses" % (answers[("chash", "cons")], same, len(claimed)))
    finally:
        backends.close()


def config_errors(args):
    """nginx -t gives the same error for chash as for stock hash, and
    chash's own."""
    same = [
        (label, "hash $remote_addr consistent", "chash $remote_addr", lines, message)
        for label, lines, message in (
            ("backup refused", ["server 127.0.0.1:1;", "server 127.0.0.2:1 backup;"],
             'balancing method does not support parameter "backup"'),
            ("no port", ["server 127.0.0.1;"], 'no port in upstream "127.0.0.1"'))]
    own = [
        ("name with pingora", "chash $remote_addr flavor=pingora-v1",
         ["server localhost:1;"], "pingora"),
        ("multiple with nginx", "chash $remote_addr multiple=16",
         ["server 127.0.0.1:1;"], '"multiple=" is for flavor=pingora-v2 and flavor=resty only'),
        ("unknown flavor", "chash $remote_addr flavor=ketama",
         ["server 127.0.0.1:1;"], 'invalid parameter "flavor=ketama"'),
        ("duplicate with pingora", "chash $remote_addr flavor=pingora-v1",
         ["server 127.0.0.1:1;", "server 127.0.0.1:1;"], "127.0.0.1:1"),
        ("zero multiple", "chash $remote_addr flavor=pingora-v2 multiple=0",
         ["server 127.0.0.1:1;"], 'invalid parameter "multiple=0"'),
        ("bounded_load=1", "chash $remote_addr bounded_load=1",
         ["server 127.0.0.1:1;"], 'invalid parameter "bounded_load=1": bounded_load= takes a '
         'factor over 1'),
        ("bounded_load=x", "chash $remote_addr bounded_load=1.x",
         ["server 127.0.0.1:1;"], 'invalid parameter "bounded_load=1.x"'),
        ("duplicate directive", "chash $remote_addr; chash $remote_addr",
         ["server 127.0.0.1:1;"], '"chash" directive is duplicate'),
    ]

    def nginx_t(balancer, lines):
        ngx = StreamNginx(stream_module=args.module)
        ngx.write_stream_conf([StreamUpstream("u", balancer, [], [sh.listen_port()])])
        return ngx.test_edited(harness.upstream_lines(balancer, lines))[:2]

    harness.check_refusals(nginx_t, same, own)


def both_modules(args, rng, ports):
    """The HTTP and the stream chash modules in one nginx: each routes as its
    stock twin, each names its own ring (their copies of the core do not
    bind to each other)."""
    servers = harness.with_params(stream_servers(rng, ports, 60, names=False), "max_fails=0")
    harness.check_refused(servers, {})
    ngx = StreamNginx(stream_module=args.module, http_module=args.http_module,
                      keep=args.keep)
    http_port = sh.listen_port()
    p = ngx.prefix
    http_ups = "\n".join(
        "    upstream h_%s { %s; %s }" % (kind, bal, " ".join(s.line().strip() for s in servers))
        for kind, bal in (("hash", "hash $arg_k consistent"), ("chash", "chash $arg_k")))
    http_block = f"""http {{
    access_log off;
{harness.temp_paths(p)}
    log_format h "$arg_i\\t$upstream_addr\\t$chash_ring";
{http_ups}
    server {{
        listen 127.0.0.1:{http_port};
        access_log {p}/logs/http.log h;
        error_log {p}/logs/http-error.log crit;
        proxy_next_upstream error timeout;
        proxy_next_upstream_tries 25;
        location /hash {{ proxy_pass http://h_hash; }}
        location /chash {{ proxy_pass http://h_chash; }}
    }}
}}"""
    ups = [StreamUpstream("s_hash", "hash $remote_addr consistent", servers, [sh.listen_port()]),
           StreamUpstream("s_chash", "chash $remote_addr", servers, [sh.listen_port()])]
    try:
        ngx.write_stream_conf(ups, tries=25, http_block=http_block)
        ngx.start()
        conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=30)
        n = 150
        for i in range(n):
            for kind in ("hash", "chash"):
                conn.request("GET", "/%s?i=%s%d&k=key%d" % (kind, kind, i, i))
                conn.getresponse().read()
        conn.close()
        plan = []
        for i in range(n):
            src = harness.v4_text(rng, first=1)
            plan += [(("s_hash", i), src, ups[0].ports[0]), (("s_chash", i), src, ups[1].ports[0])]
        sres = run_tcp(ngx, plan)
        log = {}
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(log) < 2 * n:
            with open(os.path.join(p, "logs", "http.log")) as f:
                log = {line.split("\t")[0]: line.rstrip("\n").split("\t") for line in f}
            time.sleep(0.05)
        hsame = sum(1 for i in range(n) if log.get("hash%d" % i, [0, 1])[1] ==
                    log.get("chash%d" % i, [0, 2])[1])
        ssame = sum(1 for i in range(n) if sres[("s_hash", i)].addrs == sres[("s_chash", i)].addrs)
        check(hsame == n, "both modules: HTTP chash = hash on %d of %d requests" % (hsame, n))
        check(ssame == n, "both modules: stream chash = hash on %d of %d sessions" % (ssame, n))
        hring = log.get("chash0", ["", "", ""])[2]
        sring = sres[("s_chash", 0)].ring
        # the same server list hashed the same way: one ring, one fingerprint
        check(re.fullmatch(r"[0-9a-f]{16}", hring or "") and hring == sring,
              "both modules: $chash_ring HTTP %r, stream %r" % (hring, sring))
        print("both modules in one nginx: HTTP %d/%d requests and stream %d/%d sessions "
              "as stock (every retry), ring %s in both" % (hsame, n, ssame, n, sring), flush=True)
    finally:
        ngx.finish()


# ---------------------------------------------------------------- bounded load

class LibChash:
    """libchash.so through ctypes: the library's own bounded-load lookup,
    the reference the module's choices are checked against."""

    def __init__(self, path):
        import ctypes
        self.ct = ctypes
        lib = ctypes.CDLL(path)
        vp = ctypes.c_void_p
        lib.chash_builder_new.argtypes = [ctypes.c_int, ctypes.c_uint32, ctypes.POINTER(vp)]
        lib.chash_builder_add.argtypes = [vp, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32]
        lib.chash_builder_build.argtypes = [vp, ctypes.POINTER(vp)]
        lib.chash_ring_free.argtypes = [vp]
        lib.chash_ring_find_bounded_load.argtypes = [
            vp, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t,
            ctypes.c_double, vp, ctypes.POINTER(ctypes.c_uint32)]
        lib.chash_bounded_load_capacity.argtypes = [ctypes.c_uint64, ctypes.c_uint32,
                                                    ctypes.c_double]
        lib.chash_bounded_load_capacity.restype = ctypes.c_uint64
        self.lib = lib

    def ring(self, flavor, servers):
        ct = self.ct
        b, r = ct.c_void_p(), ct.c_void_p()
        assert self.lib.chash_builder_new(flavor, 0, ct.byref(b)) == 0
        for sv in servers:
            t = sv.text.encode()
            assert self.lib.chash_builder_add(b, t, len(t), sv.weight) == 0, sv.text
        assert self.lib.chash_builder_build(b, ct.byref(r)) == 0
        return r

    def bounded(self, ring, key, loads, factor):
        ct = self.ct
        arr = (ct.c_uint64 * len(loads))(*loads)
        node = ct.c_uint32()
        assert self.lib.chash_ring_find_bounded_load(ring, zlib.crc32(key.encode()), arr,
                                                     len(loads), factor, None,
                                                     ct.byref(node)) == 0
        return node.value

    def capacity(self, total, nodes, factor):
        return self.lib.chash_bounded_load_capacity(total, nodes, factor)


def bounded_load_cases(args, rng, ports):
    """bounded_load=1.25 under concurrent slow connections, two workers
    sharing the loads through a zone: 8 backends that accept and never
    answer, 40 sessions (or HTTP requests) opened one after
    another and all held open, half of them with keys whose ring node is
    the same backend. Before each, the loads are the held connections; the
    backend that accepts must be the one libchash's bounded-load lookup
    (chash_ring_find_bounded_load) answers for those loads, and no backend
    may pass the capacity."""
    lib = LibChash(args.libchash)
    factor = 1.25
    addrs = [("127.252.0.%d" % (k + 1), ports.take()) for k in range(8)]
    servers = [Server("%s:%d" % a, w, False, "max_fails=0")
               for a, w in zip(addrs, [1, 2, 1, 1, 3, 1, 2, 1])]
    listeners = [harness.HangingListener(*a) for a in addrs]
    flavors = [("nginx", 0, ""), ("pingora-v1", 1, " flavor=pingora-v1"),
               ("resty", 3, " flavor=resty")]  # resty: ids are the server texts
    # two workers and a zone: the loads are the connections of both workers
    ups = [StreamUpstream("bl_%s" % f.replace("-", "_"),
                          "chash $remote_addr%s bounded_load=%g" % (opt, factor),
                          servers, [sh.listen_port()],
                          extra="zone bl_%s 1m;" % f.replace("-", "_"))
           for f, _, opt in flavors]
    http_port = sh.listen_port() if args.http_module else None
    ngx = StreamNginx(stream_module=args.module, http_module=args.http_module, keep=args.keep,
                      workers=2)
    http_block = ""
    if http_port:
        p = ngx.prefix
        http_block = f"""http {{
    access_log off;
{harness.temp_paths(p)}
    upstream h_bl {{ chash $arg_k bounded_load={factor:g}; zone h_bl 1m; {" ".join(sv.line().strip() for sv in servers)} }}
    server {{
        listen 127.0.0.1:{http_port};
        error_log {p}/logs/http-error.log crit;
        proxy_read_timeout 60s;
        location /bl {{ proxy_pass http://h_bl; }}
    }}
}}"""
    held = []
    try:
        ngx.write_stream_conf(ups, tries=8, http_block=http_block)
        ngx.start()
        cases = [(u.name, fl, "stream", u.ports[0]) for u, (_, fl, _) in zip(ups, flavors)]
        if http_port:
            cases.append(("h_bl", 0, "http", http_port))
        for name, flavor, proto, port in cases:
            ring = lib.ring(flavor, servers)
            taken = set()
            hot = [address_for(rng, servers, 0, taken) for _ in range(20)] if flavor == 0 else []
            keys = harness.client_addresses(rng, 40 - len(hot), taken)
            if flavor != 0:
                # pingora's ring: hot keys found by the library itself
                keys = keys[:20]
                while len(hot) < 20:
                    a = harness.v4_text(rng, first=1)
                    if a not in taken and lib.bounded(ring, a, [0] * 8, 1e9) == 0:
                        taken.add(a)
                        hot.append(a)
            order = [k for pair_ in zip(hot, keys) for k in pair_]
            loads = [0] * 8
            same, moved, over = 0, 0, 0
            for key in order:
                want = lib.bounded(ring, key, loads, factor)
                cap = lib.capacity(sum(loads), 8, factor)
                before = [len(li.accepted) for li in listeners]
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.settimeout(10)
                if proto == "stream":
                    sock.bind((key, 0))
                    sock.connect(("127.0.0.1", port))
                else:
                    sock.connect(("127.0.0.1", port))
                    sock.sendall(("GET /bl?k=%s HTTP/1.0\r\n\r\n" % key).encode())
                held.append(sock)
                deadline = time.monotonic() + 10
                got = None
                while time.monotonic() < deadline and got is None:
                    now = [len(li.accepted) for li in listeners]
                    changed = [k for k in range(8) if now[k] != before[k]]
                    if changed:
                        got = changed[0]
                    else:
                        time.sleep(0.002)
                if not check(got is not None, "%s: no backend accepted for %s" % (name, key)):
                    break
                same += got == want
                if key in hot and got != 0:
                    moved += 1
                loads[got] += 1
                over += loads[got] > cap
            check(same == len(order), "%s: the backend = libchash's bounded-load choice on %d "
                  "of %d connections" % (name, same, len(order)))
            check(over == 0, "%s: %d connections past the capacity" % (name, over))
            check(moved > 0, "%s: no hot key was moved off its full node" % name)
            print("bounded_load=%g, %s %s: %d/%d connections where libchash's bounded-load "
                  "lookup puts them, %d of %d hot keys moved off their full node, loads %s, "
                  "capacity %d" % (factor, proto, name, same, len(order), moved, len(hot),
                                   loads, lib.capacity(sum(loads) - 1, 8, factor)), flush=True)
            for sock in held:
                sock.close()
            held = []
            # every held connection must be gone before the next case
            time.sleep(0.3)
    finally:
        for sock in held:
            sock.close()
        ngx.finish(*[li.close for li in listeners])


def main():
    ap = harness.arg_parser("ngx_stream_upstream_chash_module.so", keys=1000, servers=300,
                            seed=20261201, module_required=False, keys_help="client addresses")
    ap.add_argument("--http-module", help="ngx_http_upstream_chash_module.so (both in one nginx)")
    ap.add_argument("--libchash", help="libchash.so: bounded_load against the library's lookup")
    args = harness.parse_stock_only(ap, "http_module")

    started = time.monotonic()
    rng = random.Random(args.seed)
    ports = harness.PortPool(rng)
    phases = [("routing", lambda: routing_cases(args, rng, ports)),
              ("stream_upstream_hash.t", lambda: nginx_tests_cases(args, ports))]
    if args.module:
        phases.append(("configuration errors", lambda: config_errors(args)))
    if args.module and args.http_module:
        phases.append(("both modules", lambda: both_modules(args, rng, ports)))
    if args.module and args.libchash:
        phases.append(("bounded load", lambda: bounded_load_cases(args, rng, ports)))
    harness.run_phases(phases)
    return harness.summary(started)


if __name__ == "__main__":
    sys.exit(main())
