#!/usr/bin/env python3
"""Before/after table of two builds' bench_chash runs, made alternately.

usage: bench/compare_runs.py --before A1.json [A2.json ...] --after B1.json [B2.json ...]
                             [--ratio NUMERATOR DENOMINATOR ...]

For every benchmark in both sets: the median of ns_per_op (or of the
real time, for benchmarks without that counter) over all of a
build's runs (every repetition of every file), the ratio after / before, and
each build's runs sorted, so that a reader sees whether the two overlap. A
ratio is only as good as that overlap: on a shared machine, alternate the
builds (before, after, before, after) and compare within one session.
Standard library only.
"""
import argparse
import json
import statistics
from collections import defaultdict


def runs_of(paths):
    runs = defaultdict(list)
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for b in data["benchmarks"]:
            if b.get("run_type") == "aggregate" or "error_occurred" in b:
                continue
            name = b["run_name"].split("/iterations:")[0].removesuffix("/real_time")
            runs[name].append(ns_per_op(b))
    return runs


def ns_per_op(benchmark):
    """bench_chash's ns_per_op counter, else the run's time (bench_snapshot's
    loads: one operation an iteration) in ns."""
    if "ns_per_op" in benchmark:
        return benchmark["ns_per_op"]
    unit = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[benchmark["time_unit"]]
    return benchmark["real_time"] * unit


def fmt(ns):
    """ns as ns, or as ms (with the unit) from a millisecond up."""
    if ns >= 1e6:
        return f"{ns / 1e6:.1f} ms"
    return f"{ns:.0f}" if ns >= 100 else f"{ns:.1f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", nargs="+", required=True)
    parser.add_argument("--after", nargs="+", required=True)
    parser.add_argument("--ratio", nargs=2, action="append", default=[],
                        metavar=("NUMERATOR", "DENOMINATOR"),
                        help="also: NUMERATOR's median over DENOMINATOR's in each file "
                             "(a ratio within one run, e.g. a signed load over a verified one)")
    args = parser.parse_args()
    before, after = runs_of(args.before), runs_of(args.after)
    for numerator, denominator in args.ratio:
        print(f"{numerator} / {denominator}, each file's medians:")
        for label, paths in (("before", args.before), ("after", args.after)):
            ratios = []
            for path in paths:
                runs = runs_of([path])
                if numerator not in runs or denominator not in runs:
                    parser.error(f"{path} lacks {numerator} or {denominator}")
                ratios.append(statistics.median(runs[numerator]) /
                              statistics.median(runs[denominator]))
            print(f"  {label}: {' '.join(f'{r:.2f}' for r in ratios)}"
                  f" (median {statistics.median(ratios):.2f})")
        print()
    names = sorted(set(before) & set(after))
    if not names:
        parser.error("the two sets share no benchmark")
    print("| benchmark | before | after | after / before | runs before | runs after |")
    print("|---|---|---|---|---|---|")
    for name in names:
        b, a = statistics.median(before[name]), statistics.median(after[name])
        print(f"| {name} | {fmt(b)} | {fmt(a)} | {a / b:.2f} | "
              f"{' '.join(fmt(x) for x in sorted(before[name]))} | "
              f"{' '.join(fmt(x) for x in sorted(after[name]))} |")
    for label, only in (("before", set(before) - set(after)), ("after", set(after) - set(before))):
        if only:
            print(f"\nOnly {label}: {', '.join(sorted(only))}")


if __name__ == "__main__":
    main()
