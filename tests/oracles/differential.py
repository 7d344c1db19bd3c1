#!/usr/bin/env python3
"""Differential runs: fresh random fleets and keys through a real program and through
chash (or, with --model-only, through tests/oracles/models.py), compared answer by
answer.

    python3 tests/oracles/differential.py --program haproxy --chash build/tools/chash \
        [--rounds 3] [--seconds 120] [--fleet 100] [--keys 500] [--seed 1] [--save DIR]
    python3 tests/oracles/differential.py --program varnish --model-only

Programs: haproxy, varnish, twemproxy (nutcracker), libmemcached, envoy. Envoy has no
program here: its round compares the hash functions (models.xxh64 and MurmurHash2-64
against Debian's libxxhash and libstdc++) and, with --chash, chash's Envoy flavors
against models.py's ring and Maglev table (checked against Envoy's own test
expectations by check_models.py).

Every round draws the fleet (size, weights, ids or names), the program's options
(hash function, balance, replicas, ...) and the keys from --seed + round. The run
stops after --rounds rounds or when --seconds have passed (a round in progress gets
the time left). A round whose answers differ is saved under --save (servers.txt,
keys.txt, options.txt, real.csv, other.csv) to be replayed with the oracle's
--servers/--keys. Exit status: 0 when every compared answer agreed, 1 otherwise
(a difference, an error of either side, or no round run).

The chash side is one small adapter per program (CHASH_ADAPTERS below): it turns the
oracle's options into a `chash route` command line (tests/oracles/cli_golden.py runs
the same adapters on every recorded golden set).
"""

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import models  # noqa: E402
import haproxy_oracle  # noqa: E402
import libmemcached_oracle  # noqa: E402
import nutcracker_oracle  # noqa: E402
import varnish_oracle  # noqa: E402

DRIVERS = {
    "haproxy": haproxy_oracle,
    "varnish": varnish_oracle,
    "twemproxy": nutcracker_oracle,
    "libmemcached": libmemcached_oracle,
}

MODELS = {
    "haproxy": models.haproxy_route,
    "varnish": models.varnish_route,
    "twemproxy": models.twemproxy_route,
    "libmemcached": models.libmemcached_route,
}


# ---------------------------------------------------------------- chash adapters
# Each returns the arguments after `chash route --servers FILE --keys FILE` that
# ask chash what the program answers with the oracle's options `o` for the
# fleet `servers` (tools/cli/README.md, "The other programs' flavors").

def chash_haproxy(o, servers):
    args = ["--flavor", "haproxy", "--balance", o["balance"]]
    # `hash-type consistent` alone is chash's default (sdbm with avalanche).
    if o["function"] != "default":
        args += ["--hash-function", o["function"]]
        if o["avalanche"]:
            args.append("--avalanche")
    return args


def chash_varnish(o, servers):
    args = ["--flavor", "varnish-shard", "--replicas", str(o["replicas"])]
    if o["by"] == "int":  # by=KEY, key=std.integer(...): the key is the hash
        args.append("--by-hash")
    if o.get("alt"):
        args += ["--alt", str(o["alt"])]
    return args


def chash_twemproxy(o, servers):
    args = ["--flavor", "ketama-md5", "--variant", "twemproxy", "--key-hash", o["hash"]]
    if o.get("hash_tag"):
        args += ["--hash-tag", o["hash_tag"]]
    return args


# libmemcached's MEMCACHED_BEHAVIOR_HASH names -> chash's --key-hash names.
LIBMEMCACHED_HASHES = {"default": "one_at_a_time", "crc": "crc32"}


def chash_libmemcached(o, servers):
    # A server of weight > 1 turns libmemcached's weighted continuum on in
    # every consistent mode, while the key hash stays the mode's.
    heavy = any(float(s.weight) > 1 for s in servers)
    key_hash = None if o["hash"] == "keep" else LIBMEMCACHED_HASHES.get(o["hash"], o["hash"])
    if o["mode"] == "weighted":
        variant = "libmemcached-weighted"
    elif o["mode"] == "ketama":
        variant = "libmemcached-weighted" if heavy else "libmemcached-unweighted"
        if heavy and key_hash is None:
            key_hash = "one_at_a_time"
    else:
        variant = "libmemcached-spy-weighted" if heavy else "libmemcached-spy"
    args = ["--flavor", "ketama-md5", "--variant", variant]
    if key_hash is not None:
        args += ["--key-hash", key_hash]
    return args


def chash_envoy(o, servers):
    if o["lb"] == "maglev":
        return ["--flavor", "envoy-maglev", "--table-size", str(o["table_size"]), "--by-hash"] + \
            (["--use-hostname-for-hashing"] if o.get("use_hostname") else [])
    args = ["--flavor", "envoy-ring", "--min-ring-size", str(o["min_ring"]),
            "--max-ring-size", str(o["max_ring"]), "--by-hash"]
    if o.get("hash") == "murmur2":
        args += ["--hash-function", "murmur_hash_2"]
    if o.get("use_hostname"):
        args.append("--use-hostname-for-hashing")
    return args


CHASH_ADAPTERS = {"haproxy": chash_haproxy, "varnish": chash_varnish,
                  "twemproxy": chash_twemproxy, "libmemcached": chash_libmemcached,
                  "envoy": chash_envoy}


def run_chash(chash, program, servers, keys, o, seconds):
    with tempfile.TemporaryDirectory(prefix="chash-diff-") as tmp:
        sfile, kfile = os.path.join(tmp, "servers.txt"), os.path.join(tmp, "keys.txt")
        with open(sfile, "w") as f:
            f.write(common.format_servers(servers))
        with open(kfile, "wb") as f:
            f.write(common.format_keys(keys))
        cmd = [chash, "route", "--servers", sfile, "--keys", kfile] + CHASH_ADAPTERS[program](o, servers)
        r = subprocess.run(common.nice_cmd(cmd, seconds), capture_output=True, timeout=seconds + 10)
    if r.returncode != 0:
        raise common.OracleError(f"chash exited {r.returncode}: {' '.join(cmd[1:])}\n"
                                 f"{r.stderr.decode(errors='replace')[:500]}")
    lines = r.stdout.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if len(lines) != len(keys):
        raise common.OracleError(f"chash printed {len(lines)} lines for {len(keys)} keys")
    out = []
    for k, line in zip(keys, lines):
        key, _, addr = line.rpartition(b",")
        if key != k:
            raise common.OracleError(f"chash answered key {key[:60]!r} for {k[:60]!r}")
        out.append(addr.decode())
    return out


# ---------------------------------------------------------------- Envoy rounds

def envoy_case(rng, n_hosts, n_keys):
    n = n_hosts or rng.choice([1, 2, 3, 7, 20, 50, 100])
    servers = [common.Server(a, rng.choice([1, 1, 1, 2, 3, 10]))
               for a in common.loopback_addrs(rng, n)]
    if rng.random() < 0.5:
        o = {"lb": "ring_hash", "min_ring": rng.choice([1024, 1024, 12, 4096]),
             "max_ring": 8388608, "hash": rng.choice(["xx_hash", "murmur2"])}
    else:
        o = {"lb": "maglev", "table_size": rng.choice([65537, 65537, 17, 251, 5003])}
    hashes = [str(rng.randrange(2 ** 64)).encode() for _ in range(n_keys)]
    return servers, hashes, o


def envoy_model(servers, o, keys):
    if o["lb"] == "maglev":
        table, _ = models.envoy_maglev(servers, o)
        return [servers[models.envoy_maglev_choose(table, int(k))].addr for k in keys]
    ring, _, _ = models.envoy_ring(servers, o)
    return [servers[models.envoy_ring_choose(ring, int(k))].addr for k in keys]


def envoy_hash_round(rng, n_keys, seconds):
    """models' XXH64 (seeds 0, 1) and MurmurHash2-64 against the real libraries."""
    import envoy_hash_oracle
    keys = envoy_hash_oracle.random_keys(rng, max(n_keys, 80))
    real = envoy_hash_oracle.answers(keys, seconds)
    diffs = 0
    for k, a, b, c in real:
        diffs += (models.xxh64(k, 0) != a) + (models.xxh64(k, 1) != b) + \
                 (models.murmur2_64_libstdcxx(k) != c)
    return 3 * len(real), diffs


# ---------------------------------------------------------------- rounds

def save_case(save, program, rnd, servers, keys, o, desc, real, other):
    d = os.path.join(save, f"{program}-round{rnd}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "servers.txt"), "w") as f:
        f.write(common.format_servers(servers))
    with open(os.path.join(d, "keys.txt"), "wb") as f:
        f.write(common.format_keys(keys))
    with open(os.path.join(d, "options.txt"), "w") as f:
        f.write(desc + "\n")
    with open(os.path.join(d, "real.csv"), "wb") as f:
        f.write(common.format_answers(keys, real))
    with open(os.path.join(d, "other.csv"), "wb") as f:
        f.write(common.format_answers(keys, other))
    return d


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--program", required=True, choices=sorted(DRIVERS) + ["envoy"])
    side = p.add_mutually_exclusive_group(required=True)
    side.add_argument("--chash", help="path to the chash CLI")
    side.add_argument("--model-only", action="store_true",
                      help="compare the real program with models.py instead of chash")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=120, help="bound of the whole run")
    p.add_argument("--fleet", type=int, default=None, help="servers per fleet (default: random)")
    p.add_argument("--keys", type=int, default=500, help="keys per round")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--save", default=None, help="directory for the cases that differ")
    a = p.parse_args()

    started = time.monotonic()
    compared = differing = errors = rounds = 0
    for rnd in range(a.rounds):
        left = a.seconds - (time.monotonic() - started)
        if left <= 1:
            print(f"time bound reached after {rounds} rounds")
            break
        rng = random.Random(a.seed * 1000003 + rnd)
        t0 = time.monotonic()
        try:
            if a.program == "envoy":
                servers, keys, o = envoy_case(rng, a.fleet, a.keys)
                desc = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in o.items())
                n_hash, d_hash = envoy_hash_round(rng, a.keys, left)
                compared += n_hash
                differing += d_hash
                what = f"hashes {n_hash - d_hash}/{n_hash} as libxxhash/libstdc++"
                if a.chash:
                    real = envoy_model(servers, o, keys)
                    other = run_chash(a.chash, "envoy", servers, keys, o, left)
                else:
                    real = other = []
            else:
                driver = DRIVERS[a.program]
                fleet = a.fleet
                if a.program == "libmemcached" and fleet:
                    fleet = min(fleet, libmemcached_oracle.MAX_SERVERS)
                servers, keys, o = common.random_case(driver, rng, a.keys, fleet, None)
                desc = common.describe(driver, o)
                real = driver.run(servers, keys, o, seconds=left)
                if a.chash:
                    other = run_chash(a.chash, a.program, servers, keys, o, left)
                else:
                    other = MODELS[a.program](servers, o, keys)
                what = ""
        except (common.OracleError, subprocess.TimeoutExpired, OSError) as e:
            errors += 1
            rounds += 1
            print(f"round {rnd}: ERROR {str(e)[:400]}")
            continue
        rounds += 1
        diff = sum(1 for x, y in zip(real, other) if x != y)
        compared += len(real)
        differing += diff
        if a.program == "envoy" and not a.chash:
            line = f"round {rnd}: {what}"
        else:
            line = (f"round {rnd}: {len(servers)} servers, {len(keys)} keys, {desc}: "
                    f"{len(real) - diff}/{len(real)} agree")
            if what:
                line += f"; {what}"
        line += f" ({time.monotonic() - t0:.1f}s)"
        print(line)
        if diff:
            first = next(i for i, (x, y) in enumerate(zip(real, other)) if x != y)
            print(f"    first difference: key {keys[first][:80]!r}: real {real[first]}, "
                  f"{'chash' if a.chash else 'model'} {other[first]}")
            if a.save:
                print(f"    saved in {save_case(a.save, a.program, rnd, servers, keys, o, desc, real, other)}")
    other_name = "chash" if a.chash else "models.py"
    print(f"{a.program}: {rounds} rounds, {compared} answers compared with {other_name}, "
          f"{differing} differ, {errors} errors ({time.monotonic() - started:.1f}s)")
    return 0 if rounds and not differing and not errors else 1


if __name__ == "__main__":
    sys.exit(main())
