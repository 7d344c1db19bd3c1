#!/usr/bin/env python3
"""`chash route` against every recorded golden set of the real programs.

    python3 tests/oracles/cli_golden.py --chash build/tools/chash

For each set of tests/data/{haproxy,libmemcached,twemproxy,varnish,envoy}/sets.txt
with recorded answers (NAME.csv), runs `chash route --servers SERVERS --keys KEYS`
with the options differential.py's CHASH_ADAPTERS give for the set's program
options, and compares every printed `key,ADDR` with the program's recorded row.
The expected answers are the real programs' (Envoy's: its unit tests'
expectations), never chash's. The sets chash's servers file cannot express yet
are listed in SKIPPED with the reason; a skip not listed, or a listed set that
is not skipped, fails the run, as does any differing answer. Exit 0 only when
every compared answer agreed and at least MIN_ROWS were compared.
"""

import argparse
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402
import differential  # noqa: E402

DATA = os.path.join(HERE, "..", "data")

# Envoy sets whose hosts need what the servers file does not carry yet.
SKIPPED = {
    "envoy/ring_locality_tiny": "locality weights",
    "envoy/ring_host_locality_tiny": "locality weights",
    "envoy/ring_lopsided": "locality weights",
    "envoy/maglev_locality_same": "locality weights",
    "envoy/maglev_locality_different": "locality weights",
}
MIN_ROWS = 20000


def read_sets(program):
    rows = []
    with open(os.path.join(DATA, program, "sets.txt")) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            name, servers, keys, options = line.split("\t")[:4]
            rows.append((name, servers, keys, options))
    return rows


def envoy_options(text):
    words = shlex.split(text)
    o = {"min_ring": 1024, "max_ring": 8388608, "table_size": 65537}
    i = 0
    while i < len(words):
        w = words[i]
        value = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else None
        o[{"--min-ring-size": "min_ring", "--max-ring-size": "max_ring",
           "--table-size": "table_size"}.get(w, w[2:].replace("-", "_"))] = \
            value if value is not None else True
        i += 2 if value is not None else 1
    return o


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--chash", required=True)
    a = p.parse_args()
    compared = differing = 0
    skipped = []
    failures = []
    for program in ["haproxy", "libmemcached", "twemproxy", "varnish", "envoy"]:
        for name, servers_file, keys_file, options in read_sets(program):
            what = f"{program}/{name}"
            csv = os.path.join(DATA, program, name + ".csv")
            if keys_file == "-" or not os.path.exists(csv):
                continue  # an expectation set without routed keys (check_models.py's)
            if program == "envoy":
                o = envoy_options(options)
                if "locality_weights" in o:
                    skipped.append(what)
                    continue
            else:
                o = common.options_from_string(differential.DRIVERS[program], options)
            servers_path = os.path.join(DATA, program, servers_file)
            with open(servers_path) as f:
                servers = common.parse_servers(f.read(), servers_path)
            rows = common.read_answers(csv)
            keys_text = b"".join(k + b"\n" for k, _ in rows)
            cmd = shlex.split(a.chash) + ["route", "--servers", servers_path] + \
                differential.CHASH_ADAPTERS[program](o, servers)
            r = subprocess.run(cmd, input=keys_text, capture_output=True, timeout=120)
            if r.returncode != 0:
                failures.append(f"{what}: chash exited {r.returncode}: "
                                f"{r.stderr.decode(errors='replace')[:300]}")
                continue
            got = r.stdout.split(b"\n")
            if got and got[-1] == b"":
                got.pop()
            if len(got) != len(rows):
                failures.append(f"{what}: {len(got)} lines for {len(rows)} keys")
                continue
            wrong = [(k, addr, line) for (k, addr), line in zip(rows, got)
                     if line != k + b"," + addr.encode()]
            compared += len(rows)
            differing += len(wrong)
            status = "ok" if not wrong else f"{len(wrong)} DIFFER"
            flavor_args = " ".join(cmd[cmd.index("--servers") + 2:])
            print(f"{what}: {len(rows)} answers, {status}  ({flavor_args})")
            if wrong:
                k, addr, line = wrong[0]
                failures.append(f"{what}: key {k[:60]!r}: the program answered {addr}, "
                                f"chash printed {line[-80:]!r}")
    unexpected = sorted(set(skipped) ^ set(SKIPPED))
    if unexpected:
        failures.append(f"the skipped sets are not SKIPPED's: {unexpected}")
    for what in skipped:
        print(f"{what}: SKIPPED ({SKIPPED.get(what, '?')})")
    for f in failures:
        print("FAIL " + f)
    print(f"{compared} answers compared, {differing} differ, {len(skipped)} sets skipped")
    if compared < MIN_ROWS:
        print(f"FAIL fewer than {MIN_ROWS} answers compared")
        return 1
    return 1 if failures or differing else 0


if __name__ == "__main__":
    sys.exit(main())
