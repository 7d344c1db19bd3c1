#!/usr/bin/env python3
"""The real libraries behind Envoy's ring hash functions, on this machine.

Envoy is not packaged for Debian 12, so no Envoy runs here. Its two hash functions
are, though: HashUtil::xxHash64 calls XXH64() of the xxHash library (Debian:
libxxhash0 0.8.1, asked through ctypes), and MURMUR_HASH_2 reproduces libstdc++'s
std::hash<std::string> (asked through std_hash_oracle.cc, compiled with g++ into a
temporary directory). For each key it prints

    key,XXH64(key, seed 0),XXH64(key, seed 1),std::hash<std::string>(key)

(decimal). Seed 0 hashes ring points and request keys; seed 1 is Maglev's skip.

    python3 tests/oracles/envoy_hash_oracle.py --keys K
    python3 tests/oracles/envoy_hash_oracle.py --random N --seed S --out DIR
"""

import argparse
import ctypes
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import OracleError  # noqa: E402

SOURCE = os.path.join(common.HERE, "std_hash_oracle.cc")


def xxh64_lib():
    try:
        lib = ctypes.CDLL("libxxhash.so.0")
    except OSError as e:
        raise OracleError(f"libxxhash.so.0 not found (Debian package libxxhash0): {e}")
    lib.XXH64.restype = ctypes.c_uint64
    lib.XXH64.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
    return lib


def std_hash(keys, seconds=60, keep=False):
    with common.WorkDir(keep) as tmp:
        exe = os.path.join(tmp, "std_hash_oracle")
        r = subprocess.run(["nice", "-n", "10", "g++", "-O1", "-std=c++17", "-o", exe, SOURCE],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise OracleError(f"g++ failed:\n{r.stderr}")
        kfile = os.path.join(tmp, "keys")
        with open(kfile, "wb") as f:
            f.write(common.format_keys(keys))
        r = subprocess.run(common.nice_cmd([exe, kfile], seconds), capture_output=True,
                           timeout=seconds + 10)
        if r.returncode != 0:
            raise OracleError(f"std_hash_oracle exited {r.returncode}")
    out = [int(x) for x in r.stdout.split()]
    if len(out) != len(keys):
        raise OracleError("std_hash_oracle answered a different count of lines")
    return out


def answers(keys, seconds=60, keep=False):
    lib = xxh64_lib()
    sh = std_hash(keys, seconds, keep)
    return [(k, lib.XXH64(k, len(k), 0), lib.XXH64(k, len(k), 1), s) for k, s in zip(keys, sh)]


def format_rows(rows, comments=()):
    out = [f"# {c}\n".encode() for c in comments]
    out += [k + f",{a},{b},{c}\n".encode() for k, a, b, c in rows]
    return b"".join(out)


def random_keys(rng, n):
    keys = [b"", b"a", b"foo", b"bar", b"foo\tbar", b"lyft"]
    keys += [bytes(rng.randrange(1, 256) for _ in range(L)).replace(b"\n", b"n")
             for L in range(1, 70)]
    keys += [f"127.0.0.1:{p}_{i}".encode() for p in (80, 90, 443) for i in range(3)]
    keys += [f"[2001:db8::{rng.randrange(65536):x}]:{rng.randrange(1, 65536)}_{i}".encode()
             for i in range(5)]
    alphabet = bytes(range(0x20, 0x7F))
    while len(keys) < n:
        keys.append(common.random_key(rng, alphabet, 300, high=True))
    # '#' starts a comment line in the answers file
    return [b"%" + k[1:] if k.startswith(b"#") else k for k in keys[:n]]


def provenance():
    return (f"answers of the real libxxhash {common.dpkg_version('libxxhash0')} (XXH64 via "
            f"ctypes) and libstdc++ {common.dpkg_version('libstdc++6')} (std::hash<std::string>, "
            f"g++ {common.dpkg_version('g++')}), tests/oracles/envoy_hash_oracle.py")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--keys")
    p.add_argument("--random", type=int)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out")
    p.add_argument("--keep-temp", action="store_true")
    a = p.parse_args()
    if a.random is not None:
        if not a.out:
            p.error("--random needs --out")
        keys = random_keys(random.Random(a.seed), a.random)
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "keys.txt"), "wb") as f:
            f.write(common.format_keys(keys))
        with open(os.path.join(a.out, "answers.csv"), "wb") as f:
            f.write(format_rows(answers(keys, keep=a.keep_temp), [provenance()]))
        return 0
    if not a.keys:
        p.error("give --keys or --random N --out DIR")
    keys = common.read_keys(a.keys)
    sys.stdout.buffer.write(format_rows(answers(keys, keep=a.keep_temp)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
