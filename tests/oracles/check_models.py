#!/usr/bin/env python3
"""Checks models.py against every golden answer recorded from the real programs
(tests/data/{haproxy,varnish,twemproxy,libmemcached}) and against Envoy's own test
expectations and hash vectors (tests/data/envoy). Prints counts per set and exits
non-zero on any mismatch.

It then runs the MUTANTS: each is the model with one documented quirk undone (a
successor lookup for HAProxy's nearest one, a wrapping lookup for Varnish's, a true
64-bit FNV for twemproxy's "fnv1a_64", ...). Every mutant must disagree with at least
one recorded answer: that shows the golden data pin the quirk down, so a test built
on them can fail. An uncaught mutant is a failure too.

    python3 tests/oracles/check_models.py [--program NAME ...] [--no-mutants]
"""

import argparse
import contextlib
import os
import shlex
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import models  # noqa: E402
import haproxy_oracle  # noqa: E402
import libmemcached_oracle  # noqa: E402
import nutcracker_oracle  # noqa: E402
import varnish_oracle  # noqa: E402

DATA = os.path.normpath(os.path.join(common.HERE, "..", "data"))
U64 = 2 ** 64 - 1

ROUTED = {
    "haproxy": (haproxy_oracle, models.haproxy_route),
    "varnish": (varnish_oracle, lambda s, o, k: models.varnish_route(s, o, k)),
    "twemproxy": (nutcracker_oracle, lambda s, o, k: models.twemproxy_route(s, o, k)),
    "libmemcached": (libmemcached_oracle, lambda s, o, k: models.libmemcached_route(s, o, k)),
}


def read_sets(program):
    rows = []
    with open(os.path.join(DATA, program, "sets.txt"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, servers, keys, options, what = line.rstrip("\n").split("\t")
            rows.append((name, servers, keys, options, what))
    return rows


def check_routed(program, quiet=False):
    """(agreeing answers, total answers) over every set of PROGRAM."""
    driver, route = ROUTED[program]
    d = os.path.join(DATA, program)
    good = total = 0
    for name, sfile, kfile, options, _ in read_sets(program):
        servers = common.read_servers(os.path.join(d, sfile))
        keys = common.read_keys(os.path.join(d, kfile))
        rows = common.read_answers(os.path.join(d, f"{name}.csv"))
        if [k for k, _ in rows] != keys:
            raise SystemExit(f"{program}/{name}: the csv's keys are not {kfile}'s")
        got = route(servers, common.options_from_string(driver, options), keys)
        ok = sum(1 for (_, want), g in zip(rows, got) if want == g)
        good += ok
        total += len(rows)
        if not quiet:
            flag = "" if ok == len(rows) else "   <-- MISMATCH"
            print(f"  {program}/{name}: {ok}/{len(rows)}{flag}")
            if ok != len(rows):
                for (k, want), g in zip(rows, got):
                    if want != g:
                        print(f"      key {k[:80]!r}: real {want}, model {g}")
                        break
    return good, total


# ---------------------------------------------------------------- Envoy


def envoy_options(text):
    o = {"lb": "ring_hash"}
    args = shlex.split(text)
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--use-hostname":
            o["use_hostname"] = True
            i += 1
            continue
        v = args[i + 1]
        if a == "--lb":
            o["lb"] = v
        elif a == "--min-ring-size":
            o["min_ring"] = int(v)
        elif a == "--max-ring-size":
            o["max_ring"] = int(v)
        elif a == "--hash":
            o["hash"] = v
        elif a == "--table-size":
            o["table_size"] = int(v)
        elif a == "--locality-weights":
            o["locality_weights"] = [int(x) for x in v.split(",")]
        else:
            raise SystemExit(f"envoy option {a}?")
        i += 2
    return o


class EnvoyLb:
    def __init__(self, servers, o):
        self.servers, self.o = servers, o
        if o["lb"] == "ring_hash":
            self.ring, self.counts, self.size = models.envoy_ring(servers, o)
        else:
            self.table, self.counts = models.envoy_maglev(servers, o)
            if len(self.counts) == 1:  # Envoy's DegenerateMaglevTable: stats 1/1
                self.counts = {k: 1 for k in self.counts}

    def choose(self, h, attempt=0):
        if self.o["lb"] == "ring_hash":
            return self.servers[models.envoy_ring_choose(self.ring, h, attempt)].addr
        return self.servers[models.envoy_maglev_choose(self.table, h, attempt)].addr


def check_envoy_set(d, name, sfile, kfile, options):
    servers = common.read_servers(os.path.join(d, sfile))
    o = envoy_options(options)
    lb = EnvoyLb(servers, o)
    checks = []  # (description, ok)
    if kfile != "-":
        for key, want in common.read_answers(os.path.join(d, f"{name}.csv")):
            h = int(key)
            checks.append((f"chooseHost({h}) = {want}", lb.choose(h) == want))
    path = os.path.join(d, f"{name}.expect")
    if os.path.exists(path):
        sweep = None
        counts = {}
        stat = {}
        if o["lb"] == "ring_hash":
            stat = {"ring_size": lb.size, "min_hashes_per_host": min(lb.counts.values()),
                    "max_hashes_per_host": max(lb.counts.values())}
        else:
            stat = {"min_entries_per_host": min(lb.counts.values()),
                    "max_entries_per_host": max(lb.counts.values())}
        with open(path) as f:
            lines = [l.split() for l in f if l.strip() and not l.startswith("#")]
        for parts in lines:
            kind = parts[0]
            if kind in stat:
                checks.append((" ".join(parts), stat[kind] == int(parts[1])))
            elif kind == "point":
                entries = {(servers[i].addr, h) for h, i in lb.ring}
                checks.append((" ".join(parts), (parts[1], int(parts[2])) in entries))
            elif kind == "attempt":
                h, a, want = int(parts[1]), int(parts[2]), parts[3]
                checks.append((" ".join(parts), lb.choose(h, a) == want))
            elif kind in ("sweep_div", "sweep_seq"):
                n = int(parts[1])
                hashes = [i * (U64 // n) for i in range(n)] if kind == "sweep_div" else range(n)
                counts = {s.addr: 0 for s in servers}
                for h in hashes:
                    counts[lb.choose(h)] += 1
                sweep = n
            elif kind == "count":
                checks.append((f"{' '.join(parts)} (of {sweep})", counts.get(parts[1]) == int(parts[2])))
            elif kind == "zero_count_hosts":
                zeros = sum(1 for c in counts.values() if c == 0)
                checks.append((" ".join(parts), zeros == int(parts[1])))
            else:
                raise SystemExit(f"{path}: unknown line {parts}")
    return checks


def check_envoy(quiet=False, prefix="", hashes=True):
    d = os.path.join(DATA, "envoy")
    good = total = 0
    for name, sfile, kfile, options, _ in read_sets("envoy"):
        if not name.startswith(prefix):
            continue
        checks = check_envoy_set(d, name, sfile, kfile, options)
        ok = sum(1 for _, c in checks if c)
        good += ok
        total += len(checks)
        if not quiet:
            flag = "" if ok == len(checks) else "   <-- MISMATCH"
            print(f"  envoy/{name}: {ok}/{len(checks)} assertions{flag}")
            for desc, c in checks:
                if not c:
                    print(f"      failed: {desc}")
                    break
    if not hashes:
        return good, total
    # hash vectors: Envoy's tests and the real libxxhash / libstdc++ answers
    fun = {"xxh64": lambda data, seed: models.xxh64(data, seed),
           "murmur2_64": lambda data, seed: models.murmur2_64_libstdcxx(data, seed)}
    ok = n = 0
    with open(os.path.join(d, "hash_envoy_tests.csv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, seed, data, want = line.strip().split(",")
            n += 1
            ok += fun[name](bytes.fromhex(data), int(seed)) == int(want)
    if not quiet:
        print(f"  envoy/hash_envoy_tests: {ok}/{n}" + ("" if ok == n else "   <-- MISMATCH"))
    good, total = good + ok, total + n
    ok = n = 0
    with open(os.path.join(d, "hash_vectors.csv"), "rb") as f:
        for line in f.read().split(b"\n"):
            if not line or line.startswith(b"#"):
                continue
            key, a, b, c = line.rsplit(b",", 3)
            n += 3
            ok += models.xxh64(key, 0) == int(a)
            ok += models.xxh64(key, 1) == int(b)
            ok += models.murmur2_64_libstdcxx(key) == int(c)
    if not quiet:
        print(f"  envoy/hash_vectors (libxxhash, libstdc++): {ok}/{n}" + ("" if ok == n else "   <-- MISMATCH"))
    return good + ok, total + n


# ---------------------------------------------------------------- mutants


@contextlib.contextmanager
def patched(obj, name, value):
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


def m_haproxy_successor(nodes, keys_only, h):
    from bisect import bisect_left
    i = bisect_left(keys_only, h)
    return nodes[i if i < len(nodes) else 0][1]


def m_haproxy_ids_sequential(servers):
    return list(range(1, len(servers) + 1))


def m_haproxy_ids_explicit_not_reserved(servers):
    ids, next_id = [], 1
    for s in servers:
        ids.append(int(s.attrs["id"]) if "id" in s.attrs else next_id)
        next_id += 1
    return ids


def m_haproxy_tie_prev_first(nodes, keys_only, h):
    # duplicates: the previous group's FIRST node instead of its last
    from bisect import bisect_left
    i = bisect_left(keys_only, h)
    nxt = i if i < len(nodes) else 0
    prv = nxt - 1 if nxt > 0 else len(nodes) - 1
    prv = bisect_left(keys_only, keys_only[prv])
    dp = (h - nodes[prv][0]) & 0xFFFFFFFF
    dn = (nodes[nxt][0] - h) & 0xFFFFFFFF
    return nodes[prv][1] if dp <= dn else nodes[nxt][1]


def m_varnish_wrap(points, key):
    from bisect import bisect_left
    i = bisect_left([p for p, _ in points], key)
    return i if i < len(points) else 0


def m_varnish_first_equal(points, key):
    # lower_bound: the FIRST of equal points, not the one the bisection lands on
    from bisect import bisect_left
    i = bisect_left([p for p, _ in points], key)
    return min(i, len(points) - 1)


def m_varnish_from_one(servers, replicas):
    n = len(servers)
    points = []
    for index, s in enumerate(servers):
        ident = (s.attrs.get("ident") or s.attrs["name"]).encode()
        r = models.varnish_replicas(s.weight, replicas)
        for j in range(1, r + 1):
            points.append((models.varnish_hash32(ident, str(j).encode()), index))
    points.sort(key=lambda p: p[0])
    return points


def m_varnish_round(weight, replicas):
    return int(round(replicas * max(float(weight), 1.0)))


def m_fnv1a_64_true(data):
    h = 0xcbf29ce484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h & 0xFFFFFFFF


def m_unsigned_one_at_a_time(data):
    v = 0
    for b in data:
        v = (v + b) & 0xFFFFFFFF
        v = (v + (v << 10)) & 0xFFFFFFFF
        v ^= v >> 6
    v = (v + (v << 3)) & 0xFFFFFFFF
    v ^= v >> 11
    return (v + (v << 15)) & 0xFFFFFFFF


def m_crc16_masked(data):
    return models.crc16_twemproxy(data) & 0xFFFF


def m_twemproxy_name_ignored(s):
    host, port = s.host_port()
    return host if port == 11211 else f"{host}:{port}"


def m_twemproxy_port_kept(s):
    return s.attrs.get("name") or s.addr


def m_ketama_no_wrap_points(points, h):
    from bisect import bisect_left
    i = bisect_left(points, (h, -1))
    return points[min(i, len(points) - 1)][1]


def m_envoy_ring_no_wrap(ring, h):
    from bisect import bisect_left
    i = bisect_left([e[0] for e in ring], h)
    return min(i, len(ring) - 1)


def mutant_list():
    """(program, what the mutant gets wrong, the models attribute it replaces,
    its value)."""
    hashes = dict(models.MEMCACHED_HASHES)
    return [
        ("haproxy", "successor lookup (ketama) instead of the nearest point",
         "haproxy_lookup", m_haproxy_successor),
        ("haproxy", "server ids 1..N in order, explicit ids ignored",
         "haproxy_ids", m_haproxy_ids_sequential),
        ("haproxy", "automatic ids may reuse a later server's explicit id",
         "haproxy_ids", m_haproxy_ids_explicit_not_reserved),
        ("haproxy", "equal node keys: the previous group's first server, not its last",
         "haproxy_lookup", m_haproxy_tie_prev_first),
        ("varnish", "a key above the last point wraps to point 0",
         "varnish_lookup", m_varnish_wrap),
        ("varnish", "equal points: the first of them (lower_bound), not the bisection's",
         "varnish_lookup", m_varnish_first_equal),
        ("varnish", "points numbered 1..replicas (as the manual says), not 0..replicas-1",
         "varnish_circle", m_varnish_from_one),
        ("varnish", "replicas*weight rounded, not truncated",
         "varnish_replicas", m_varnish_round),
        ("twemproxy", "fnv1a_64 as a true 64-bit FNV-1a (unsigned bytes)",
         "MEMCACHED_HASHES", dict(hashes, fnv1a_64=m_fnv1a_64_true)),
        ("twemproxy", "crc32 as all 32 bits (not 15)",
         "MEMCACHED_HASHES", dict(hashes, crc32=models.crc32_full)),
        ("twemproxy", "crc16 kept to 16 bits",
         "MEMCACHED_HASHES", dict(hashes, crc16=m_crc16_masked)),
        ("twemproxy", "the server name is not hashed (HOST:PORT instead)",
         "twemproxy_name", m_twemproxy_name_ignored),
        ("twemproxy", "port 11211 kept in the hashed HOST:PORT",
         "twemproxy_name", m_twemproxy_port_kept),
        ("libmemcached", "one-at-a-time with unsigned bytes",
         "MEMCACHED_HASHES", dict(hashes, default=m_unsigned_one_at_a_time,
                                  one_at_a_time=m_unsigned_one_at_a_time)),
        ("libmemcached", "no wrap past the last point",
         "ketama_lower_bound", m_ketama_no_wrap_points),
        ("envoy", "ring lookup without the wrap to entry 0",
         "envoy_ring_lookup", m_envoy_ring_no_wrap),
    ]


def run_mutants(programs):
    failures = 0
    for program, desc, name, value in mutant_list():
        if program not in programs:
            continue
        with patched(models, name, value):
            if program == "envoy":  # the ring mutant: the ring sets only
                good, total = check_envoy(quiet=True, prefix="ring_", hashes=False)
            else:
                good, total = check_routed(program, quiet=True)
        caught = total - good
        status = "caught" if caught else "NOT CAUGHT"
        failures += caught == 0
        print(f"  mutant {program}: {desc}: {status} by {caught} of {total}")
    return failures


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--program", nargs="*", default=list(ROUTED) + ["envoy"],
                   choices=list(ROUTED) + ["envoy"])
    p.add_argument("--no-mutants", action="store_true")
    a = p.parse_args()
    started = time.monotonic()
    bad = 0
    for program in a.program:
        print(f"{program}:")
        good, total = check_envoy() if program == "envoy" else check_routed(program)
        print(f"{program}: the model agrees with {good} of {total}"
              + (" answers" if program != "envoy" else " assertions"))
        bad += total - good
    mutants_missed = 0 if a.no_mutants else run_mutants(a.program)
    print(f"{bad} mismatches, {mutants_missed} mutants not caught "
          f"({time.monotonic() - started:.1f}s)")
    return 1 if bad or mutants_missed else 0


if __name__ == "__main__":
    sys.exit(main())
