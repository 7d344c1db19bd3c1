#!/usr/bin/env python3
"""Leaving HAProxy or twemproxy for nginx without flushing the caches: an
upstream whose chash_snapshot is the old program's ring (flavor=haproxy,
ketama-md5 twemproxy, built by `chash build` from a recorded golden set's
servers, tests/data/PROVENANCE.md) and whose chash_migrate is a pingora-v2
ring of the same servers, every connect refused. Checked, key by key over
every key of the set that a header can carry:

  - rollout=0: the first pick is the real program's recorded answer, and
    $chash_ring_choice is "old";
  - rollout=0, 5%, 100%: the first pick and the side equal `chash route
    --ring OLD --new-ring NEW --rollout R --seed 7`;
  - 5%: the share of keys whose server changed is the share `chash diff
    --rollout 5%` expects, within 4 standard deviations of a binomial draw;
    raising the rollout only adds keys to the new side;

then the snapshot refusals these flavors bring: the ring's options on the
directive, bounded_load= on an Envoy snapshot, subsets on a ring that masks
inexactly (weighted ketama).

    tests/nginx/test_flavor_migration.py --module HTTP_SO --chash-cli CHASH

Exit status 0 only when every check ran and passed.
"""

import argparse
import math
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "oracles"))
import harness  # noqa: E402
from harness import Nginx, Upstream  # noqa: E402
import common  # noqa: E402
import differential  # noqa: E402
import models  # noqa: E402
import test_flavors as tf  # noqa: E402  (answers, sendable, send, read_sets)

FAILURES = harness.FAILURES
check = harness.check
SEED = "7"
ROLLOUTS = ["0", "5%", "100%"]
# (program, set): HAProxy weight 1 with automatic ids, HAProxy weights 1..16
# with explicit ids, twemproxy md5 on port 11211
SETS = [("haproxy", "default_uri_20"), ("haproxy", "sdbm_uri_25"), ("twemproxy", "md5_20")]
LOG_VARS = ["$chash_ring_choice"]


def run(cli, *args, stdin=None):
    r = subprocess.run([cli, *args], input=stdin, capture_output=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError("chash %s: %s" % (" ".join(args), r.stderr.decode(errors="replace")))
    return r.stdout


def build_pair(cli, workdir, program, name, servers_file, o, servers):
    """The old program's ring and a pingora-v2 ring of its servers."""
    old = os.path.join(workdir, name + ".old.chash")
    new = os.path.join(workdir, name + ".new.chash")
    args = differential.CHASH_ADAPTERS[program](o, servers)
    if "--balance" in args:  # a route option: the keys sent are the bytes hashed
        i = args.index("--balance")
        del args[i:i + 2]
    run(cli, "build", "--servers", servers_file, *args, "--out", old)
    plain = os.path.join(workdir, name + ".plain")
    with open(plain, "w") as f:
        f.write("".join("%s %s\n" % (s.addr, s.weight) for s in servers))
    run(cli, "build", "--servers", plain, "--flavor", "pingora-v2", "--out", new)
    return old, new


def cli_routes(cli, old, new, rollout, keys):
    """(server, side) of each key, as `chash route --ring --new-ring` says."""
    out = run(cli, "route", "--ring", old, "--new-ring", new, "--rollout", rollout,
              "--seed", SEED, stdin=b"".join(k + b"\n" for k in keys))
    lines = out.split(b"\n")[:len(keys)]
    routes = []
    for k, line in zip(keys, lines):
        rest, _, side = line.rpartition(b",")
        key, _, addr = rest.rpartition(b",")
        check(key == k, "chash route answered key %r for %r" % (key[:40], k[:40]))
        routes.append((addr.decode(), side.decode()))
    return routes


def send(port, upstream, rollout, i, key):
    req = (b"GET /u/%s?i=%d&r=%s HTTP/1.1\r\nHost: t\r\nX-Key: %s\r\n"
           b"Connection: close\r\n\r\n" % (upstream.encode(), i, rollout.encode(), key))
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(req)
        while s.recv(65536):
            pass


def expected_moved(cli, old, new, rollout):
    out = run(cli, "diff", "--ring", old, "--new-ring", new, "--rollout", rollout).decode()
    m = re.search(r"rollout\s+at [0-9.]+% of keys on the new ring: ([0-9.]+)% of keys expected "
                  r"to move", out)
    check(m is not None, "chash diff states the rollout's share: %r" % out[:300])
    return float(m.group(1)) / 100 if m else 0.0


def migrations(args, workdir):
    sets = []
    for program, name in SETS:
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
        % (old, new, SEED))) for program, name, servers, rows, old, new in sets]
    n = harness.check_refused([harness.Server(s.addr) for _, _, servers, _, _, _ in sets
                               for s in servers], {})
    print("flavor migration: %d upstreams, %d addresses checked closed" % (len(upstreams), n),
          flush=True)
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
                    send(ngx.port, name, rollout, i, key)
        deadline = time.monotonic() + 30
        log = ngx.access_fields()
        while not all(k in log for k in plan) and time.monotonic() < deadline:
            time.sleep(0.1)
            log = ngx.access_fields()
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
    ketama = os.path.join(workdir, "ketama-subsets.chash")
    haproxy = os.path.join(workdir, "haproxy.chash")
    run(args.chash_cli, "build", "--servers", servers, "--flavor", "envoy-ring", "--out", envoy)
    run(args.chash_cli, "build", "--servers", servers, "--flavor", "ketama-md5", "--variant",
        "libmemcached-weighted", "--subset", "a=" + subset, "--out", ketama)
    run(args.chash_cli, "build", "--servers", servers, "--flavor", "haproxy", "--subset",
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
    p.add_argument("--module", required=True)
    p.add_argument("--chash-cli", required=True)
    p.add_argument("--keep", action="store_true")
    args = p.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="chash-flavor-migration-") as workdir:
        os.chmod(workdir, 0o755)
        migrations(args, workdir)
        refusals(args, workdir)
    print("%d checks failed; %.1f s" % (len(FAILURES), time.monotonic() - started))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
