#!/usr/bin/env python3
"""The chash nginx module against the real nginx: `chash $arg_k;` must pick the
same peers in the same order as `hash $arg_k consistent;` over the same server
lines, for every key, with every connect refused so that every retry shows
in $upstream_addr; and the pingora flavors must walk the ring as
pingora-ketama's ring does.

    tests/nginx/test_nginx.py --module PATH [--keys N] [--servers N] [--chash-cli PATH]
    tests/nginx/test_nginx.py --stock-only      # the harness on stock nginx alone

Exit status 0 only when every check ran and passed.
"""

import bisect
import ipaddress
import os
import random
import re
import subprocess
import sys
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import MULTI_HOSTS, Nginx, Server, Upstream, check  # noqa: E402

TRIES = 30  # proxy_next_upstream_tries: past nginx's 20 ring tries into round robin


# ---------------------------------------------------------------- server lists

def mixed_servers(rng, ports, n):
    """n server lines: IPv4, [::1], no port, names (one that resolves to 3
    addresses), identical lines; weights 1..10 with a few large ones."""
    return harness.random_servers(rng, ports, n, [("v4", 0.55), ("v6", 0.75), ("noport", 0.85),
                                                  ("name", 0.93), ("dup", 1)], heavy=True)


def changed(rng, ports, servers):
    """A new server list: some removed, some added, some weights changed."""
    out = [Server(s.text, s.weight, s.down, s.params) for s in servers
           if rng.random() > 0.05]
    for s in out:
        if rng.random() < 0.05:
            s.weight = rng.choice([1, 2, 4, 7])
    for s in harness.ip_port_servers(rng, ports, max(1, len(servers) // 20)):
        out.insert(rng.randrange(len(out) + 1), Server(s.text, s.weight, False,
                                                       servers[0].params))
    return out


# ---------------------------------------------------------------- pingora model

def pingora_ring(servers, flavor, multiple):
    """Independent model of pingora-ketama's ring: (hashes, nodes). Points
    chained from CRC32(IP \\0 port); equal hashes: the first listed server
    (pingora-v1, also nginx's rule for IPv4:port lines) or the lowest
    address (pingora-v2)."""
    nodes = []
    for idx, s in enumerate(servers):
        host, _, port = s.text.rpartition(":")
        ip = ipaddress.ip_address(host.strip("[]"))
        base = zlib.crc32(str(ip).encode() + b"\0" + port.encode())
        order = (0 if ip.version == 4 else 1, ip.packed, int(port))
        nodes.append((base, s.weight, idx if flavor == "pingora-v1" else order))
    return harness.crc32_ring(nodes, multiple)


def pingora_expected(ring, servers, key, tries):
    """Peers tried with every connect refused: the distinct walk from the key,
    down servers skipped, at most `tries` and at most the live peers."""
    return [peer_name(servers[i].text) for i in harness.ring_walk(ring, servers, key, tries)]


def peer_name(text):
    host, _, port = text.rpartition(":")
    ip = ipaddress.ip_address(host.strip("[]"))
    return ("[%s]:%s" % (ip, port)) if ip.version == 6 else "%s:%s" % (ip, port)


# ---------------------------------------------------------------- checks

def compare_pairs(results, pairs, keys, label):
    """results: {(upstream, key index): Logged}; pairs: (hash, chash)."""
    for hname, cname in pairs:
        harness.compare_pair(results, hname, cname, keys, label)


def stock_sanity(results, name, keys, nservers_live):
    """The harness itself: the stock balancer shows retries and spreads keys."""
    lengths = [len(results[(name, ki)][0]) for ki in range(len(keys))]
    first = {results[(name, ki)][0][0] for ki in range(len(keys)) if results[(name, ki)][0]}
    check(max(lengths) == min(TRIES, nservers_live),
          "%s: longest try sequence %d, expected %d" % (name, max(lengths),
                                                         min(TRIES, nservers_live)))
    check(len(first) > 1, "%s: %d distinct first peers" % (name, len(first)))
    statuses = {results[(name, ki)][1] for ki in range(len(keys))}
    check(statuses <= {"502"}, "%s: statuses %s (every connect refused: 502)" % (name, statuses))


def timeouts_and_max_conns(ngx, name, servers, addr, listener, rng, last_id):
    """For a key whose first peer never answers: request A times out on it
    (proxy_read_timeout 2s) and goes on; while A holds that peer's only
    connection (max_conns=1), request B with the same key must skip it.
    Both upstreams get A at once, then B, while both A wait: the same peers
    in the same order. Every other peer refuses, so B ends in milliseconds."""
    ring = pingora_ring(servers, "pingora-v1", 160)  # = nginx's ring for IPv4:port
    hname = "%s:%d" % addr
    target = [s.text for s in servers].index(hname)
    key = None
    for _ in range(200000):
        cand = "t%d" % rng.randrange(10**9)
        i = bisect.bisect_left(ring[0], zlib.crc32(cand.encode())) % len(ring[0])
        if ring[1][i] == target:
            key = cand
            break
    if not check(key is not None, "no key found for %s" % hname):
        return last_id
    ups = (name + "_hash", name + "_chash")
    before = len(listener.accepted)
    ids = {}
    threads = []
    for u in ups:
        last_id += 1
        ids[("A", u)] = str(last_id)
        t = harness.threading.Thread(target=harness.fetch,
                             args=(ngx.port, harness.url_for(u, key, last_id)))
        t.start()
        threads.append(t)
    held = listener.wait_accepted(before + 2)
    check(held, "%s did not get both connections" % hname)
    for u in ups:
        last_id += 1
        ids[("B", u)] = str(last_id)
        harness.fetch(ngx.port, harness.url_for(u, key, last_id))
    for t in threads:
        t.join(timeout=60)
    log = {}
    for _ in range(200):
        log = ngx.access_log()
        if all(i in log for i in ids.values()):
            break
        time.sleep(0.05)
    a_h, a_c = log[ids[("A", ups[0])]][0], log[ids[("A", ups[1])]][0]
    b_h, b_c = log[ids[("B", ups[0])]][0], log[ids[("B", ups[1])]][0]
    check(a_h == a_c, "timeout: A differs: %s / %s" % (a_h, a_c))
    check(b_h == b_c, "max_conns: B differs: %s / %s" % (b_h, b_c))
    check(a_h[:1] == [hname] and len(a_h) == 6,
          "timeout: A should time out on %s then go on: %s" % (hname, a_h))
    check(held and hname not in b_h and len(b_h) == 6,
          "max_conns: B should skip %s: %s" % (hname, b_h))
    print("timeout and max_conns, key %r: A %s (6 tries), B %s (6 tries): hash = chash" %
          (key, a_h[:2], b_h[:2]), flush=True)
    return last_id


def config_errors(args):
    """nginx -t gives the same error for chash as for hash, and chash's own."""
    cases = [
        ("backup refused", "hash $arg_k consistent", "chash $arg_k",
         ["server 127.0.0.1:1;", "server 127.0.0.2:1 backup;"],
         'balancing method does not support parameter "backup"'),
    ]
    own = [
        ("name with pingora", "chash $arg_k flavor=pingora-v1",
         ["server localhost:1;"], "pingora"),
        ("no port with pingora", "chash $arg_k flavor=pingora-v2",
         ["server 127.0.0.1;"], "127.0.0.1"),
        ("multiple with nginx", "chash $arg_k multiple=16",
         ["server 127.0.0.1:1;"], '"multiple=" is for flavor=pingora-v2 and flavor=resty only'),
        ("unknown flavor", "chash $arg_k flavor=ketama",
         ["server 127.0.0.1:1;"], 'invalid parameter "flavor=ketama"'),
        ("duplicate with pingora", "chash $arg_k flavor=pingora-v1",
         ["server 127.0.0.1:1;", "server 127.0.0.1:1;"], "127.0.0.1:1"),
        ("zero multiple", "chash $arg_k flavor=pingora-v2 multiple=0",
         ["server 127.0.0.1:1;"], 'invalid parameter "multiple=0"'),
    ]

    def nginx_t(balancer, lines):
        ngx = Nginx(module=args.module)
        ngx.write_conf([Upstream("u", balancer, [])])
        return ngx.test_edited(harness.upstream_lines(balancer, lines))[:2]

    harness.check_refusals(nginx_t, cases, own)


def main():
    ap = harness.arg_parser("ngx_http_upstream_chash_module.so", keys=2000, servers=300,
                            seed=20261130, module_required=False)
    ap.add_argument("--chash-cli", help="the chash command, to cross-check pingora routes")
    args = harness.parse_stock_only(ap)
    if args.chash_cli and not os.access(args.chash_cli, os.X_OK):
        ap.error("no chash command at %s" % args.chash_cli)

    started = time.monotonic()
    rng = random.Random(args.seed)
    ports = harness.PortPool(rng)
    keys = harness.random_keys(rng, args.keys)

    mixed = mixed_servers(rng, ports, args.servers)
    plain, down, fails, single = harness.routing_fleets(rng, ports, mixed)
    ipp = harness.with_params(harness.ip_port_servers(rng, ports, max(20, args.servers // 3)),
                              "max_fails=0")
    ipp_down = harness.with_down(rng, ipp, 0.2)

    # timeouts and max_conns: upstreams with one server that accepts and never
    # answers (a listener the test starts), among servers that refuse
    hang_sets = []
    for j in range(3):
        addr = ("127.251.0.%d" % (j + 1), ports.take())
        servers = [s for s in harness.ip_port_servers(rng, ports, 40)
                   if not s.text.startswith("[")]
        servers.insert(rng.randrange(len(servers) + 1), Server("%s:%d" % addr, 4))
        hang_sets.append((addr, harness.with_params(servers, "max_conns=1 max_fails=0")))

    upstreams = []
    pairs = []

    def pair(name, servers, key="$arg_k", zone=False):
        def extra(u):
            return "zone %s 1m;" % u if zone else ""
        upstreams.append(Upstream(name + "_hash", "hash %s consistent" % key, servers,
                                  extra=extra(name + "_hash")))
        if args.module:
            upstreams.append(Upstream(name + "_chash", "chash %s" % key, servers,
                                      extra=extra(name + "_chash")))
            pairs.append((name + "_hash", name + "_chash"))

    pair("mixed", plain)
    pair("down", down)
    pair("fails", fails)
    pair("single", single)
    pair("zone", fails, zone=True)  # peers (and their state) in shared memory
    hang_names = []
    for j, (_, servers) in enumerate(hang_sets if args.module else ()):
        for kind, bal in (("hash", "hash $arg_k consistent"), ("chash", "chash $arg_k")):
            name = "hang%d_%s" % (j, kind)
            upstreams.append(Upstream(name, bal, servers, location_extra=(
                "proxy_read_timeout 2s; proxy_next_upstream_tries 6; ")))
            hang_names.append(name)
    pingora = []
    if args.module:
        for flavor, multiple, servers in (("pingora-v1", 160, ipp), ("pingora-v2", 16, ipp),
                                          ("pingora-v1", 160, ipp_down)):
            name = "%s_%d_%s" % (flavor.replace("-", "_"), multiple,
                                 "down" if servers is ipp_down else "up")
            bal = "chash $arg_k flavor=%s" % flavor
            if flavor == "pingora-v2":
                bal += " multiple=%d" % multiple
            upstreams.append(Upstream(name, bal, servers))
            pingora.append((name, flavor, multiple, servers))

    all_servers = [s for u in upstreams for s in u.servers]
    n = harness.check_refused(all_servers, MULTI_HOSTS)
    print("%d upstreams, %d server lines, %d addresses checked closed, %d keys" %
          (len(upstreams), len(all_servers), n, len(keys)), flush=True)

    listeners = [harness.HangingListener(*addr) for addr, _ in hang_sets] if hang_names else []
    ngx = Nginx(module=args.module, hosts=MULTI_HOSTS, keep=args.keep)
    try:
        ngx.write_conf(upstreams, tries=TRIES)
        ngx.start()
        if args.module:
            harness.check_notices(ngx, upstreams)
        names = [u.name for u in upstreams if u.name not in hang_names]
        results, last_id = harness.run_keys(ngx, names, keys)
        print("generation 1: %d requests in %.1f s" % (len(results), time.monotonic() - started),
              flush=True)

        stock_sanity(results, "mixed_hash", keys, sum(1 for s in plain if not s.down) + 3)
        check(all(len(results[("single_hash", ki)][0]) == 1 for ki in range(len(keys))),
              "single: one try a request")
        compare_pairs(results, pairs, keys, "generation 1")

        rings = {}
        for name, flavor, multiple, servers in pingora:
            ring = pingora_ring(servers, flavor, multiple)
            same = 0
            for ki, key in enumerate(keys):
                got = results[(name, ki)][0]
                want = pingora_expected(ring, servers, key, TRIES)
                if got == want:
                    same += 1
                elif same + 3 > ki:
                    print("  %s key %r: nginx %s\n    model %s" % (name, key, got[:6], want[:6]))
            check(same == len(keys), "%s: %d of %d keys walk as the model" %
                  (name, same, len(keys)))
            print("%s: %d/%d keys: the same distinct walk as the pingora-ketama model" %
                  (name, same, len(keys)), flush=True)
        if args.module and args.chash_cli:
            for name, flavor, multiple, servers in pingora[:2]:
                sfile = os.path.join(ngx.prefix, name + ".servers")
                with open(sfile, "w") as f:
                    f.write("".join("%s %d\n" % (s.text, s.weight) for s in servers))
                cmd = [args.chash_cli, "route", "--servers", sfile, "--mode", flavor]
                if flavor == "pingora-v2":
                    cmd += ["--multiple", str(multiple)]
                out = subprocess.run(cmd, input="".join(k + "\n" for k in keys),
                                     capture_output=True, text=True, timeout=120)
                check(out.returncode == 0, "chash route: " + out.stderr)
                routes = [line.rpartition(",")[2] for line in out.stdout.splitlines()]
                same = sum(1 for ki in range(len(keys))
                           if ki < len(routes) and results[(name, ki)][0][:1] == [peer_name(routes[ki])])
                check(same == len(keys), "%s: first peer = chash route on %d of %d keys" %
                      (name, same, len(keys)))
                print("%s: first peer = `chash route --mode %s` on %d/%d keys" %
                      (name, flavor, same, len(keys)))
        if args.module:
            ring_ids = {results[(c, 0)][2] for _, c in pairs}
            check(all(re.fullmatch(r"[0-9a-f]{16}", r) for r in ring_ids),
                  "$chash_ring: %s" % ring_ids)
            check(all(results[(h, 0)][2] == "-" for h, _ in pairs),
                  "$chash_ring is empty for stock hash upstreams")
            rings[1] = results[(pairs[0][1], 0)][2]

        if hang_names:
            for j, ((addr, servers), listener) in enumerate(zip(hang_sets, listeners)):
                last_id = timeouts_and_max_conns(ngx, "hang%d" % j, servers, addr, listener,
                                                 rng, last_id)

        # generation 2: a changed server list, through nginx -s reload
        mixed2 = changed(rng, ports, plain)
        harness.check_refused(mixed2, MULTI_HOSTS)
        for u in upstreams:
            if u.name.startswith("mixed_"):
                u.servers = mixed2
        ngx.write_conf(upstreams, tries=TRIES)
        ngx.truncate_access_log()
        ngx.reload()
        results2, _ = harness.run_keys(ngx, [n for n in names if n.startswith("mixed_")],
                                       keys, last_id)
        moved = sum(1 for ki in range(len(keys))
                    if results2[("mixed_hash", ki)][0][:1] != results[("mixed_hash", ki)][0][:1])
        check(0 < moved < len(keys), "reload moved %d of %d first peers" % (moved, len(keys)))
        print("reload: %d of %d keys changed their first peer" % (moved, len(keys)))
        compare_pairs(results2, [p for p in pairs if p[0].startswith("mixed_")], keys,
                      "after reload")
        if args.module:
            rings[2] = results2[("mixed_chash", 0)][2]
            check(rings[1] != rings[2], "$chash_ring changed with the server list: %s" % rings)
    finally:
        ngx.finish(*[listener.close for listener in listeners])

    if args.module:
        config_errors(args)

    return harness.summary(started, "; %d requests resent after a lost connection" % ngx.resent)


if __name__ == "__main__":
    sys.exit(main())
