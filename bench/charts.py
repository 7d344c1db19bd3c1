#!/usr/bin/python3
"""The README's benchmark charts, from the committed Google Benchmark JSON.

usage: bench/charts.sh [CPU_DIR...]   (default: every bench/results/*/ with
                                       a bench_chash*.json)
       (charts.sh installs python3-matplotlib if missing, then runs this)

One chart set per CPU: results of different CPUs are never drawn together.
For each CPU folder (bench/results/README.md), reads every bench_chash*.json
in it (a benchmark in several files: the run with the latest context date
wins) and writes, next to them, the charts whose families exist (a missing
family is left out, with a note), each titled with the CPU its folder's
cpu.txt names (its model name and vector extensions):

  chart_lookup.svg  ns per lookup against ring points, log-log: chash single,
                    batch 1024 and dependent, std::lower_bound, pingora's and
                    nginx's layouts, the branchless batch baseline, and the
                    memory floor (two random cache lines a lookup)
  chart_build.svg   ring build time against points: chash and std::sort
  chart_proxy.svg   proxy-shaped lookups: ns per lookup after touching P bytes
                    of other memory, one panel a ring

Figures are medians over repetitions of ns_per_op (as bench/summarize.py).
Output is deterministic (fixed svg.hashsalt, no date), so a chart changes
only when its data does. Needs Debian's python3-matplotlib.
"""
import glob
import json
import os
import statistics
import sys
from collections import defaultdict

import matplotlib

import cpu_folder  # bench/cpu_folder.py, beside this script

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402

plt.rcParams.update({"svg.hashsalt": "chash-charts", "svg.fonttype": "none",
                     "font.family": "DejaVu Sans", "font.size": 10})

RINGS = ["1.6K", "16K", "160K", "1.6M", "20.5M", "204.8M"]
SCALE = {"K": 1e3, "M": 1e6}


def points(ring):
    return float(ring[:-1]) * SCALE[ring[-1]]


def load(directory):
    """{benchmark name: median ns_per_op}, the best target, the files read."""
    files = sorted(glob.glob(os.path.join(directory, "bench_chash*.json")))
    runs = []
    for path in files:
        with open(path) as f:
            data = json.load(f)
        runs.append((data["context"].get("date", ""), path, data))
    runs.sort(key=lambda run: (run[0], run[1]))  # later runs override earlier ones
    median, best = {}, None
    for _, path, data in runs:
        samples = defaultdict(list)
        for b in data["benchmarks"]:
            if b.get("run_type") == "aggregate" or "error_occurred" in b or "ns_per_op" not in b:
                continue
            name = b["run_name"].split("/iterations:")[0].removesuffix("/real_time")
            samples[name].append(b["ns_per_op"])
        median.update({n: statistics.median(v) for n, v in samples.items()})
        targets = data["context"].get("chash_targets", "")
        if targets and best is None:
            best = targets.split(",")[0]
    return median, best, [os.path.basename(p) for _, p, _ in runs]


def footer(fig, sources):
    fig.text(0.01, 0.01, "made by: bench/charts.sh, from " + ", ".join(sources),
             fontsize=7, color="#666666", family="DejaVu Sans Mono")


def save(fig, path):
    fig.savefig(path, format="svg", metadata={"Date": None, "Creator": "bench/charts.py"})
    plt.close(fig)
    print(f"wrote {path}")


def series_over_rings(m, pattern):
    xs, ys = [], []
    for ring in RINGS:
        value = m.get(pattern.format(r=ring))
        if value is not None:
            xs.append(points(ring))
            ys.append(value)
    return xs, ys


def chart_lookup(m, best, cpu, sources, out):
    lines = [
        ("chash, single lookup", f"chash/single/{{r}}/{best}", "#d62728", "-", "o"),
        ("chash, batches of 1024", f"chash/batch1024/{{r}}/{best}", "#d62728", "--", "s"),
        ("chash, dependent lookups", f"chash/dependent/{{r}}/{best}", "#d62728", ":", "^"),
        ("std::lower_bound, single", "lower_bound/single/{r}", "#1f77b4", "-", "o"),
        ("pingora's layout, by hash", "pingora/by_hash/{r}", "#ff7f0e", "-", "o"),
        ("nginx's layout, by hash", "nginx/by_hash/{r}", "#2ca02c", "-", "o"),
        ("branchless batch baseline (1024)", "baseline/batch1024/{r}", "#9467bd", "--", "s"),
        ("memory floor: 2 random cache lines", "floor/{r}", "#7f7f7f", "--", None),
    ]
    fig, ax = plt.subplots(figsize=(9, 5.6))
    drawn = 0
    for label, pattern, color, style, marker in lines:
        xs, ys = series_over_rings(m, pattern)
        if not xs:
            print(f"chart_lookup: no {pattern.format(r='R')} in the JSON, left out")
            continue
        ax.plot(xs, ys, style, color=color, marker=marker, markersize=5, label=label)
        drawn += 1
    if drawn == 0:
        plt.close(fig)
        return False
    finish_over_rings(fig, ax, "ns per lookup by hash, median (log scale)",
                      f"Lookup time against ring size on {cpu}: chash ({best}) and the baselines",
                      sources, out)
    return True


def finish_over_rings(fig, ax, ylabel, title, sources, out):
    """Log-log axes over the ring size, the title, grid, legend and footer;
    saves the chart."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ring size, points (log scale)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, loc="left", fontweight="bold")
    ax.grid(True, which="major", color="#e2e2e2")
    ax.legend(fontsize=8, loc="upper left")
    footer(fig, sources)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save(fig, out)


def chart_build(m, cpu, sources, out):
    fig, ax = plt.subplots(figsize=(9, 5))
    drawn = 0
    for label, pattern, color in (("chash build", "build/chash/{r}", "#d62728"),
                                  ("std::sort build", "build/std_sort/{r}", "#1f77b4")):
        xs, ys = series_over_rings(m, pattern)
        if xs:
            ax.plot(xs, [y / 1e6 for y in ys], "-o", color=color, label=label)
            drawn += 1
    if drawn == 0:
        print("chart_build: no build/ benchmarks in the JSON, left out")
        plt.close(fig)
        return False
    finish_over_rings(fig, ax, "build time, ms, median (log scale)",
                      f"Ring build time against ring size on {cpu}", sources, out)
    return True


PROXY = [("chash_key", "chash, by key", "#d62728"),
         ("pingora_key", "pingora's key path", "#ff7f0e"),
         ("nginx_key", "nginx's key path", "#2ca02c"),
         ("chash_hash", "chash, by hash", "#ff9896"),
         ("lower_bound_hash", "std::lower_bound, by hash", "#1f77b4"),
         ("line", "one random cache line", "#7f7f7f"),
         ("radix_hash", "lab radix table, by hash", "#9467bd")]


def pollution_label(p):
    """"0" -> "none", "16K" -> "16 KiB sweep", "4M" -> "4 MiB sweep" (binary, as the
    benchmark's), "random" -> "random work" (a search over 164 MB, a line of 128 MiB)."""
    if p == "0":
        return "none"
    if p == "random":
        return "random work"
    return f"{p[:-1]} {p[-1]}iB sweep" if p[-1] in SCALE else f"{p} B sweep"


def pollution_order(p):
    if p == "0":
        return 0
    if p == "random":
        return float("inf")
    return points(p) if p[-1] in SCALE else float(p)


def chart_proxy(m, cpu, sources, out):
    names = [n.split("/") for n in m if n.startswith("proxy/") and n.count("/") == 3]
    rings = [r for r in RINGS if any(n[3] == r for n in names)]
    pollutions = []
    for n in names:
        if n[2] not in pollutions:
            pollutions.append(n[2])
    pollutions.sort(key=pollution_order)
    if not rings:
        print("chart_proxy: no proxy/ benchmarks in the JSON, left out")
        return False
    fig, axes = plt.subplots(1, len(rings), figsize=(4.6 * len(rings) + 1, 5), squeeze=False)
    width = 0.8 / len(PROXY)
    for ax, ring in zip(axes[0], rings):
        for i, (what, label, color) in enumerate(PROXY):
            xs, ys = [], []
            for j, p in enumerate(pollutions):
                value = m.get(f"proxy/{what}/{p}/{ring}")
                if value is not None:
                    xs.append(j - 0.4 + width * (i + 0.5))
                    ys.append(value)
            if xs:
                ax.bar(xs, ys, width, color=color, label=label)
        ax.set_xticks(range(len(pollutions)), [pollution_label(p) for p in pollutions])
        ax.set_xlabel("other work before each lookup")
        ax.set_title(f"{ring}-point ring", fontsize=10)
        ax.grid(True, axis="y", color="#e2e2e2")
        ax.set_axisbelow(True)
    axes[0][0].set_ylabel("ns per lookup (a run's mean, median of runs)")
    axes[0][-1].legend(fontsize=8)
    fig.suptitle(f"Proxy-shaped lookups on {cpu}: one lookup after other work evicts the caches",
                 x=0.01, ha="left", fontweight="bold")
    footer(fig, sources)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save(fig, out)
    return True


def charts_for(directory):
    m, best, sources = load(directory)
    if not m:
        sys.exit(f"charts.py: no bench_chash*.json with ns_per_op in {directory}")
    cpu = cpu_folder.display_name(directory)
    print(f"{directory}: {cpu}")
    chart_lookup(m, best or "?", cpu, sources, os.path.join(directory, "chart_lookup.svg"))
    chart_build(m, cpu, sources, os.path.join(directory, "chart_build.svg"))
    chart_proxy(m, cpu, sources, os.path.join(directory, "chart_proxy.svg"))


def cpu_folders():
    results = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    return sorted(d for d in glob.glob(os.path.join(results, "*"))
                  if os.path.isdir(d) and glob.glob(os.path.join(d, "bench_chash*.json")))


if __name__ == "__main__":
    folders = sys.argv[1:] or cpu_folders()
    if not folders:
        sys.exit("charts.py: no bench/results/*/ folder holds a bench_chash*.json")
    for folder in folders:
        charts_for(folder)
