"""Where a benchmark's results go: bench/results/<this CPU>/, the folder
tools/dev/lib/cpu-slug names (bench/results/README.md). The Python side of
tools/dev/lib/common.sh's chash_results_dir; the name is derived only there."""

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLUG_TOOL = os.path.join(ROOT, "tools", "dev", "lib", "cpu-slug")


def slug():
    """This CPU's folder name, e.g. "amd-epyc-avx2"."""
    return subprocess.run([SLUG_TOOL], check=True, capture_output=True, text=True).stdout.strip()


def describe():
    """{field: value} of `cpu-slug --describe` (model name, vector extensions, ...)."""
    text = subprocess.run([SLUG_TOOL, "--describe"], check=True, capture_output=True,
                          text=True).stdout
    return dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)


def results_dir():
    """bench/results/<slug>/, created with its cpu.txt when new."""
    directory = os.path.join(ROOT, "bench", "results", slug())
    os.makedirs(directory, exist_ok=True)
    cpu_txt = os.path.join(directory, "cpu.txt")
    if not os.path.exists(cpu_txt):
        with open(cpu_txt, "w") as f:
            f.write(subprocess.run([SLUG_TOOL, "--describe"], check=True, capture_output=True,
                                   text=True).stdout)
    return directory


def out_path(path):
    """An output name without a directory goes into this CPU's folder;
    a path with one (./x.json, /tmp/x.json) is taken as it is."""
    if path is None or os.path.dirname(path):
        return path
    return os.path.join(results_dir(), path)


VECTOR_NAMES = {"avx512": "AVX-512", "avx2": "AVX2", "sse4": "SSE4", "baseline": "no SIMD",
                "neon": "NEON", "sve": "SVE"}


def display_name(directory):
    """"AMD EPYC, AVX-512" from a results folder's cpu.txt (the CPU that
    made its files), else the folder's name."""
    fields = {}
    try:
        with open(os.path.join(directory, "cpu.txt")) as f:
            fields = dict(line.rstrip("\n").split(": ", 1) for line in f if ": " in line)
    except FileNotFoundError:
        pass
    model = fields.get("model name")
    if not model:
        return os.path.basename(os.path.normpath(directory))
    vector = fields.get("vector extensions")
    return f"{model}, {VECTOR_NAMES.get(vector, vector)}" if vector else model
