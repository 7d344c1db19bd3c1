#!/usr/bin/env python3
"""Upstreams of the other programs' flavors beyond what test_flavors.py
replays from recorded answers, every connect refused so that $upstream_addr
shows the whole chain:

1. Flavors whose recorded answers a `server` line cannot replay (Varnish's
   shard director keys its ring by backend name, Envoy's recorded sets by
   request hash), and in the stream module every one of them: upstreams of
   `server` lines with flavor=varnish-shard, envoy-ring, envoy-maglev (and,
   in stream, haproxy and ketama-md5), and the same rings as
   `chash_snapshot` files `chash build` wrote. Key by key:
     - first pick: `chash route` over the same servers (whose answers equal
       the real programs' on tests/data's recorded sets);
     - the chain: the independent ring models of tests/oracles/models.py:
       Varnish's shard_lookup (no wrap at the top) then its walk, each
       backend once; Envoy's retry attempts (the next ring entry, Maglev's
       mutated hash), each host once as Envoy's previous_hosts predicate
       skips them; HAProxy's nearest point then its walk; ketama's
       successor walk;
     - the snapshot upstream's chain is the server-line upstream's.
   HTTP keys are an X-Key header; stream keys are the client's address.

2. Leaving HAProxy or twemproxy for nginx without flushing the caches
   (HTTP): an upstream whose chash_snapshot is the old program's ring
   (flavor=haproxy, ketama-md5 twemproxy, built by `chash build` from a
   recorded golden set's servers, tests/data/PROVENANCE.md) and whose
   chash_migrate is a pingora-v2 ring of the same servers. Over every key
   of the set that a header can carry:
     - rollout=0: the first pick is the real program's recorded answer, and
       $chash_ring_choice is "old";
     - rollout=0, 5%, 100%: the first pick and the side equal `chash route
       --ring OLD --new-ring NEW --rollout R --seed 7`;
     - 5%: the share of keys whose server changed is the share `chash diff
       --rollout 5%` expects, within 4 standard deviations of a binomial
       draw; raising the rollout only adds keys to the new side;
   then the snapshot refusals these flavors bring: the ring's options on
   the directive, bounded_load= on an Envoy snapshot, subsets on a ring
   that masks inexactly (weighted ketama).

    tests/nginx/test_flavor_upstreams.py --module HTTP_SO --chash-cli CHASH
    tests/nginx/test_flavor_upstreams.py --stream-module STREAM_SO --chash-cli CHASH

Exit status 0 only when every check ran and passed.
"""

import argparse
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from bisect import bisect_left

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "oracles"))
import harness  # noqa: E402
from harness import Nginx, Server, Upstream  # noqa: E402
import common  # noqa: E402
import differential  # noqa: E402
import models  # noqa: E402
import test_flavors as tf  # noqa: E402  (read_sets, answers, sendable, DATA)

FAILURES = harness.FAILURES
check = harness.check
TRIES = 5
SEED = 20261203

# ---------------------------------------------------------------- 1. walks

# name: (flavor directive parameters, `chash route`/`build` options, model options)
FLAVORS = {
    "varnish": ("flavor=varnish-shard replicas=20", ["--flavor", "varnish-shard",
                                                     "--replicas", "20"], {"replicas": 20}),
    "envoy_ring": ("flavor=envoy-ring min_ring_size=64", ["--flavor", "envoy-ring",
                                                          "--min-ring-size", "64"],
                   {"min_ring": 64}),
    "maglev": ("flavor=envoy-maglev table_size=251", ["--flavor", "envoy-maglev",
                                                      "--table-size", "251"],
               {"table_size": 251}),
    "haproxy": ("flavor=haproxy hash_function=djb2 avalanche",
                ["--flavor", "haproxy", "--hash-function", "djb2", "--avalanche"],
                {"function": "djb2", "avalanche": True}),
    "ketama": ("flavor=ketama-md5 variant=libmemcached-unweighted",
               ["--flavor", "ketama-md5", "--variant", "libmemcached-unweighted"], {}),
}
HTTP_FLAVORS = ["varnish", "envoy_ring", "maglev"]  # haproxy, ketama: test_flavors.py


def fleet(rng, flavor, first_octet):
    """12 servers on 127.41.N.i:9000 + i, weights 1..4 (ketama unweighted:
    weight 1), as `chash route` reads them."""
    lines = []
    for i in range(1, 13):
        weight = 1 if flavor == "ketama" else rng.randint(1, 4)
        lines.append("127.41.%d.%d:%d %d" % (first_octet, i, 9000 + i, weight))
    return common.parse_servers("\n".join(lines) + "\n")


def model_chain(flavor, servers, o, key, n):
    """The first n servers the program tries for key (indices)."""
    out = []

    def take(index):
        if index not in out:
            out.append(index)
        return len(out) == n

    if flavor == "varnish":
        named = [common.parse_servers("%s %s name=%s\n" % (s.addr, s.weight, s.addr))[0]
                 for s in servers]
        points = models.varnish_circle(named, o["replicas"])
        start = models.varnish_lookup(points, models.varnish_hash32(key))
        for step in range(len(points)):
            if take(points[(start + step) % len(points)][1]):
                break
    elif flavor in ("envoy_ring", "maglev"):
        h = models.xxh64(key)
        if flavor == "envoy_ring":
            ring, _, _ = models.envoy_ring(servers, o)
            choose, size = (lambda a: models.envoy_ring_choose(ring, h, a)), len(ring)
        else:
            table, _ = models.envoy_maglev(servers, o)
            choose, size = (lambda a: models.envoy_maglev_choose(table, h, a)), len(table)
        for attempt in range(size + 1):
            if take(choose(attempt)):
                break
    elif flavor == "haproxy":
        points = models.haproxy_ring(servers)
        h = models.haproxy_key_hash(key, {"function": o["function"],
                                          "avalanche": o["avalanche"], "balance": "uri-whole"})
        hashes = [p[0] for p in points]
        nxt = bisect_left(hashes, h) % len(points)
        prv = nxt - 1 if nxt > 0 else len(points) - 1
        start = prv if (h - hashes[prv]) & models.M32 <= (hashes[nxt] - h) & models.M32 else nxt
        for step in range(len(points)):
            if take(points[(start + step) % len(points)][1]):
                break
    else:
        name = models.libmemcached_key_hash_name("ketama", "keep")
        points = models.libmemcached_continuum(servers, "ketama", name)
        h = models.MEMCACHED_HASHES[name](key)
        start = bisect_left(points, (h, -1)) % len(points)
        for step in range(len(points)):
            if take(points[(start + step) % len(points)][1]):
                break
    return out


def run_cli(cli, *args, stdin=None):
    r = subprocess.run([cli, *args], input=stdin, capture_output=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError("chash %s: %s" % (" ".join(args), r.stderr.decode(errors="replace")))
    return r.stdout


def cli_first_picks(cli, servers_file, options, keys):
    out = run_cli(cli, "route", "--servers", servers_file, *options,
                  stdin=b"".join(k + b"\n" for k in keys))
    return [line.rpartition(b",")[2].decode() for line in out.split(b"\n")[:len(keys)]]


def random_keys(rng, n):
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789/._-"
    return [("/%d/" % i + "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))))
            .encode() for i in range(n)]


def prepare(args, rng, workdir, names):
    """{flavor: (servers, servers file, snapshot path)}"""
    out = {}
    for k, name in enumerate(names):
        servers = fleet(rng, name, k + 1)
        path = os.path.join(workdir, name + ".servers")
        with open(path, "w") as f:
            f.write("".join("%s %s\n" % (s.addr, s.weight) for s in servers))
        snap = os.path.join(workdir, name + ".chash")
        run_cli(args.chash_cli, "build", "--servers", path, *FLAVORS[name][1], "--out", snap)
        out[name] = (servers, path, snap)
    return out


def check_chains(args, label, name, servers, servers_file, keys, chains):
    """chains: {(side, key index): [addresses tried]} for side "lines" and "snap"."""
    params, options, o = FLAVORS[name]
    firsts = cli_first_picks(args.chash_cli, servers_file, options, keys)
    n = min(TRIES, len(servers))
    first = walks = same = 0
    bad = []
    for ki, key in enumerate(keys):
        lines, snap = chains.get(("lines", ki)), chains.get(("snap", ki))
        want = [servers[i].addr for i in model_chain(name, servers, o, key, n)]
        first += lines is not None and lines[:1] == [firsts[ki]]
        walks += lines == want
        same += lines is not None and snap == lines
        if lines != want and len(bad) < 3:
            bad.append((key, firsts[ki], want, lines))
    check(first == len(keys), "%s %s: %d of %d first picks = chash route: %s" %
          (label, name, first, len(keys), bad))
    check(walks == len(keys), "%s %s: %d of %d chains of %d = the model's: %s" %
          (label, name, walks, len(keys), n, bad))
    check(same == len(keys), "%s %s: %d of %d snapshot chains = the server lines'" %
          (label, name, same, len(keys)))
    print("%s %s (%s): first pick = chash route %d/%d, chains = the model %d/%d, "
          "snapshot = server lines %d/%d" % (label, name, params, first, len(keys), walks,
                                             len(keys), same, len(keys)), flush=True)


def run_http(args, rng, workdir):
    names = HTTP_FLAVORS
    fleets = prepare(args, rng, workdir, names)
    keys = random_keys(rng, args.keys)
    upstreams = []
    for name in names:
        servers, _, snap = fleets[name]
        upstreams.append(Upstream(name, "chash $http_x_key " + FLAVORS[name][0],
                                  [Server(s.addr, int(s.weight), False, "max_fails=0")
                                   for s in servers]))
        upstreams.append(Upstream(name + "_snap", "chash $http_x_key", [],
                                  extra="chash_snapshot %s max_fails=0;" % snap))
    harness.check_closed("http", upstreams,
                         [Server(s.addr) for f in fleets.values() for s in f[0]],
                         "%d keys" % len(keys))
    ngx = Nginx(module=args.module, keep=args.keep)
    started = time.monotonic()
    try:
        ngx.write_conf(upstreams, tries=TRIES)
        ngx.start()
        plan, i = {}, 0
        for u in upstreams:
            for ki, key in enumerate(keys):
                i += 1
                plan[str(i)] = (u.name, ki)
                ngx.send_key("/u/%s?i=%d" % (u.name, i), key)
        log = ngx.logged(plan, fields=True)
        print("http: %d requests in %.1f s" % (len(plan), time.monotonic() - started), flush=True)
        check(all(k in log for k in plan), "every request logged")
        for name in names:
            chains = {}
            for k, (u, ki) in plan.items():
                if k in log and u in (name, name + "_snap"):
                    chains[("snap" if u.endswith("_snap") else "lines", ki)] = \
                        log[k][1].split(", ")
            servers, path, _ = fleets[name]
            check_chains(args, "http", name, servers, path, keys, chains)
    finally:
        harness.stop_keeping_failures(ngx, args.keep)


def run_stream(args, rng, workdir):
    import stream_harness as sh
    names = list(FLAVORS)
    fleets = prepare(args, rng, workdir, names)
    clients = harness.client_addresses(rng, args.keys // 2)
    keys = [c.encode() for c in clients]
    upstreams = []
    for name in names:
        servers, _, snap = fleets[name]
        for u, bal, lines, extra in (
                (name, "chash $remote_addr " + FLAVORS[name][0],
                 [Server(s.addr, int(s.weight), False, "max_fails=0") for s in servers], ""),
                (name + "_snap", "chash $remote_addr", [],
                 "chash_snapshot %s max_fails=0;" % snap)):
            upstreams.append(sh.StreamUpstream(u, bal, lines, [sh.listen_port()], extra=extra))
    harness.check_closed("stream", upstreams,
                         [Server(s.addr) for f in fleets.values() for s in f[0]],
                         "%d client addresses" % len(clients))
    ngx = sh.StreamNginx(stream_module=args.stream_module, keep=args.keep)
    started = time.monotonic()
    try:
        ngx.write_stream_conf(upstreams, tries=TRIES)
        ngx.start()
        results = sh.run_clients(ngx, upstreams, clients, started)
        for name in names:
            chains = {}
            for (u, ki), session in results.items():
                if u in (name, name + "_snap"):
                    chains[("snap" if u.endswith("_snap") else "lines", ki)] = session.addrs
            servers, path, _ = fleets[name]
            check_chains(args, "stream", name, servers, path, keys, chains)
    finally:
        ngx.finish()


# ---------------------------------------------------------------- 2. migrations

MIGRATION_SEED = "7"
ROLLOUTS = ["0", "5%", "100%"]
# (program, set): HAProxy weight 1 with automatic ids, HAProxy weights 1..16
# with explicit ids, twemproxy md5 on port 11211
MIGRATION_SETS = [("haproxy", "default_uri_20"), ("haproxy", "sdbm_uri_25"),
                  ("twemproxy", "md5_20")]
LOG_VARS = ["$chash_ring_choice"]


def build_pair(cli, workdir, program, name, servers_file, o, servers):
    """The old program's ring and a pingora-v2 ring of its servers."""
    old = os.path.join(workdir, name + ".old.chash")
    new = os.path.join(workdir, name + ".new.chash")
    args = differential.CHASH_ADAPTERS[program](o, servers)
    if "--balance" in args:  # a route option: the keys sent are the bytes hashed
        i = args.index("--balance")
        del args[i:i + 2]
    run_cli(cli, "build", "--servers", servers_file, *args, "--out", old)
    plain = os.path.join(workdir, name + ".plain")
    with open(plain, "w") as f:
        f.write("".join("%s %s\n" % (s.addr, s.weight) for s in servers))
    run_cli(cli, "build", "--servers", plain, "--flavor", "pingora-v2", "--out", new)
    return old, new


def cli_routes(cli, old, new, rollout, keys):
    """(server, side) of each key, as `chash route --ring --new-ring` says."""
    out = run_cli(cli, "route", "--ring", old, "--new-ring", new, "--rollout", rollout,
              "--seed", MIGRATION_SEED, stdin=b"".join(k + b"\n" for k in keys))
    lines = out.split(b"\n")[:len(keys)]
    routes = []
    for k, line in zip(keys, lines):
        rest, _, side = line.rpartition(b",")
        key, _, addr = rest.rpartition(b",")
        check(key == k, "chash route answered key %r for %r" % (key[:40], k[:40]))
        routes.append((addr.decode(), side.decode()))
    return routes


def expected_moved(cli, old, new, rollout):
    out = run_cli(cli, "diff", "--ring", old, "--new-ring", new, "--rollout", rollout).decode()
    m = re.search(r"rollout\s+at [0-9.]+% of keys on the new ring: ([0-9.]+)% of keys expected "
                  r"to move", out)
    check(m is not None, "chash diff states the rollout's share: %r" % out[:300])
    return float(m.group(1)) / 100 if m else 0.0


def run_migrations(args, workdir):
    sets = []
    for program, name in MIGRATION_SETS:
        servers_file, options = next((sf, op) for n, sf, kf, op in tf.read_sets(program)
                                     if n == name)
        path = os.path.join(tf.DATA, program, servers_file)
        with open(path) as f:
            servers = common.parse_servers(f.read(), path)
        o = common.options_from_string(differential.DRIVERS[program], options)
        balance = o.get("balance") if program == "haproxy" else None
        rows = []
        for key, addr in tf.answers(os.path.join(tf.DATA, program, name + ".csv")):
            sent = models.haproxy_key_bytes(key, balance) if balance else key
            if tf.sendable(sent):
                rows.append((sent, addr))
        old, new = build_pair(args.chash_cli, workdir, program, name, path, o, servers)
        sets.append((program, name, servers, rows, old, new))

    upstreams = [Upstream(name, "chash $http_x_key", [], extra=(
        "chash_snapshot %s max_fails=0;\n        chash_migrate %s rollout=$arg_r seed=%s;"
        % (old, new, MIGRATION_SEED))) for program, name, servers, rows, old, new in sets]
    harness.check_closed("flavor migration", upstreams,
                         [harness.Server(s.addr) for _, _, servers, _, _, _ in sets
                          for s in servers])
    ngx = Nginx(module=args.module, keep=args.keep, log_vars=LOG_VARS)
    started = time.monotonic()
    try:
        ngx.write_conf(upstreams, tries=1)
        ngx.start()
        notices = re.findall(r"chash_(snapshot|migrate) \S+ in upstream \S+: flavor=([a-z0-9-]+)",
                             ngx.stderr_log())
        check(sorted(notices) == sorted(
            [("snapshot", "haproxy")] * 2 + [("snapshot", "ketama-md5")]
            + [("migrate", "pingora-v2")] * 3),
            "one load notice a file, with the file's flavor: %s" % notices)
        plan = {}
        i = 0
        for program, name, servers, rows, old, new in sets:
            for rollout in ROLLOUTS:
                for ki, (key, _) in enumerate(rows):
                    i += 1
                    plan[str(i)] = (name, rollout, ki)
                    ngx.send_key("/u/%s?i=%d&r=%s" % (name, i, rollout), key)
        log = ngx.logged(plan, fields=True)
        print("flavor migration: %d requests in %.1f s" % (len(plan), time.monotonic() - started),
              flush=True)
        check(all(k in log for k in plan), "every request logged")
        got = {v: (log[k][1].split(", ")[0], log[k][-1]) for k, v in plan.items() if k in log}
        for program, name, servers, rows, old, new in sets:
            keys = [k for k, _ in rows]
            sides = {}
            for rollout in ROLLOUTS:
                want = cli_routes(args.chash_cli, old, new, rollout, keys)
                same = sum(1 for ki in range(len(rows)) if got.get((name, rollout, ki)) == want[ki])
                check(same == len(rows), "%s rollout=%s: %d of %d first picks and sides as chash "
                      "route --ring --new-ring" % (name, rollout, same, len(rows)))
                sides[rollout] = {ki for ki in range(len(rows)) if want[ki][1] == "new"}
                moved = sum(1 for ki, (_, addr) in enumerate(rows)
                            if got.get((name, rollout, ki), ("",))[0] != addr)
                if rollout == "0":
                    old_side = sum(1 for ki in range(len(rows))
                                   if got.get((name, rollout, ki), ("", ""))[1] == "old")
                    check(moved == 0 and old_side == len(rows),
                          "%s rollout=0: %d of %d first picks are the real %s's, %d on the old "
                          "ring" % (name, len(rows) - moved, len(rows), program, old_side))
                    print("%s rollout=0: first pick = the real %s's answer %d/%d" %
                          (name, program, len(rows) - moved, len(rows)), flush=True)
                elif rollout == "5%":
                    p = expected_moved(args.chash_cli, old, new, rollout)
                    sd = math.sqrt(len(rows) * p * (1 - p))
                    check(abs(moved - len(rows) * p) <= 4 * sd + 1,
                          "%s rollout=5%%: %d of %d keys moved, chash diff expects %.2f%%" %
                          (name, moved, len(rows), 100 * p))
                    print("%s rollout=5%%: %d of %d keys moved (%.2f%%), chash diff expects %.2f%%"
                          % (name, moved, len(rows), 100 * moved / len(rows), 100 * p),
                          flush=True)
            check(sides["0"] <= sides["5%"] <= sides["100%"] and len(sides["100%"]) == len(rows),
                  "%s: raising the rollout only adds keys to the new side" % name)
    finally:
        harness.stop_keeping_failures(ngx, args.keep)


def refusals(args, workdir):
    """Snapshots of these flavors that nginx must refuse, with the reason."""
    servers = os.path.join(workdir, "refusals.servers")
    with open(servers, "w") as f:
        f.write("".join("127.0.31.%d:9000 %d\n" % (i, 1 + i % 3) for i in range(1, 9)))
    subset = os.path.join(workdir, "refusals.subset")
    with open(subset, "w") as f:
        f.write("127.0.31.1:9000\n127.0.31.2:9000\n")
    envoy = os.path.join(workdir, "envoy.chash")
    # chash 1.0.0's writer put subsets on weighted ketama rings; today's
    # refuses them, so the file is kept (tests/data/PROVENANCE.md).
    ketama = os.path.join(tf.DATA, "snapshot", "ketama-weighted-subsets-v1.4.chash")
    haproxy = os.path.join(workdir, "haproxy.chash")
    run_cli(args.chash_cli, "build", "--servers", servers, "--flavor", "envoy-ring", "--out", envoy)
    run_cli(args.chash_cli, "build", "--servers", servers, "--flavor", "haproxy", "--subset",
        "a=" + subset, "--out", haproxy)
    cases = [
        ("options", "chash $arg_k flavor=haproxy avalanche; chash_snapshot %s;" % haproxy,
         "come from the snapshot with chash_snapshot"),
        ("bounded", "chash $arg_k bounded_load=1.25; chash_snapshot %s;" % envoy,
         "flavor=envoy-ring, which bounded_load= is not for"),
        ("subsets", "chash $arg_k; chash_snapshot %s;" % ketama,
         "cannot answer exactly"),
    ]
    for label, body, want in cases:
        rc, out = nginx_t(args, body)
        check(rc != 0 and want in out, "nginx -t refuses %s: %r" % (label, out[-300:]))
    rc, out = nginx_t(args, "chash $arg_k subset=a; chash_snapshot %s;" % haproxy)
    check(rc == 0, "nginx -t takes a haproxy snapshot with subsets (HAProxy's ring masks "
          "exactly): %r" % out[-300:])
    print("flavor snapshots: nginx -t refuses %d cases and takes a haproxy ring with subsets"
          % len(cases), flush=True)


def nginx_t(args, body):
    balancer, _, extra = body.partition("; ")
    ngx = Nginx(module=args.module)
    try:
        ngx.write_conf([Upstream("u", balancer, [], extra=extra)])
        return ngx.test_config()
    finally:
        ngx.cleanup()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--module", help="ngx_http_upstream_chash_module.so: the HTTP tests")
    p.add_argument("--stream-module", help="ngx_stream_upstream_chash_module.so: stream")
    p.add_argument("--chash-cli", required=True)
    p.add_argument("--keys", type=int, default=200)
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--keep", action="store_true")
    args = p.parse_args()
    if not (args.module or args.stream_module):
        p.error("--module or --stream-module")
    rng = random.Random(args.seed)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="chash-flavor-upstreams-") as workdir:
        os.chmod(workdir, 0o755)
        if args.module:
            run_http(args, rng, workdir)
            run_migrations(args, workdir)
            refusals(args, workdir)
        if args.stream_module:
            run_stream(args, rng, workdir)
    print("%d checks failed; %.1f s" % (len(FAILURES), time.monotonic() - started))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
