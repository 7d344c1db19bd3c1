#!/usr/bin/env python3
"""flavor=resty in the chash nginx modules (resty.chash of lua-resty-balancer,
as OpenResty and Apache APISIX use it) against the real nginx: with every
connect refused, each request (HTTP) or session (stream, TCP) shows its
whole retry chain in $upstream_addr, and that chain must be

  - first pick: `chash route --mode resty` over a servers file of the same
    ids and weights, for every key (the down servers given as --down);
  - each retry: `chash route --mode resty --down` with the peers tried
    before it (and the down ones) down, for a sample of keys, and for every
    key the distinct walk of an independent model of resty.chash's ring
    (CRC32(ID || le32(prev)) chains from 0, weight x multiple points, the
    smallest id on equal hashes);

for server-line upstreams (ids: the address text as written, and
id=apisix's host NUL port), multiple=16 with down servers, and resty
snapshot upstreams written by `chash build --mode resty` (one with a
subset). Then nginx -t's refusals (multiple=, id=, the flavor of a
snapshot against the directive's) and an error found at upstream init that
names the upstream and its file:line.

    tests/nginx/test_resty.py --module HTTP_SO --chash-cli CHASH [--keys N]
    tests/nginx/test_resty.py --stream-module STREAM_SO --chash-cli CHASH

Exit status 0 only when every check ran and passed.
"""

import os
import random
import re
import subprocess
import sys
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import Nginx, Upstream, check  # noqa: E402

TRIES = 30
SAMPLE_KEYS = 25      # keys whose retries are each checked with `chash route --down`
SAMPLE_STEPS = 6


# ---------------------------------------------------------------- servers

def resty_servers(rng, ports, n, no_port=False):
    """n distinct server lines: IPv4:port, [::1]:port and (HTTP) IPv4
    without a port; weights 1..10."""
    mix = [("v4", 0.75), ("v6", 0.9), ("noport", 1)] if no_port else [("v4", 0.75), ("v6", 1)]
    return harness.random_servers(rng, ports, n, mix, first=1, params="max_fails=0")


def peer_name(text):
    """$upstream_addr of a server text: nginx adds port 80 when none is given."""
    if text.startswith("["):
        return text
    return text if ":" in text else text + ":80"


def apisix_id(text):
    return text.encode().replace(b":", b"\0")


# ---------------------------------------------------------------- the model

def resty_ring(ids, weights, multiple):
    """resty.chash's ring, independent of chash: (hashes, node indices);
    points chained from CRC32(id), equal hashes: the smallest id by bytes
    first."""
    return harness.crc32_ring([(zlib.crc32(node_id), weight, node_id)
                               for node_id, weight in zip(ids, weights)], multiple)


def model_chain(ring, servers, key, tries, members=None):
    """The peers tried with every connect refused: each node once in ring
    order from the key's point, down servers (and nodes outside members)
    skipped, at most tries and at most the live peers."""
    return [peer_name(servers[i].text)
            for i in harness.ring_walk(ring, servers, key, tries, members)]


# ---------------------------------------------------------------- chash route

class Cli:
    def __init__(self, path, workdir):
        self.path = path
        self.workdir = workdir
        self.n = 0

    def write(self, name, lines):
        path = os.path.join(self.workdir, name)
        with open(path, "w") as f:
            f.write("".join(line + "\n" for line in lines))
        return path

    def servers_file(self, servers):
        self.n += 1
        return self.write("s%d.servers" % self.n, ["%s %d" % (s.text, s.weight) for s in servers])

    def route(self, source, keys, multiple=None, down=()):
        """{key index: ADDR} of `chash route --mode resty`; source: the
        servers (a list) or a snapshot path."""
        self.n += 1
        if isinstance(source, str):
            cmd = [self.path, "route", "--ring", source]
        else:
            cmd = [self.path, "route", "--servers", self.servers_file(source), "--mode", "resty"]
        if multiple:
            cmd += ["--multiple", str(multiple)]
        if down:
            cmd += ["--down", self.write("d%d.down" % self.n, sorted(down))]
        cmd += ["--keys", self.write("k%d.keys" % self.n, keys)]
        return self.run_route(cmd, keys)

    def route_subset(self, ring_path, subset, keys):
        self.n += 1
        cmd = [self.path, "route", "--ring", ring_path, "--subset", subset,
               "--keys", self.write("k%d.keys" % self.n, keys)]
        return self.run_route(cmd, keys)

    @staticmethod
    def run_route(cmd, keys):
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if not check(out.returncode == 0, "%s: %s" % (" ".join(cmd[:4]), out.stderr[-300:])):
            return {}
        lines = out.stdout.splitlines()
        check(len(lines) == len(keys), "chash route answered %d lines for %d keys" %
              (len(lines), len(keys)))
        return {ki: line.rpartition(",")[2] for ki, line in enumerate(lines)}

    def build(self, servers, out, subsets=None, mode="resty"):
        cmd = [self.path, "build", "--servers", self.servers_file(servers), "--mode", mode,
               "--config-version", "1"]
        for name, members in (subsets or {}).items():
            cmd += ["--subset", "%s=%s" % (name, self.servers_file(members))]
        r = subprocess.run(cmd + ["--out", out], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError("chash build: " + r.stderr)
        return out

    def snapshots(self, snap_servers, other_servers, subsets=None):
        """A resty snapshot of snap_servers, and an nginx one of the first 5
        other servers (refused under flavor=resty): their paths."""
        return (self.build(snap_servers, os.path.join(self.workdir, "resty.chash"), subsets),
                self.build(other_servers[:5], os.path.join(self.workdir, "nginx.chash"),
                           mode="nginx"))


# ---------------------------------------------------------------- checks

def check_upstream(label, chains, keys, servers, ring, cli, route_source, multiple=None,
                   members=None, sample=True):
    """chains: {key index: [peer names tried]}."""
    down = {s.text for s in servers if s.down}
    # the model, every key, every retry
    same = 0
    for ki, key in enumerate(keys):
        want = model_chain(ring, servers, key, TRIES, members)
        if chains.get(ki) == want:
            same += 1
        elif same + 3 > ki:
            print("  %s key %r: nginx %s\n    model %s" % (label, key, chains.get(ki, [])[:6],
                                                          want[:6]))
    check(same == len(keys), "%s: %d of %d retry chains are the model's distinct walk" %
          (label, same, len(keys)))
    lengths = [len(chains.get(ki, [])) for ki in range(len(keys))]
    firsts = {chains[ki][0] for ki in chains if chains[ki]}
    check(max(lengths) == min(TRIES, sum(1 for k, s in enumerate(servers) if not s.down
                                         and (members is None or k in members))),
          "%s: longest chain %d" % (label, max(lengths)))
    check(len(firsts) > 1, "%s: %d distinct first peers" % (label, len(firsts)))
    # chash route: first picks of every key
    if members is not None:
        routes = cli.route_subset(route_source, "part", keys)
    else:
        routes = cli.route(route_source, keys, multiple, down)
    by_text = {s.text: peer_name(s.text) for s in servers}
    got = sum(1 for ki in range(len(keys))
              if chains.get(ki, [None])[:1] == [by_text.get(routes.get(ki))])
    check(got == len(keys), "%s: first pick = chash route on %d of %d keys" %
          (label, got, len(keys)))
    # chash route --down: each retry of a sample of keys, the peers tried
    # before it down
    steps = 0
    if sample and members is None:
        name_to_text = {peer_name(s.text): s.text for s in servers}
        bad = []
        for ki in range(0, len(keys), max(1, len(keys) // SAMPLE_KEYS)):
            chain = chains.get(ki, [])
            for j in range(1, min(len(chain), SAMPLE_STEPS)):
                dead = down | {name_to_text[a] for a in chain[:j]}
                r = cli.route(route_source, [keys[ki]], multiple, dead)
                steps += 1
                if by_text.get(r.get(0)) != chain[j]:
                    bad.append((keys[ki], j, chain[j], r.get(0)))
        check(not bad, "%s: retries = chash route --down: %d of %d differ, first %s" %
              (label, len(bad), steps, bad[:2]))
    print("%s: %d/%d chains = the model, first picks = chash route %d/%d, %d retries = "
          "chash route --down; tries 1..%d, %d distinct first peers" %
          (label, same, len(keys), got, len(keys), steps, max(lengths), len(firsts)), flush=True)


def nginx_t(args, stream, balancer, lines, hosts=None):
    """nginx -t of one upstream u with balancer and raw lines: (rc, output,
    conf path, the line of `upstream u {`). hosts: names /etc/hosts gets
    in nginx's private mount namespace."""
    if stream:
        import stream_harness as sh
        ngx = sh.StreamNginx(stream_module=args.stream_module, hosts=hosts)
        ngx.write_stream_conf([sh.StreamUpstream("u", balancer, [], [sh.listen_port()])])
    else:
        ngx = Nginx(module=args.module, hosts=hosts)
        ngx.write_conf([Upstream("u", balancer, [])])
    rc, out, text = ngx.test_edited(harness.upstream_lines(balancer, lines))
    line = next(i + 1 for i, t in enumerate(text.splitlines()) if t.strip() == "upstream u {")
    return rc, out, ngx.conf, line


def config_errors(args, stream, snap_resty, snap_nginx):
    k = "$remote_addr" if stream else "$arg_k"
    one = ["server 127.0.0.1:1;"]
    cases = [
        ("multiple=0", "chash %s flavor=resty multiple=0" % k, one, 'invalid parameter "multiple=0"'),
        ("multiple=x", "chash %s flavor=resty multiple=x" % k, one, 'invalid parameter "multiple=x"'),
        ("multiple with nginx", "chash %s multiple=16" % k, one,
         '"multiple=" is for flavor=pingora-v2 and flavor=resty only'),
        ("unknown id form", "chash %s flavor=resty id=host" % k, one,
         'invalid parameter "id=host": id= takes address'),
        ("id= with nginx", "chash %s id=apisix" % k, one, '"id=" is for flavor=resty only'),
        ("resty snapshot, nginx directive", "chash %s flavor=nginx" % k,
         ["chash_snapshot %s;" % snap_resty], "the snapshot is flavor=resty, the chash "
         "directive says flavor=nginx"),
        ("resty snapshot, pingora directive", "chash %s flavor=pingora-v1" % k,
         ["chash_snapshot %s;" % snap_resty], "check flavor failed"),
        ("nginx snapshot, resty directive", "chash %s flavor=resty" % k,
         ["chash_snapshot %s;" % snap_nginx], "the snapshot is flavor=nginx, the chash "
         "directive says flavor=resty"),
        ("multiple= with a resty snapshot", "chash %s flavor=resty multiple=16" % k,
         ["chash_snapshot %s;" % snap_resty], '"multiple=" comes from the snapshot'),
        ("id= with a snapshot", "chash %s flavor=resty id=apisix" % k,
         ["chash_snapshot %s;" % snap_resty], '"id=" is for server lines'),
    ]
    harness.check_refusals(lambda bal, lines: nginx_t(args, stream, bal, lines)[:2], [], cases)
    # accepted: the resty snapshot under flavor=resty and under no flavor
    for bal in ("chash %s flavor=resty" % k, "chash %s" % k):
        rc, out, _, _ = nginx_t(args, stream, bal, ["chash_snapshot %s;" % snap_resty])
        check(rc == 0, "errors: %s + a resty snapshot refused: %r" % (bal, out[-400:]))
    # errors found at upstream init name the upstream and its file:line
    multi = {"multi.chash.test": ["127.250.0.1", "127.250.0.2"]}
    init_cases = [
        ("a name of several addresses", "chash %s flavor=resty" % k,
         ["server 127.0.0.3:1;", "server multi.chash.test:1;"],
         r'flavor=resty: server "multi\.chash\.test:1" resolves to several addresses'),
        ("duplicate id", "chash %s flavor=resty" % k,
         ["server 127.0.0.1:1;", "server 127.0.0.3:1;", "server 127.0.0.1:1;"],
         r'flavor=resty: server "127\.0\.0\.1:1": node 2 .* same identity as node 0'),
        ("subset= without a snapshot", "chash %s flavor=resty subset=a" % k, one,
         r"chash subset= needs chash_snapshot"),
        ("server lines beside a snapshot", "chash %s" % k,
         ["chash_snapshot %s;" % snap_resty, "server 127.0.0.1:1;"],
         r"remove its `server` lines"),
        ("a bad snapshot", "chash %s" % k, ["chash_snapshot %s.none;" % snap_resty],
         r"chash_snapshot \S+: check io failed"),
    ]
    for label, bal, lines, pattern in init_cases:
        rc, out, conf, line = nginx_t(args, stream, bal, lines,
                                      multi if "multi" in lines[-1] else None)
        where = 'chash upstream "u" in %s:%d: ' % (conf, line)
        ok = rc != 0 and any(where in t and re.search(pattern, t) for t in out.splitlines())
        check(ok, "init errors: %s: wanted %r and /%s/ on one line: %r" %
              (label, where, pattern, out[-500:]))
        print("init errors: %s: %s" % (label, next((t for t in out.splitlines() if where in t),
                                                    "")[-160:]))


# ---------------------------------------------------------------- runs

def resty_notices(ngx, n):
    """The flavor=resty notices of the start (one a server-line upstream)."""
    notices = re.findall(r'chash upstream "resty\w*" in \S+:\d+: flavor=resty.*',
                         ngx.stderr_log())
    check(len(notices) == n, "error log: %d resty notices for %d server-line upstreams: %s"
          % (len(notices), n, notices))
    return notices


def run_http(args, rng, cli, workdir):
    ports = harness.PortPool(rng)
    keys = harness.random_keys(rng, args.keys)
    plain = resty_servers(rng, ports, args.servers, no_port=True)
    down = harness.with_down(rng, resty_servers(rng, ports, args.servers // 2, no_port=True),
                             0.2)
    apisix = resty_servers(rng, ports, args.servers // 2, no_port=False)
    snap_servers = resty_servers(rng, ports, args.servers // 2, no_port=True)
    part = snap_servers[::3]
    snap, snap_nginx = cli.snapshots(snap_servers, plain, subsets={"part": part})

    upstreams = [
        Upstream("resty", "chash $arg_k flavor=resty", plain),
        Upstream("resty16_down", "chash $arg_k flavor=resty multiple=16", down),
        Upstream("resty_apisix", "chash $arg_k flavor=resty id=apisix", apisix),
        Upstream("resty_snap", "chash $arg_k flavor=resty", [],
                 extra="chash_snapshot %s max_fails=0;" % snap),
        Upstream("resty_snap_part", "chash $arg_k subset=part", [],
                 extra="chash_snapshot %s max_fails=0;" % snap),
    ]
    all_servers = plain + down + apisix + snap_servers
    harness.check_closed("HTTP", upstreams, all_servers, "%d keys" % len(keys))
    ngx = Nginx(module=args.module, keep=args.keep)
    started = time.monotonic()
    try:
        ngx.write_conf(upstreams, tries=TRIES)
        ngx.start()
        notices = resty_notices(ngx, 3)
        check(any("id=apisix" in t for t in notices), "the notice names id=apisix")
        results, _ = harness.run_keys(ngx, [u.name for u in upstreams], keys)
        print("HTTP: %d requests in %.1f s" % (len(results), time.monotonic() - started),
              flush=True)
        statuses = {results[k][1] for k in results}
        check(statuses == {"502"}, "every request ends in 502 (all refused): %s" % statuses)

        def chains(name):
            return {ki: results[(name, ki)][0] for ki in range(len(keys))}

        ring = resty_ring([s.text.encode() for s in plain], [s.weight for s in plain], 160)
        check_upstream("http resty", chains("resty"), keys, plain, ring, cli, plain)
        ring = resty_ring([s.text.encode() for s in down], [s.weight for s in down], 16)
        check_upstream("http resty multiple=16, down", chains("resty16_down"), keys, down,
                       ring, cli, down, multiple=16)
        ring = resty_ring([apisix_id(s.text) for s in apisix], [s.weight for s in apisix], 160)
        # chash route reads ids from a text file: no NUL bytes; the model only
        same = sum(1 for ki, key in enumerate(keys)
                   if results[("resty_apisix", ki)][0] == model_chain(ring, apisix, key, TRIES))
        check(same == len(keys), "http resty id=apisix: %d of %d chains = the model" %
              (same, len(keys)))
        plain_ring = resty_ring([s.text.encode() for s in apisix], [s.weight for s in apisix],
                                160)
        differ = sum(1 for ki, key in enumerate(keys)
                     if results[("resty_apisix", ki)][0][:1]
                     != model_chain(plain_ring, apisix, key, 1))
        check(differ > len(keys) // 2, "id=apisix hashes other ids than id=address: %d of %d "
              "first picks differ" % (differ, len(keys)))
        print("http resty id=apisix: %d/%d chains = the model of host NUL port ids; %d first "
              "picks differ from the address ids" % (same, len(keys), differ))
        ring = resty_ring([s.text.encode() for s in snap_servers],
                          [s.weight for s in snap_servers], 160)
        check_upstream("http resty snapshot", chains("resty_snap"), keys, snap_servers, ring,
                       cli, snap)
        members = {k for k, s in enumerate(snap_servers) if s in part}
        check_upstream("http resty snapshot subset", chains("resty_snap_part"), keys,
                       snap_servers, ring, cli, snap, members=members)
    finally:
        ngx.finish()
    config_errors(args, False, snap, snap_nginx)


def run_stream(args, rng, cli, workdir):
    import stream_harness as sh
    ports = harness.PortPool(rng)
    nkeys = args.keys
    clients = harness.client_addresses(rng, nkeys)
    plain = resty_servers(rng, ports, args.servers)
    down = harness.with_down(rng, resty_servers(rng, ports, args.servers // 2), 0.2)
    snap_servers = resty_servers(rng, ports, args.servers // 2)
    snap, snap_nginx = cli.snapshots(snap_servers, plain)
    upstreams = []
    for name, bal, servers, extra in (
            ("resty", "chash $remote_addr flavor=resty", plain, ""),
            ("resty16_down", "chash $remote_addr flavor=resty multiple=16", down, ""),
            ("resty_snap", "chash $remote_addr", [],
             "chash_snapshot %s max_fails=0;" % snap)):
        upstreams.append(sh.StreamUpstream(name, bal, servers, [sh.listen_port()], extra=extra))
    harness.check_closed("stream", upstreams, plain + down + snap_servers,
                         "%d client addresses" % nkeys)
    ngx = sh.StreamNginx(stream_module=args.stream_module, keep=args.keep)
    started = time.monotonic()
    try:
        ngx.write_stream_conf(upstreams, tries=TRIES)
        ngx.start()
        resty_notices(ngx, 2)
        results = sh.run_clients(ngx, upstreams, clients, started)
        statuses = {results[k].status for k in results}
        check(statuses == {"502"}, "every session ends in 502 (all refused): %s" % statuses)

        def chains(name):
            return {ki: results[(name, ki)].addrs for ki in range(nkeys) if (name, ki) in results}

        ring = resty_ring([s.text.encode() for s in plain], [s.weight for s in plain], 160)
        check_upstream("stream resty", chains("resty"), clients, plain, ring, cli, plain)
        ring = resty_ring([s.text.encode() for s in down], [s.weight for s in down], 16)
        check_upstream("stream resty multiple=16, down", chains("resty16_down"), clients, down,
                       ring, cli, down, multiple=16)
        ring = resty_ring([s.text.encode() for s in snap_servers],
                          [s.weight for s in snap_servers], 160)
        check_upstream("stream resty snapshot", chains("resty_snap"), clients, snap_servers,
                       ring, cli, snap)
    finally:
        ngx.finish()
    config_errors(args, True, snap, snap_nginx)


def main():
    ap = harness.arg_parser("ngx_http_upstream_chash_module.so: the HTTP tests", keys=600,
                            servers=120, seed=20261201, module_required=False)
    ap.add_argument("--stream-module", help="ngx_stream_upstream_chash_module.so: the stream tests")
    ap.add_argument("--chash-cli", required=True, help="the chash command")
    args = ap.parse_args()
    if bool(args.module) == bool(args.stream_module):
        ap.error("one of --module and --stream-module")
    if not os.access(args.chash_cli, os.X_OK):
        ap.error("no chash command at %s" % args.chash_cli)
    started = time.monotonic()
    rng = random.Random(args.seed)
    with harness.work_dir("chash-resty-", args.keep) as workdir:
        cli = Cli(args.chash_cli, workdir)
        if args.stream_module:
            run_stream(args, rng, cli, workdir)
        else:
            run_http(args, rng, cli, workdir)
    return harness.summary(started)


if __name__ == "__main__":
    sys.exit(main())
