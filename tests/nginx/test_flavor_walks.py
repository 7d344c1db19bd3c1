#!/usr/bin/env python3
"""The other programs' flavors whose recorded answers a `server` line cannot
replay (Varnish's shard director keys its ring by backend name, Envoy's
recorded sets by request hash), and every one of them in the stream module:
upstreams of `server` lines with flavor=varnish-shard, envoy-ring,
envoy-maglev (and, in stream, haproxy and ketama-md5), and the same rings as
`chash_snapshot` files `chash build` wrote, every connect refused so that
$upstream_addr shows the whole chain. Checked, key by key:

  - first pick: `chash route` over the same servers (whose answers equal the
    real programs' on tests/data's recorded sets: tests/cli and
    tests/oracles);
  - the chain: the independent ring models of tests/oracles/models.py:
    Varnish's shard_lookup (no wrap at the top) then its walk, each backend
    once; Envoy's retry attempts (the next ring entry, Maglev's mutated
    hash), each host once as Envoy's previous_hosts predicate skips them;
    HAProxy's nearest point then its walk; ketama's successor walk;
  - the snapshot upstream's chain is the server-line upstream's.

HTTP keys are an X-Key header; stream keys are the client's address.

    tests/nginx/test_flavor_walks.py --module HTTP_SO --chash-cli CHASH
    tests/nginx/test_flavor_walks.py --stream-module STREAM_SO --chash-cli CHASH

Exit status 0 only when every check ran and passed.
"""

import argparse
import os
import random
import socket
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
import models  # noqa: E402

FAILURES = harness.FAILURES
check = harness.check
TRIES = 5
SEED = 20261203

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
    r = subprocess.run([cli, *args], input=stdin, capture_output=True, timeout=120)
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


def send(port, upstream, i, key):
    req = (b"GET /u/%s?i=%d HTTP/1.1\r\nHost: t\r\nX-Key: %s\r\nConnection: close\r\n\r\n"
           % (upstream.encode(), i, key))
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(req)
        while s.recv(65536):
            pass


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
    n = harness.check_refused([Server(s.addr) for f in fleets.values() for s in f[0]], {})
    print("http: %d upstreams, %d addresses checked closed, %d keys" %
          (len(upstreams), n, len(keys)), flush=True)
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
                send(ngx.port, u.name, i, key)
        deadline = time.monotonic() + 30
        log = ngx.access_fields()
        while not all(k in log for k in plan) and time.monotonic() < deadline:
            time.sleep(0.1)
            log = ngx.access_fields()
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
    import test_stream
    names = list(FLAVORS)
    fleets = prepare(args, rng, workdir, names)
    clients = harness.client_addresses(rng, args.keys // 2)
    keys = [c.encode() for c in clients]
    upstreams, port_of = [], {}
    for name in names:
        servers, _, snap = fleets[name]
        for u, bal, lines, extra in (
                (name, "chash $remote_addr " + FLAVORS[name][0],
                 [Server(s.addr, int(s.weight), False, "max_fails=0") for s in servers], ""),
                (name + "_snap", "chash $remote_addr", [],
                 "chash_snapshot %s max_fails=0;" % snap)):
            port_of[u] = sh.listen_port()
            upstreams.append(sh.StreamUpstream(u, bal, lines, [port_of[u]], extra=extra))
    n = harness.check_refused([Server(s.addr) for f in fleets.values() for s in f[0]], {})
    print("stream: %d upstreams, %d addresses checked closed, %d client addresses" %
          (len(upstreams), n, len(clients)), flush=True)
    ngx = sh.StreamNginx(stream_module=args.stream_module, keep=args.keep)
    started = time.monotonic()
    try:
        ngx.write_stream_conf(upstreams, tries=TRIES)
        ngx.start()
        plan = [((u.name, ki), src, port_of[u.name])
                for ki, src in enumerate(clients) for u in upstreams]
        results = test_stream.run_tcp(ngx, plan)
        print("stream: %d TCP sessions in %.1f s" % (len(plan), time.monotonic() - started),
              flush=True)
        check(len(results) == len(plan), "stream: %d of %d sessions logged" %
              (len(results), len(plan)))
        for name in names:
            chains = {}
            for (u, ki), session in results.items():
                if u in (name, name + "_snap"):
                    chains[("snap" if u.endswith("_snap") else "lines", ki)] = session.addrs
            servers, path, _ = fleets[name]
            check_chains(args, "stream", name, servers, path, keys, chains)
    finally:
        ngx.finish()


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
    with tempfile.TemporaryDirectory(prefix="chash-flavor-walks-") as workdir:
        os.chmod(workdir, 0o755)
        if args.module:
            run_http(args, rng, workdir)
        if args.stream_module:
            run_stream(args, rng, workdir)
    print("%d checks failed; %.1f s" % (len(FAILURES), time.monotonic() - started))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
