#!/usr/bin/env python3
"""Records the golden sets of tests/data/{haproxy,varnish,twemproxy,libmemcached} from
the real programs, through the oracle drivers. Every fleet and key comes from a fixed
seed or is written out below, so a run on the same Debian packages rewrites the same
files; --verify asks the programs again and compares with the files instead.

    python3 tests/oracles/record_golden.py haproxy [--verify] [--only NAME]

Each directory gets sets.txt: NAME<TAB>SERVERS<TAB>KEYS<TAB>OPTIONS<TAB>WHAT, with the
answers in NAME.csv (`key,ADDR`, split at the LAST comma, '#' lines are comments).
"""

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import Server  # noqa: E402
import haproxy_oracle  # noqa: E402
import libmemcached_oracle  # noqa: E402
import nutcracker_oracle  # noqa: E402
import varnish_oracle  # noqa: E402

ROOT = os.path.normpath(os.path.join(common.HERE, "..", "data"))


class Fleet(list):
    """Servers shared by several sets: written once as NAME.servers."""

    def __init__(self, name, what, servers):
        super().__init__(servers)
        self.name, self.what = name, what


class GoldenSet:
    def __init__(self, name, servers, keys_name, options, what, fleet=None, fleet_what=None):
        self.name, self.servers, self.keys_name = name, servers, keys_name
        self.options, self.what = options, what
        if isinstance(servers, Fleet):
            fleet, fleet_what = servers.name, servers.what
        self.fleet = fleet or name  # the servers file is FLEET.servers
        self.fleet_what = fleet_what or what


def keys_from(rng, n, make, extra=()):
    keys = list(extra)
    seen = set(keys)
    for k in common.unique_keys(rng, n * 2, make):
        if len(keys) >= n:
            break
        if k not in seen:
            seen.add(k)
            keys.append(k)
    return keys


def keys_and_small_keys(seed, make, edge):
    """The memcached family's two key files: keys.txt (1,000 keys, seed) and
    keys_small.txt (300, seed + 1), each with the edge keys first."""
    return {
        "keys.txt": keys_from(random.Random(seed), 1000, make, edge),
        "keys_small.txt": keys_from(random.Random(seed + 1), 300, make, edge),
    }


# ================================================================ haproxy

def haproxy_keys():
    uri = bytes(range(0x21, 0x7F))
    hdr = bytes(b for b in range(0x21, 0x7F) if b != ord(","))

    def make_uri(r):
        k = common.random_key(r, uri, 160, high=True, prefix=b"/")
        if r.random() < 0.2:
            k = k[:30].replace(b"?", b"") + b"?" + common.random_key(r, uri, 50)
        return k

    def make_hdr(r):
        return common.random_key(r, hdr, 160, high=True, spaces=True).strip(b" ")

    edge_uri = [b"/", b"/?", b"/?a=1", b"//", b"/#frag", b"/a#b?c", b"/%00", b"/%23",
                b"/\xff\xfe", "/caf\u00e9".encode(), "/\u65e5\u672c/\u8a9e?q=\u00fc".encode(),
                b"/" + b"a" * 2000, b"/" + b"x/" * 1500, b"/?" + b"q" * 1000]
    edge_hdr = [b"a", b"a b", b"a\tb", b"x" * 2000, "\u00e9t\u00e9".encode(), b"\xff", b"#x",
                b"0", b"-1", b"4294967296"]
    edge_hdr = [k for k in edge_hdr if not k.startswith(b"#")]
    return {
        "keys_uri.txt": keys_from(random.Random(101), 800, make_uri, edge_uri),
        "keys_uri_small.txt": keys_from(random.Random(102), 300, make_uri, edge_uri[:12]),
        "keys_hdr_small.txt": keys_from(random.Random(103), 300, make_hdr, edge_hdr),
    }


def haproxy_sets():
    sets = []
    rng = random.Random(201)
    s20 = [Server(f"127.0.1.{i}:8080", 1) for i in range(1, 21)]
    sets.append(GoldenSet("default_uri_20", s20, "keys_uri.txt", "--balance uri --function default",
                          "20 servers weight 1, automatic ids 1..20; `hash-type consistent` "
                          "(sdbm + avalanche), balance uri"))
    s100 = []
    used = set()
    for i in range(1, 101):
        attrs = {}
        if rng.random() < 0.3:
            while True:
                sid = rng.randint(1, 400)
                if sid not in used:
                    break
            used.add(sid)
            attrs["id"] = str(sid)
        s100.append(Server(f"127.0.{2 + i // 200}.{i % 200 + 1}:{10000 + i}", rng.randint(1, 256), attrs))
    s100[0].weight = "256"
    s100[1].weight = "1"
    sets.append(GoldenSet("wide_100_uri_whole", s100, "keys_uri.txt",
                          "--balance uri-whole --function default",
                          "100 servers weights 1..256 (204k points), 30% explicit ids in "
                          "1..400 and the rest automatic; balance uri whole"))
    # every function, with and without avalanche, on one mixed fleet of 25
    s25 = []
    for i in range(1, 26):
        attrs = {"id": str(rng.choice([i, 3 * i + 7, 1000 + i]))} if i % 3 == 0 else {}
        if i % 5 == 0:
            attrs["name"] = f"app-{i}"
        s25.append(Server(f"127.0.4.{i}:{9000 + i}", rng.randint(1, 16), attrs))
    ids = set()
    for s in s25:
        if "id" in s.attrs:
            while s.attrs["id"] in ids:
                s.attrs["id"] = str(int(s.attrs["id"]) + 1)
            ids.add(s.attrs["id"])
    balances = iter(["uri", "hdr", "hdr", "uri-whole", "uri-whole", "uri", "hdr", "uri"])
    f25 = "25 servers weights 1..16, some explicit ids (3i, 3i+7 or 1000+i) and names"
    for f in ("sdbm", "djb2", "wt6", "crc32"):
        for aval in (False, True):
            b = next(balances)
            keys = "keys_hdr_small.txt" if b == "hdr" else "keys_uri_small.txt"
            opt = f"--balance {b} --function {f}" + (" --avalanche" if aval else "")
            sets.append(GoldenSet(f"{f}{'_avalanche' if aval else ''}_{b.replace('-', '_')}_25", s25, keys, opt,
                                  f"25 servers weights 1..16, some explicit ids and names; "
                                  f"hash-type consistent {f}{' avalanche' if aval else ''}, balance "
                                  f"{b.replace('-', ' ').replace('hdr', 'hdr(X-Key)')}",
                                  fleet="mixed_25", fleet_what=f25))
    sets.append(GoldenSet("default_hdr_25", s25, "keys_hdr_small.txt", "--balance hdr --function default",
                          "the 25 servers; `hash-type consistent`, balance hdr(X-Key)",
                          fleet="mixed_25", fleet_what=f25))
    # ids: explicit ids that wrap puid*4096 past 2^32 (1 and 2^20+1 give the same nodes),
    # the largest id, and automatic ids around explicit ones
    sid = [Server("127.0.5.1:80", 1, {"id": "1"}), Server("127.0.5.2:80", 1, {"id": "1048577"}),
           Server("127.0.5.3:80", 3, {"id": "2147483647"}), Server("127.0.5.4:80", 2),
           Server("127.0.5.5:80", 1, {"id": "3"}), Server("127.0.5.6:80", 1),
           Server("127.0.5.7:80", 4, {"id": "2097154"}), Server("127.0.5.8:80", 4, {"id": "2"}),
           Server("127.0.5.9:80", 1), Server("127.0.5.10:80", 2, {"id": "1048580"}),
           Server("127.0.5.11:80", 2), Server("127.0.5.12:80", 5, {"id": "4096"})]
    sets.append(GoldenSet("ids_wrap_uri", sid, "keys_uri_small.txt", "--balance uri --function default",
                          "explicit ids whose node keys wrap past 2^32 (id*4096+j): ids 1 and "
                          "1048577 (and 2 and 2097154, 4 and 1048580) get identical nodes, so "
                          "the tie rule decides; id 2147483647; automatic ids between"))
    # weight 0 servers: no nodes, but they still take automatic ids
    s0 = [Server(f"127.0.6.{i}:80", w) for i, w in enumerate([0, 3, 0, 0, 1, 7, 0, 2, 1, 0, 256, 1], 1)]
    sets.append(GoldenSet("weight0_uri", s0, "keys_uri_small.txt", "--balance uri --function djb2 --avalanche",
                          "12 servers, 5 of weight 0 (no nodes; automatic ids still counted); djb2 avalanche"))
    sets.append(GoldenSet("single_uri", [Server("127.0.7.1:80", 5)], "keys_uri_small.txt",
                          "--balance uri --function sdbm", "one server (haproxy hashes nothing)"))
    sets.append(GoldenSet("one_usable_hdr", [Server("127.0.7.2:80", 0), Server("127.0.7.3:80", 1)],
                          "keys_hdr_small.txt", "--balance hdr --function wt6",
                          "two servers, one of weight 0: one usable server, hash 0"))
    return sets


# ================================================================ varnish

def varnish_keys():
    url = bytes(range(0x21, 0x7F))

    def make_url(r):
        return common.random_key(r, url, 160, high=True, prefix=b"/")

    def make_key(r):
        return common.random_key(r, url, 160, high=True, spaces=True).strip(b" ")

    edge_url = [b"/", b"/?", b"/#x", b"/%00", "/caf\u00e9?x=\u00fc".encode(), b"/" + b"z" * 3000]
    edge_key = [b"a", b"a b", b"\xff", "\u00e9".encode(), b"x" * 3000, b"0", b"4294967295"]
    return {
        "keys_url.txt": keys_from(random.Random(301), 1000, make_url, edge_url),
        "keys_url_small.txt": keys_from(random.Random(302), 300, make_url, edge_url),
        "keys_key_small.txt": keys_from(random.Random(303), 300, make_key, edge_key),
    }


def varnish_int_keys(servers, replicas, rng, n):
    from models import varnish_circle
    points = varnish_circle(servers, replicas)
    first, last = points[0][0], points[-1][0]
    forged = {0, 1, first - 1, first, first + 1, last - 1, last, last + 1, 2 ** 32 - 1, 2 ** 32 - 2}
    forged.update(last + 1 + rng.randrange(2 ** 32 - 1 - last) for _ in range(20))
    for p, _ in rng.sample(points, min(40, len(points))):
        forged.update((p - 1, p, p + 1))
    forged = {x for x in forged if 0 <= x <= 2 ** 32 - 1}
    keys = sorted(forged)
    while len(keys) < n:
        keys.append(rng.randrange(2 ** 32))
    return [str(x).encode() for x in keys]


def varnish_sets():
    rng = random.Random(401)
    sets = []
    s20 = Fleet("web_20", "20 backends web1..web20, weight 1",
                [Server(f"127.0.10.{i}:80", 1, {"name": f"web{i}"}) for i in range(1, 21)])
    sets.append(GoldenSet("url_20", s20, "keys_url.txt", "--by url --replicas 67",
                          "20 backends weight 1, ident = backend name; by=URL, replicas 67"))
    s100 = Fleet("weights_100", "100 backends node_NNN, weights 1 2 3 5 8",
                 [Server(f"127.0.{11 + i // 200}.{i % 200 + 1}:{8000 + i}",
                         rng.choice(["1", "2", "3", "5", "8"]), {"name": f"node_{i:03d}"})
                  for i in range(100)])
    sets.append(GoldenSet("key_100_weights", s100, "keys_key_small.txt", "--by key --replicas 67",
                          "100 backends weights 1 2 3 5 8; by=KEY with key=vd.key(X-Key)"))
    sreal = [Server(f"127.0.12.{i}:80", w, {"name": f"r{i}"}) for i, w in
             enumerate(["1.5", "2.25", "1", "3.999", "1.01", "2.5", "6.7", "1.49"], 1)]
    sets.append(GoldenSet("url_real_weights", sreal, "keys_url_small.txt", "--by url --replicas 67",
                          "8 backends with REAL weights (replicas*weight truncated: 1.5 -> 100)"))
    sident = Fleet("idents_12", "12 backends with ident=cache-NN.dc1:11211",
                   [Server(f"127.0.13.{i}:80", 1, {"name": f"b{i}", "ident": f"cache-{i:02d}.dc1:11211"})
                    for i in range(1, 13)])
    sets.append(GoldenSet("url_idents_r10", sident, "keys_url_small.txt", "--by url --replicas 10",
                          "12 backends with ident=cache-NN.dc1:11211, replicas 10"))
    sets.append(GoldenSet("key_alt1", s20, "keys_key_small.txt", "--by key --replicas 67 --alt 1",
                          "the 20 backends, alt=1: the second distinct backend on the circle"))
    sets.append(GoldenSet("url_alt2", sident, "keys_url_small.txt", "--by url --replicas 10 --alt 2",
                          "the ident backends, alt=2"))
    # integer keys: forged at, around and above the last point (varnish does not wrap)
    for name, servers, replicas in (("int_20", s20, 67), ("int_50_r1", [
            Server(f"127.0.14.{i}:80", 1, {"name": f"s{i}"}) for i in range(1, 51)], 1),
            ("int_100_weights", s100, 67)):
        sets.append(GoldenSet(name, servers, f"keys_{name}.txt", f"--by int --replicas {replicas}",
                              f"{len(servers)} backends, replicas {replicas}; by=KEY integer keys "
                              f"forged at points, +-1, 0, 2^32-1 and ABOVE THE LAST POINT (no wrap)"))
    sets.append(GoldenSet("int_20_ties", s20, "keys_int_20_ties.txt", "--by int --replicas 67",
                          "the 20 backends web1..web20: ident and replica number are hashed "
                          "with no separator, so web1+\"10\" = web11+\"0\": 57 point values "
                          "belong to two backends; integer keys at every such value and +-1 "
                          "(the bisection and qsort's order of equal points decide)"))
    sets.append(GoldenSet("url_single", [Server("127.0.15.1:80", 1, {"name": "only"})],
                          "keys_url_small.txt", "--by url --replicas 67", "one backend"))
    return sets


def varnish_extra_keys(sets):
    out = {}
    rng = random.Random(402)
    for s in sets:
        if s.keys_name.endswith("_ties.txt"):
            from collections import Counter
            from models import varnish_circle
            o = common.options_from_string(varnish_oracle, s.options)
            points = varnish_circle(s.servers, o["replicas"])
            count = Counter(p for p, _ in points)
            shared = sorted(v for v, n in count.items() if n > 1)
            out[s.keys_name] = [str(x).encode() for v in shared for x in (v - 1, v, v + 1)]
        elif s.keys_name.startswith("keys_int"):
            o = common.options_from_string(varnish_oracle, s.options)
            out[s.keys_name] = varnish_int_keys(s.servers, o["replicas"], rng, 400)
    return out


# ================================================================ twemproxy

def twemproxy_keys():
    alpha = bytes(range(0x21, 0x7F))

    def make(r):
        k = common.random_key(r, alpha, 120, high=True)
        if r.random() < 0.2:
            k = k[:20] + b"{" + common.random_key(r, alpha, 12).replace(b"}", b"") + b"}" + k[20:40]
        return k[:250]

    edge = [b"a", b"k" * 250, b"x\ty", b"\x01\x02", b"\x7f", b"\xff\xfe", "caf\u00e9".encode(),
            b"{tag}rest", b"{}empty", b"a{b", b"}{", b"user:{1000}:profile", b"user:{1000}:cart"]
    return keys_and_small_keys(501, make, edge)


def twemproxy_sets():
    rng = random.Random(601)
    sets = []
    s20 = Fleet("ports_20", "20 servers HOST:PORT, weights 1..4",
                [Server(f"127.0.20.{i}:{22000 + i}", rng.randint(1, 4)) for i in range(1, 21)])
    s20d = Fleet("port11211_20", "20 servers on port 11211, weight 1",
                 [Server(f"127.0.21.{i}:11211", 1) for i in range(1, 21)])
    s20n = Fleet("named_20", "20 named servers cache-NN, weights 1..10",
                 [Server(f"127.0.22.{i}:{23000 + i}", rng.randint(1, 10), {"name": f"cache-{i:02d}"})
                  for i in range(1, 21)])
    fleets = [(s20, "20 servers HOST:PORT weights 1..4"),
              (s20d, "20 servers on port 11211 (the ring hashes HOST alone), weight 1"),
              (s20n, "20 named servers cache-NN (the ring hashes the name), weights 1..10")]
    for i, h in enumerate(nutcracker_oracle.HASHES):
        servers, what = fleets[i % 3]
        sets.append(GoldenSet(f"{h}_20", servers, "keys_small.txt", f"--hash {h}",
                              f"{what}; hash {h}"))
    s100 = Fleet("weights_100", "100 servers HOST:PORT, weights 1..300",
                 [Server(f"127.0.{23 + i // 200}.{i % 200 + 1}:{24000 + i}", rng.randint(1, 300))
                  for i in range(100)])
    sets.append(GoldenSet("md5_100_weights", s100, "keys.txt", "--hash md5",
                          "100 servers weights 1..300 (point counts rescaled in float32); md5 "
                          "(the libmemcached KETAMA_WEIGHTED ring for these HOST:PORT strings)"))
    sets.append(GoldenSet("fnv1a_64_tag_100", s100, "keys.txt", "--hash fnv1a_64 --hash-tag {}",
                          "the 100 servers; default hash fnv1a_64 (32-bit state), hash_tag {}"))
    sets.append(GoldenSet("murmur_tag_colon", s20n, "keys_small.txt", "--hash murmur --hash-tag ::",
                          "the named servers; hash_tag :: (the part between the first two ':')"))
    sets.append(GoldenSet("single", [Server("127.0.25.1:25001", 3)], "keys_small.txt", "--hash md5",
                          "one server (twemproxy skips hashing)"))
    return sets


# ================================================================ libmemcached

def libmemcached_keys():
    alpha = bytes(range(0x20, 0x7F)) + b"\t"

    def make(r):
        return common.random_key(r, alpha, 120, high=True)

    edge = [b"", b"a", b" ", b"k" * 250, b"x" * 600, b"\x00", b"\x01\x02", b"\xff\xfe",
            "caf\u00e9".encode(), b"foo bar", b"123456789"]
    return keys_and_small_keys(701, make, edge)


def libmemcached_sets():
    rng = random.Random(801)
    sets = []
    s100 = Fleet("ips_100", "100 servers HOST:PORT (not 11211), weight 1",
                 [Server(f"127.0.{30 + i // 200}.{i % 200 + 1}:{11300 + i}", 1) for i in range(100)])
    s100d = [Server(f"mc-{i:03d}.cache.internal:11211", 1) for i in range(100)]
    s20w = Fleet("mixed_20", "20 servers, weights 1..300, IPs and hostnames (on 11211)",
                 [Server(f"127.0.32.{i}:{11400 + i}" if i % 3 else f"memcache-{i}.local:11211",
                         rng.randint(1, 300)) for i in range(1, 21)])
    s20 = Fleet("ips_20", "20 servers weight 1, every fourth on port 11211",
                [Server(f"127.0.33.{i}:{11500 + i}" if i % 4 else f"127.0.33.{i}:11211", 1)
                 for i in range(1, 21)])
    sets.append(GoldenSet("weighted_100", s100, "keys.txt", "--mode weighted --hash keep",
                          "100 servers weight 1 (Debian's libmemcached asserts above 100); "
                          "KETAMA_WEIGHTED: 160 MD5 points each, MD5 key hash"))
    sets.append(GoldenSet("weighted_hostnames_11211", s100d, "keys_small.txt", "--mode weighted --hash keep",
                          "100 hostnames on port 11211: the labels are HOST-k (port left out)"))
    sets.append(GoldenSet("weighted_mixed_20", s20w, "keys_small.txt", "--mode weighted --hash keep",
                          "20 servers, weights 1..300, IPs and hostnames, some on 11211: float32 "
                          "point counts"))
    sets.append(GoldenSet("ketama_100", s100, "keys.txt", "--mode ketama --hash keep",
                          "100 servers, MEMCACHED_BEHAVIOR_KETAMA: 100 points each from "
                          "one-at-a-time (bytes >= 0x80 sign-extended), one-at-a-time key hash"))
    sets.append(GoldenSet("ketama_weights_switch", s20w, "keys_small.txt", "--mode ketama --hash keep",
                          "plain KETAMA but servers added with weight > 1: libmemcached switches "
                          "to the weighted MD5 continuum, the key hash stays one-at-a-time"))
    sets.append(GoldenSet("spy_20", s20, "keys_small.txt", "--mode spy --hash keep",
                          "CONSISTENT_KETAMA_SPY: labels /HOST:PORT-k (port always), 100 "
                          "one-at-a-time points"))
    sets.append(GoldenSet("spy_weighted", s20w, "keys_small.txt", "--mode spy --hash md5",
                          "KETAMA_SPY with weights > 1 (weighted MD5 points of /HOST:PORT-k), "
                          "md5 key hash"))
    for i, h in enumerate(["md5", "crc", "fnv1_64", "fnv1a_64", "fnv1_32", "fnv1a_32", "murmur",
                           "jenkins", "murmur3"]):
        mode = "ketama" if i % 2 == 0 else "weighted"
        sets.append(GoldenSet(f"{mode}_{h}_20", s20, "keys_small.txt", f"--mode {mode} --hash {h}",
                              f"20 servers (some on 11211); {mode} with key hash {h}"
                              + (" (it also hashes the 100 points)" if mode == "ketama" else "")))
    sets.append(GoldenSet("single", [Server("127.0.34.1:11211", 1)], "keys_small.txt",
                          "--mode weighted --hash keep", "one server (hash 0, no lookup)"))
    return sets


# ================================================================ driver

PROGRAMS = {
    "haproxy": (haproxy_oracle, haproxy_keys, haproxy_sets, None),
    "varnish": (varnish_oracle, varnish_keys, varnish_sets, varnish_extra_keys),
    "twemproxy": (nutcracker_oracle, twemproxy_keys, twemproxy_sets, None),
    "libmemcached": (libmemcached_oracle, libmemcached_keys, libmemcached_sets, None),
}


def record(program, verify=False, only=None, seconds=300):
    driver, keys_fn, sets_fn, extra_fn = PROGRAMS[program]
    out = os.path.join(ROOT, program)
    os.makedirs(out, exist_ok=True)
    keys = keys_fn()
    sets = sets_fn()
    if extra_fn:
        keys.update(extra_fn(sets))
    failures = 0
    index = ["# NAME\tSERVERS\tKEYS\tOPTIONS\tWHAT (answers: NAME.csv)"]
    written_servers = {}
    for s in sets:
        if only and s.name not in only:
            continue
        o = common.options_from_string(driver, s.options)
        # servers files are shared by identical fleets
        text = common.format_servers(s.servers)
        sname = written_servers.get(text)
        if sname is None:
            sname = f"{s.fleet}.servers"
            written_servers[text] = sname
            if not verify:
                with open(os.path.join(out, sname), "w") as f:
                    f.write(common.format_servers(s.servers, [s.fleet_what]))
        kname = s.keys_name
        if not verify:
            with open(os.path.join(out, kname), "wb") as f:
                f.write(common.format_keys(keys[kname]))
        started = time.monotonic()
        answers = driver.run(s.servers, keys[kname], o, seconds=seconds)
        took = time.monotonic() - started
        comments = [driver.provenance(), f"options: {s.options}", f"servers: {sname}  keys: {kname}",
                    s.what, "rows: key,ADDR (split at the LAST comma)"]
        data = common.format_answers(keys[kname], answers, comments)
        path = os.path.join(out, f"{s.name}.csv")
        if verify:
            old = [a for _, a in common.read_answers(path)]
            diff = sum(1 for a, b in zip(old, answers) if a != b) + abs(len(old) - len(answers))
            failures += diff
            print(f"{program}/{s.name}: {len(answers) - diff}/{len(answers)} as recorded "
                  f"({took:.1f}s)")
        else:
            with open(path, "wb") as f:
                f.write(data)
            print(f"{program}/{s.name}: {len(answers)} answers ({took:.1f}s)")
        index.append("\t".join([s.name, sname, kname, s.options, s.what]))
    if not verify and not only:
        with open(os.path.join(out, "sets.txt"), "w") as f:
            f.write("\n".join(index) + "\n")
    return failures


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("programs", nargs="+", choices=sorted(PROGRAMS))
    p.add_argument("--verify", action="store_true",
                   help="ask the programs again and compare with the recorded answers")
    p.add_argument("--only", nargs="*", help="only these set names")
    a = p.parse_args()
    failures = sum(record(prog, a.verify, a.only) for prog in a.programs)
    if a.verify:
        print(f"{failures} answers differ from the recorded ones")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
