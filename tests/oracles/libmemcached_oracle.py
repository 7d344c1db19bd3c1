#!/usr/bin/env python3
"""Questions the real libmemcached (Debian 12: libmemcached-dev 1.1.4) about ketama.

Offline: libmemcached_oracle.c is compiled against Debian's library (cc and
`pkg-config --cflags --libs libmemcached`, into a private temporary directory or
--build-dir) and calls memcached_generate_hash() for every key; no memcached server
is contacted and nothing listens.

Servers file: `HOST:PORT WEIGHT` (HOST an IPv4 address or a name; PORT 11211 is
left out of the ring's labels). Debian builds libmemcached with assertions on and
update_continuum() asserts with more than 100 servers: fleets stay at <= 100.

    python3 tests/oracles/libmemcached_oracle.py --servers S --keys K \
        [--mode weighted|ketama|spy] [--hash keep|default|md5|crc|fnv1_64|fnv1a_64|
         fnv1_32|fnv1a_32|murmur|jenkins|murmur3]
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import OracleError  # noqa: E402

DESCRIPTION = "key -> server answers of the real libmemcached (ketama)"
PROGRAM = "libmemcached"
MODES = ("weighted", "ketama", "spy")
# hsieh is not built into Debian's libmemcached (MEMCACHED_BEHAVIOR_HASH refuses it)
HASHES = ("keep", "default", "md5", "crc", "fnv1_64", "fnv1a_64", "fnv1_32", "fnv1a_32",
          "murmur", "jenkins", "murmur3")
MAX_SERVERS = 100
LOCAL_OPTIONS = ("build_dir",)  # where the helper is compiled: not libmemcached's
SOURCE = os.path.join(common.HERE, "libmemcached_oracle.c")


def add_options(p):
    p.add_argument("--mode", choices=MODES, default="weighted",
                   help="weighted: MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED; ketama: "
                        "MEMCACHED_BEHAVIOR_KETAMA; spy: CONSISTENT_KETAMA_SPY")
    p.add_argument("--hash", choices=HASHES, default="keep",
                   help="key hash set after the mode (keep: the mode's own)")
    p.add_argument("--build-dir", default=None,
                   help="where to keep the compiled helper (default: a temp dir)")


def options_from_args(args):
    return {"mode": args.mode, "hash": args.hash, "build_dir": getattr(args, "build_dir", None)}


def provenance():
    return common.provenance("libmemcached", "libmemcached-dev",
                             "Debian 12, memcached_generate_hash", __file__)


def build(directory):
    exe = os.path.join(directory, "libmemcached_oracle")
    if os.path.exists(exe) and os.path.getmtime(exe) >= os.path.getmtime(SOURCE):
        return exe
    try:
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libmemcached"],
                               capture_output=True, text=True, check=True, timeout=30).stdout.split()
    except (OSError, subprocess.CalledProcessError) as e:
        raise OracleError(f"pkg-config libmemcached failed (is libmemcached-dev installed?): {e}")
    cmd = ["nice", "-n", "10", "cc", "-O1", "-Wall", "-Wextra", "-o", exe, SOURCE] + flags
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise OracleError(f"cc failed:\n{r.stderr}")
    return exe


def run(servers, keys, o, seconds=120, keep=False):
    if len(servers) > MAX_SERVERS:
        raise OracleError(f"{len(servers)} servers: Debian's libmemcached asserts above 100")
    lines = []
    for s in servers:
        if s.attrs:
            raise OracleError(f"{s.addr}: libmemcached servers take no attributes")
        host, port = s.host_port()
        w = int(s.weight)
        if w < 1:
            raise OracleError(f"{s.addr}: weight must be >= 1")
        lines.append(f"{host} {port} {w}\n")
    for k in keys:
        if b"\n" in k:
            raise OracleError("a key holds a newline")
    with common.WorkDir(keep) as tmp:
        bdir = o.get("build_dir") or tmp
        os.makedirs(bdir, exist_ok=True)
        exe = build(bdir)
        sfile, kfile = os.path.join(tmp, "servers"), os.path.join(tmp, "keys")
        with open(sfile, "w") as f:
            f.writelines(lines)
        with open(kfile, "wb") as f:
            f.write(common.format_keys(keys))
        r = subprocess.run(common.nice_cmd([exe, o["mode"], o["hash"], sfile, kfile], seconds),
                           capture_output=True, timeout=seconds + 10)
        if r.returncode != 0:
            raise OracleError(f"libmemcached_oracle exited {r.returncode}: "
                              f"{r.stderr.decode(errors='replace')}")
    out = r.stdout.decode().split("\n")
    held = [l for l in out if l.startswith("server ")]
    idx = [l for l in out if l and not l.startswith("server ")]
    if len(held) != len(servers) or len(idx) != len(keys):
        raise OracleError("libmemcached_oracle answered a different count of lines")
    for line, s in zip(held, servers):
        _, i, host, port = line.split(" ")
        if (host, int(port)) != s.host_port():
            raise OracleError(f"libmemcached holds server {i} as {host}:{port}, not {s.addr}")
    return [servers[int(i)].addr for i in idx]


# ---------------------------------------------------------------- random cases

NAMES = ["cache", "mc", "memcache", "sess", "kv"]


def random_fleet(rng, n, o):
    servers, seen = [], set()
    default_port = rng.random() < 0.4
    while len(servers) < n:
        if rng.random() < 0.25:
            host = f"{rng.choice(NAMES)}-{rng.randint(1, 999)}.{rng.choice(['example', 'internal', 'local'])}"
        else:
            host = f"127.{rng.randint(0, 3)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        port = 11211 if default_port and rng.random() < 0.8 else rng.randint(1024, 65000)
        addr = f"{host}:{port}"
        if addr in seen:
            continue
        seen.add(addr)
        servers.append(addr)
    style = rng.choice(["ones", "ones", "mixed", "wide"])
    if o["mode"] != "weighted" and rng.random() < 0.7:
        style = "ones"  # weight > 1 switches the continuum to weighted in every mode
    out = []
    for a in servers:
        w = 1 if style == "ones" else rng.randint(1, 10) if style == "mixed" else rng.randint(1, 300)
        out.append(common.Server(a, w))
    return out


ALPHABET = bytes(range(0x21, 0x7F)) + b" \t"


def random_keys(rng, n):
    def make(r):
        return common.random_key(r, ALPHABET, 250, high=True)
    return common.unique_keys(rng, n, make)


def random_options(rng):
    mode = rng.choice(MODES)
    h = rng.choice(["keep", "keep"] + list(HASHES[1:]))
    return {"mode": mode, "hash": h, "build_dir": None}


def random_fleet_and_keys(rng, n, n_keys, o):
    return random_fleet(rng, min(n, MAX_SERVERS), o), random_keys(rng, n_keys), o


if __name__ == "__main__":
    sys.exit(common.main(sys.modules[__name__]))
