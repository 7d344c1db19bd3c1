#!/usr/bin/python3
"""bench/results/ holds one folder per CPU (bench/results/README.md): the
folder names tools/dev/lib/cpu-slug derives, checked on model names and flags of
CPUs this project meets, and the committed folders, each with the cpu.txt
that says which CPU made its files.

usage: results_layout_test.py ROOT
"""
import os
import re
import subprocess
import sys

SLUG = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
AVX512 = "fpu sse4_2 avx2 avx512f avx512dq avx512cd avx512bw avx512vl vpclmulqdq"
CASES = [
    # (model name, flags, uname -m, folder)
    ("AMD EPYC", "fpu sse4_2 avx2 vpclmulqdq", "x86_64", "amd-epyc-avx2"),
    ("AMD EPYC", AVX512, "x86_64", "amd-epyc-avx512"),
    # AVX-512 F alone is not Highway's AVX3 level: the folder says avx2.
    ("AMD EPYC", "sse4_2 avx2 avx512f", "x86_64", "amd-epyc-avx2"),
    ("AMD EPYC 7B13 64-Core Processor", "sse4_2 avx2", "x86_64", "amd-epyc-7b13-64-core-avx2"),
    ("Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", AVX512, "x86_64",
     "intel-xeon-platinum-8481c-avx512"),
    ("Intel(R) Xeon(R) Processor @ 2.90GHz", AVX512, "x86_64", "intel-xeon-avx512"),
    ("Intel(R) Core(TM) i7-2600 CPU @ 3.40GHz", "sse4_2 avx", "x86_64", "intel-core-i7-2600-sse4"),
    ("QEMU Virtual CPU version 2.5+", "fpu sse2", "x86_64", "qemu-virtual-version-2-5-baseline"),
    ("Neoverse-N1", "fp asimd crc32", "aarch64", "neoverse-n1-neon"),
    ("Neoverse-V1", "fp asimd crc32 sve", "aarch64", "neoverse-v1-sve"),
    ("", "fp asimd", "aarch64", "aarch64-neon"),
]
VECTORS = ("avx512", "avx2", "sse4", "baseline", "neon", "sve")


def run(tool, *args, env=None):
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=30, env=env)


def main(root):
    tool = os.path.join(root, "tools", "dev", "lib", "cpu-slug")
    failures = []
    for model, flags, arch, expected in CASES:
        got = run(tool, "--for", model, flags, arch)
        if got.returncode != 0 or got.stdout.strip() != expected:
            failures.append(f"--for {model!r} {flags!r} {arch}: got {got.stdout.strip()!r} "
                            f"(exit {got.returncode}), expected {expected!r}")

    here = run(tool)
    if here.returncode != 0 or not SLUG.match(here.stdout.strip()) or \
            here.stdout.strip().rsplit("-", 1)[-1] not in VECTORS:
        failures.append(f"this CPU's slug {here.stdout.strip()!r} (exit {here.returncode}, "
                        f"{here.stderr.strip()})")
    described = run(tool, "--describe")
    if described.returncode != 0 or not described.stdout.startswith("model name: "):
        failures.append(f"--describe: {described.stdout[:80]!r} (exit {described.returncode})")
    env = dict(os.environ, CHASH_CPU_SLUG="my-host")
    if run(tool, env=env).stdout.strip() != "my-host":
        failures.append("CHASH_CPU_SLUG=my-host is not the slug")
    env["CHASH_CPU_SLUG"] = "../x86_64"
    bad = run(tool, env=env)
    if bad.returncode != 2 or "CHASH_CPU_SLUG" not in bad.stderr:
        failures.append(f"CHASH_CPU_SLUG=../x86_64 accepted (exit {bad.returncode})")

    results = os.path.join(root, "bench", "results")
    entries = sorted(os.listdir(results))
    folders = [e for e in entries if os.path.isdir(os.path.join(results, e))]
    loose = [e for e in entries if e not in folders and e != "README.md"]
    if loose:
        failures.append(f"bench/results/ holds files outside a CPU folder: {loose}")
    if not folders:
        failures.append("bench/results/ holds no CPU folder")
    for folder in folders:
        cpu_txt = os.path.join(results, folder, "cpu.txt")
        if not SLUG.match(folder):
            failures.append(f"bench/results/{folder}: not a cpu-slug name")
        try:
            with open(cpu_txt) as f:
                fields = dict(line.rstrip("\n").split(": ", 1) for line in f if ": " in line)
        except FileNotFoundError:
            failures.append(f"bench/results/{folder}/cpu.txt is missing")
            continue
        if not fields.get("model name"):
            failures.append(f"bench/results/{folder}/cpu.txt names no model")
        vector = fields.get("vector extensions")
        if vector not in VECTORS or not folder.endswith("-" + vector):
            failures.append(f"bench/results/{folder}: vector extensions {vector!r} "
                            "do not end the folder's name")
        if len(os.listdir(os.path.join(results, folder))) < 2:
            failures.append(f"bench/results/{folder} holds no result")

    for failure in failures:
        print("FAIL:", failure)
    print(f"{len(CASES)} model names, {len(folders)} result folders checked; "
          f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
