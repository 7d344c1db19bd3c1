#!/usr/bin/env python3
"""The other programs' flavors in the chash nginx module (HTTP): an upstream
of the `server` lines of a recorded golden set of the real HAProxy,
libmemcached or twemproxy (tests/data/PROVENANCE.md), each key sent in an
X-Key header as the bytes the program hashed (HAProxy's `balance uri` keeps
the path before `?`, `balance hdr` the first comma-separated value, blanks
trimmed: the hashing rules of tests/oracles/models.py), every connect
refused so that $upstream_addr shows the retry chain. Checked:

  - first pick: the real program's recorded answer (NAME.csv), every key
    that a header can carry (no CR, LF, NUL, no blank at either end: nginx
    trims them);
  - retries: the ring's own walk, each server once in point order from the
    key's point (HAProxy: from the nearer point, then the next tree nodes;
    ketama: from the first point at or after the key's hash), computed on
    the independent ring models of tests/oracles/models.py;

  - `down` servers: some sets again, in an upstream of their own, with the
    3 servers that answer most of their first DOWN_KEYS keys marked `down`.
    HAProxy removes a down server from its tree and unweighted libmemcached
    ketama leaves its points out: first pick and retries are the model's
    ring of the other servers (HAProxy's with their same ids: its points
    are keyed by server id), the keys of the up servers keep the real
    program's answer. Weighted ketama's program rebuilds its continuum,
    which the module does not: there a down server is skipped along the
    full ring's walk;

then nginx -t's refusals of bad options.

    tests/nginx/test_flavors.py --module HTTP_SO

Exit status 0 only when every check ran and passed.
"""

import argparse
import os
import sys
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

DATA = os.path.join(HERE, "..", "data")
TRIES = 6
FAILURES = harness.FAILURES
check = harness.check

# (program, set): the sets whose servers are plain addresses nginx takes;
# HAProxy's weight-0 servers (no nodes, nginx refuses weight=0) are left out.
SETS = [
    ("haproxy", "default_uri_20"), ("haproxy", "wide_100_uri_whole"),
    ("haproxy", "sdbm_uri_25"), ("haproxy", "sdbm_avalanche_hdr_25"),
    ("haproxy", "djb2_hdr_25"), ("haproxy", "djb2_avalanche_uri_whole_25"),
    ("haproxy", "wt6_uri_whole_25"), ("haproxy", "wt6_avalanche_uri_25"),
    ("haproxy", "crc32_hdr_25"), ("haproxy", "crc32_avalanche_uri_25"),
    ("haproxy", "default_hdr_25"), ("haproxy", "ids_wrap_uri"), ("haproxy", "single_uri"),
    ("libmemcached", "weighted_100"), ("libmemcached", "ketama_100"),
    ("libmemcached", "spy_20"), ("libmemcached", "ketama_md5_20"),
    ("libmemcached", "weighted_crc_20"), ("libmemcached", "ketama_fnv1_64_20"),
    ("libmemcached", "weighted_fnv1a_32_20"), ("libmemcached", "ketama_murmur3_20"),
    ("twemproxy", "fnv1a_64_20"), ("twemproxy", "md5_20"), ("twemproxy", "crc16_20"),
    ("twemproxy", "murmur_20"), ("twemproxy", "fnv1a_64_tag_100"), ("twemproxy", "hsieh_20"),
]

# (program, set, more parameters): run again with DOWN_SERVERS servers
# `down`, DOWN_KEYS keys; bounded_load with every connect refused passes no
# node over (no peer holds a connection): the same chains, through the
# capacity's code
DOWN_SETS = [
    ("haproxy", "default_uri_20", ""), ("haproxy", "default_uri_20", "bounded_load=1.25"),
    ("haproxy", "sdbm_avalanche_hdr_25", ""), ("haproxy", "crc32_hdr_25", ""),
    ("haproxy", "wide_100_uri_whole", ""), ("libmemcached", "ketama_100", ""),
    ("libmemcached", "ketama_md5_20", ""), ("libmemcached", "weighted_crc_20", ""),
]
DOWN_SERVERS = 3
DOWN_KEYS = 200

# `chash route` options (differential.py's adapters) -> the directive's
CLI_TO_NGINX = {"--flavor": "flavor", "--hash-function": "hash_function",
                "--avalanche": "avalanche", "--variant": "variant", "--key-hash": "key_hash",
                "--replicas": "replicas", "--hash-tag": "hash_tag", "--balance": None}


def read_sets(program):
    with open(os.path.join(DATA, program, "sets.txt")) as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                yield tuple(line.split("\t")[:4])


def answers(path):
    rows = []
    with open(path, "rb") as f:
        for line in f.read().split(b"\n"):
            if line and not line.startswith(b"#"):
                key, _, addr = line.rpartition(b",")
                rows.append((key, addr.decode()))
    return rows


def directive(program, o, servers):
    """The chash directive's parameters for the set, and the balance."""
    args = differential.CHASH_ADAPTERS[program](o, servers)
    params, balance, i = [], None, 0
    while i < len(args):
        name = CLI_TO_NGINX[args[i]]
        has_value = i + 1 < len(args) and not args[i + 1].startswith("--")
        if args[i] == "--balance":
            balance = args[i + 1]
        elif has_value:
            # quoted: a hash_tag of braces is nginx's block syntax
            params.append('"%s=%s"' % (name, args[i + 1]))
        else:
            params.append(name)
        i += 2 if has_value else 1
    if program == "haproxy" and any("id" in s.attrs for s in servers):
        params.append("server_ids=" + ",".join(s.attrs.get("id", "0") for s in servers))
    return params, balance


def ring_points(program, o, servers):
    """Sorted (hash, server index) points of the independent model, and
    the key's hash function and start rule."""
    if program == "haproxy":
        return models.haproxy_ring(servers)
    if program == "libmemcached":
        hname = models.libmemcached_key_hash_name(o["mode"], o["hash"])
        return models.libmemcached_continuum(servers, o["mode"], hname)
    return models.twemproxy_continuum(servers)


def key_hash(program, o, servers, key):
    if program == "haproxy":
        used = sum(1 for s in servers if int(s.weight) > 0)
        return 0 if used == 1 else models.haproxy_key_hash(key, o)
    if program == "libmemcached":
        hname = models.libmemcached_key_hash_name(o["mode"], o["hash"])
        return 0 if len(servers) == 1 else models.MEMCACHED_HASHES[hname](key)
    part = models.twemproxy_hashed_part(key, o.get("hash_tag", "").encode())
    return models.MEMCACHED_HASHES[o["hash"]](part) if part else 0


def removes_down(program, params):
    """Whether the program takes a down server out of the ring (and the
    ring of the others is what its model of those servers builds): HAProxy,
    libmemcached's unweighted ketamas; not its weighted ones, which rebuild
    with every point count renormalised."""
    return program == "haproxy" or any(p in params for p in (
        '"variant=libmemcached-unweighted"', '"variant=libmemcached-spy"'))


def ring_without(program, o, servers, down):
    """The model's ring of the servers not in down, (hash, index in
    servers): HAProxy's with their same ids, libmemcached's continuum of
    the others."""
    left = [x for x in range(len(servers)) if x not in down]
    kept = [servers[x] for x in left]
    if program == "haproxy":
        ids = models.haproxy_ids(servers)
        kept = [common.Server(s.addr, s.weight, dict(s.attrs, id=str(ids[x])))
                for x, s in zip(left, kept)]
    return [(h, left[x]) for h, x in ring_points(program, o, kept)]


def model_chain(program, points, h, n):
    """The first n distinct servers of the ring's walk from the key's point."""
    hashes = [p[0] for p in points]
    i = bisect_left(hashes, h)
    nxt = i if i < len(points) else 0
    start = nxt
    if program == "haproxy":
        prv = nxt - 1 if nxt > 0 else len(points) - 1
        if (h - hashes[prv]) & models.M32 <= (hashes[nxt] - h) & models.M32:
            start = prv
    out = []
    for step in range(len(points)):
        idx = points[(start + step) % len(points)][1]
        if idx not in out:
            out.append(idx)
            if len(out) == n:
                break
    return out


def sendable(key):
    return not any(c in key for c in b"\r\n\0") and key == key.strip(b" \t")


def run(args):
    sets = []
    for program, name in SETS:
        servers_file, options = next((sf, op) for n, sf, kf, op in read_sets(program) if n == name)
        path = os.path.join(DATA, program, servers_file)
        with open(path) as f:
            servers = common.parse_servers(f.read(), path)
        o = common.options_from_string(differential.DRIVERS[program], options)
        params, balance = directive(program, o, servers)
        sets.append((program, name, servers, o, params, balance,
                     answers(os.path.join(DATA, program, name + ".csv"))))
    upstreams = []
    for program, name, servers, o, params, balance, rows in sets:
        lines = [Server(s.addr, int(s.weight), False, "max_fails=0") for s in servers]
        upstreams.append(Upstream(name, "chash $http_x_key " + " ".join(params), lines))
    downs = []
    for (program, name, servers, o, params, balance, rows), (_, _, extra) in (
            (st, d) for d in DOWN_SETS for st in sets if st[:2] == d[:2]):
        keep = [(key, addr) for key, addr in rows
                if sendable(models.haproxy_key_bytes(key, balance) if balance else key)]
        keep = keep[:DOWN_KEYS]
        index = {s.addr: x for x, s in enumerate(servers)}
        answered = sorted(range(len(servers)),
                          key=lambda x: (-sum(a == servers[x].addr for _, a in keep), x))
        down = set(answered[:DOWN_SERVERS])
        lines = [Server(s.addr, int(s.weight), x in down, "max_fails=0")
                 for x, s in enumerate(servers)]
        more = [extra] if extra else []
        upstream = "_".join([name, "down"] + [m.split("=")[0] for m in more])
        upstreams.append(Upstream(upstream, " ".join(["chash $http_x_key"] + params + more),
                                  lines))
        downs.append((upstream, " ".join([name] + more), program, servers, o, params, balance,
                      keep, down, index))
    n = harness.check_refused([u for up in upstreams for u in up.servers], {})
    print("flavors: %d upstreams, %d addresses checked closed" % (len(upstreams), n), flush=True)
    ngx = Nginx(module=args.module, keep=args.keep)
    started = time.monotonic()
    try:
        ngx.write_conf(upstreams, tries=TRIES)
        ngx.start()
        i = 0
        plan = {}
        for program, name, servers, o, params, balance, rows in sets:
            for key, addr in rows:
                sent = models.haproxy_key_bytes(key, balance) if balance else key
                if not sendable(sent):
                    continue
                i += 1
                plan[str(i)] = (name, key, addr)
                ngx.send_key("/u/%s?i=%d" % (name, i), sent)
        for upstream, _, program, servers, o, params, balance, rows, _, _ in downs:
            for key, addr in rows:
                i += 1
                plan[str(i)] = (upstream, key, addr)
                ngx.send_key("/u/%s?i=%d" % (upstream, i),
                             models.haproxy_key_bytes(key, balance) if balance else key)
        log = ngx.logged(plan)
        print("flavors: %d requests in %.1f s" % (len(plan), time.monotonic() - started),
              flush=True)
        check(all(k in log for k in plan), "every request logged")
        for program, name, servers, o, params, balance, rows in sets:
            points = ring_points(program, o, servers)
            ids = [k for k, (nm, _, _) in plan.items() if nm == name]
            first = chains = 0
            bad = []
            for k in ids:
                _, key, addr = plan[k]
                got = log.get(k, ([], "", ""))[0]
                if got[:1] == [addr]:
                    first += 1
                elif len(bad) < 3:
                    bad.append((key[:40], addr, got[:1]))
                if name == "ids_wrap_uri":
                    continue  # identical node keys: the model has no tie rule
                h = key_hash(program, o, servers, key)
                want = [servers[x].addr
                        for x in model_chain(program, points, h, min(TRIES, len(servers)))]
                if got == want:
                    chains += 1
                elif len(bad) < 3:
                    bad.append((key[:40], "chain", want, got))
            skipped = len(rows) - len(ids)
            check(first == len(ids) and len(ids) > 0,
                  "%s/%s: first pick = the real program's on %d of %d keys: %s" %
                  (program, name, first, len(ids), bad))
            if name != "ids_wrap_uri":
                check(chains == len(ids), "%s/%s: %d of %d retry chains = the model's walk: %s"
                      % (program, name, chains, len(ids), bad))
            print("%s/%s (%s): first pick = %s %d/%d, chains of %d = the ring's walk %d/%d"
                  "%s" % (program, name, " ".join(params)[:70], program, first, len(ids),
                          TRIES, chains, len(ids),
                          ", %d keys no header can carry" % skipped if skipped else ""),
                  flush=True)
        for case in downs:
            check_down(case, plan, log)
    finally:
        harness.stop_keeping_failures(ngx, args.keep)


def check_down(case, plan, log):
    """One set's keys on its upstream with servers `down`: each retry chain
    is the ring without them (the programs that remove a down server) or
    the full ring's walk with them skipped (weighted ketama); a key whose
    recorded server is up keeps it."""
    upstream, name, program, servers, o, params, balance, rows, down, index = case
    removes = removes_down(program, params)
    if removes:
        points = ring_without(program, o, servers, down)
    else:
        points = ring_points(program, o, servers)
    tries = min(TRIES, len(servers) - len(down))
    ids = [k for k, (nm, _, _) in plan.items() if nm == upstream]
    firsts = chains = kept = moved = 0
    bad = []
    for k in ids:
        _, key, addr = plan[k]
        got = log.get(k, ([], "", ""))[0]
        h = key_hash(program, o, servers, key)
        if removes:
            want = model_chain(program, points, h, tries)
        else:
            want = [x for x in model_chain(program, points, h, len(servers))
                    if x not in down][:tries]
        want = [servers[x].addr for x in want]
        firsts += got[:1] == want[:1]
        if got == want:
            chains += 1
        elif len(bad) < 3:
            bad.append((key[:40], want, got))
        if index[addr] in down:
            moved += 1
        elif got[:1] == [addr]:
            kept += 1
        elif len(bad) < 3:
            bad.append((key[:40], "kept", addr, got[:1]))
    rule = "the ring without them" if removes else "the walk skipping them"
    check(chains == len(ids) and len(ids) > 0,
          "%s/%s with %d down: %d of %d chains = %s: %s"
          % (program, name, len(down), chains, len(ids), rule, bad))
    check(kept + moved == len(ids), "%s/%s with %d down: %d of %d keys of up servers kept"
          " the real program's answer: %s" % (program, name, len(down), kept,
                                              len(ids) - moved, bad))
    print("%s/%s with %d down: %d keys (%d of the down servers): first picks %d/%d and chains"
          " of %d %d/%d = %s, the up servers' keys = %s %d/%d"
          % (program, name, len(down), len(ids), moved, firsts, len(ids), tries, chains,
             len(ids), rule, program, kept, len(ids) - moved), flush=True)


def nginx_t(args, balancer, lines):
    ngx = Nginx(module=args.module)
    ngx.write_conf([Upstream("u", balancer, [Server(t) for t in lines])])
    try:
        return ngx.test_config()
    finally:
        ngx.cleanup()


def config_errors(args):
    one = ["127.0.0.1:1", "127.0.0.2:1"]
    cases = [
        # libchash's flavor table says what an option takes and whose it is.
        ("bad hash function", "chash $arg_k flavor=haproxy hash_function=md5",
         'invalid parameter "hash_function=md5": haproxy option hash_function must be '
         "one of sdbm, djb2, wt6, crc32, got 'md5'"),
        ("avalanche with ketama", "chash $arg_k flavor=ketama-md5 avalanche",
         '"avalanche" is not an option of flavor=ketama-md5: \'avalanche\' is an option of '
         "haproxy, not of flavor ketama-md5 (its options: variant, key_hash, default_port, "
         "hash_tag)"),
        ("an option twice", "chash $arg_k flavor=varnish-shard replicas=3 replicas=4",
         '"replicas" is given twice'),
        ("a typo", "chash $arg_k flavor=ketama-md5 varaint=twemproxy",
         'invalid parameter "varaint=twemproxy"'),
        ("a switch with a value", "chash $arg_k flavor=haproxy avalanche=yes",
         "haproxy option avalanche must be on or off, got 'yes'"),
        ("an option without its flavor", "chash $arg_k replicas=3",
         '"replicas=3" is not an option of flavor=nginx'),
        ("envoy hash function name", "chash $arg_k flavor=envoy-ring hash_function=sdbm",
         'invalid parameter "hash_function=sdbm"'),
        ("bad variant", "chash $arg_k flavor=ketama-md5 variant=memcached",
         'invalid parameter "variant=memcached"'),
        ("bad key hash", "chash $arg_k flavor=ketama-md5 key_hash=sha1",
         'invalid parameter "key_hash=sha1"'),
        ("port 0", "chash $arg_k flavor=ketama-md5 default_port=0",
         'invalid parameter "default_port=0"'),
        ("replicas 0", "chash $arg_k flavor=varnish-shard replicas=0",
         'invalid parameter "replicas=0"'),
        ("a table size not prime", "chash $arg_k flavor=envoy-maglev table_size=65536",
         "flavor=envoy-maglev: the maglev table size must be a prime"),
        ("bad server id", "chash $arg_k flavor=haproxy server_ids=1,x",
         'invalid parameter "server_ids=1,x"'),
        ("server ids of another count", "chash $arg_k flavor=haproxy server_ids=1,2,3",
         "server_ids= names 3 ids for 2 servers"),
        ("bounded_load with Envoy", "chash $arg_k flavor=envoy-ring bounded_load=1.25",
         '"bounded_load=" is not for flavor=envoy-ring'),
        ("multiple= with haproxy", "chash $arg_k flavor=haproxy multiple=16",
         '"multiple=" is for flavor=pingora-v2 and flavor=resty only (flavor=haproxy has '
         "its program's own point count)"),
        ("bounded_load with Maglev", "chash $arg_k flavor=envoy-maglev bounded_load=1.25",
         '"bounded_load=" is not for flavor=envoy-maglev'),
        ("server ids on ketama", "chash $arg_k flavor=ketama-md5 server_ids=1,2",
         '"server_ids=1,2" is not an option of flavor=ketama-md5 (its servers take no '
         "server id)"),
    ]
    for label, bal, message in cases:
        rc, out = nginx_t(args, bal, one)
        check(rc != 0 and message in out, "errors: %s: nginx -t says %r" % (label, out[-400:]))
        print("errors: %s: refused: %s" % (label, message))
    for bal in ("chash $arg_k flavor=haproxy hash_function=djb2 avalanche server_ids=3,0",
                "chash $arg_k flavor=ketama-md5 variant=twemproxy key_hash=fnv1a_64 hash_tag=::",
                "chash $arg_k flavor=varnish-shard replicas=10",
                "chash $arg_k flavor=envoy-ring min_ring_size=64 max_ring_size=4096 "
                "hash_function=murmur_hash_2",
                # Envoy's own field names, the options' aliases
                "chash $arg_k flavor=envoy-ring minimum_ring_size=64 maximum_ring_size=4096",
                "chash $arg_k flavor=haproxy avalanche=off hash_function=crc32",
                "chash $arg_k flavor=envoy-maglev table_size=251"):
        rc, out = nginx_t(args, bal, one)
        check(rc == 0, "accepted: %s: %r" % (bal, out[-400:]))
        print("accepted: " + bal)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", required=True, help="ngx_http_upstream_chash_module.so")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    started = time.monotonic()
    run(args)
    config_errors(args)
    print("%d checks failed; %.1f s" % (len(FAILURES), time.monotonic() - started))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
