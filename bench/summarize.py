#!/usr/bin/env python3
"""Markdown tables of the ratios in one bench_chash JSON file.

usage: bench/summarize.py bench/results/FILE.json

Every figure is the median over the run's repetitions of ns_per_op (time per
lookup, per key, per CRC or per build); every ratio compares two benchmarks
of the same run. Standard library only.
"""
import json
import os
import statistics
import sys
from collections import defaultdict

import cpu_folder  # bench/cpu_folder.py, beside this script

RINGS = ["1.6K", "16K", "160K", "1.6M", "20.5M", "204.8M"]


def load(path):
    with open(path) as f:
        data = json.load(f)
    samples = defaultdict(list)
    labels = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" or "error_occurred" in b:
            continue
        name = b["run_name"].split("/iterations:")[0].removesuffix("/real_time")
        samples[name].append(b)
        labels[name] = b.get("label", "")
    median = {n: statistics.median(r["ns_per_op"] for r in runs) for n, runs in samples.items()}
    peak = {n: statistics.median(r.get("peak_rss_bytes_per_point", 0) for r in runs)
            for n, runs in samples.items() if "peak_rss_bytes_per_point" in runs[0]}
    return data["context"], median, peak, labels


def fmt(ns):
    if ns is None:
        return "-"
    if ns >= 1e8:
        return f"{ns / 1e6:.0f} ms"
    if ns >= 1e6:
        return f"{ns / 1e6:.1f} ms"
    if ns >= 1e4:
        return f"{ns / 1e3:.0f} µs"
    if ns >= 100:
        return f"{ns:.0f}"
    return f"{ns:.1f}"


def lines(ns, line):
    return f"{ns / line:.1f}" if ns and line else "-"


def ratio(a, b):
    return f"{a / b:.1f}x" if a and b else "-"


def main(path):
    context, m, peak, labels = load(path)
    targets = context.get("chash_targets", "").split(",")
    best = targets[0]
    rings = [r for r in RINGS if f"lower_bound/single/{r}" in m or f"build/chash/{r}" in m]
    lookup_rings = [r for r in rings if f"lower_bound/single/{r}" in m]
    print(f"Machine: {context.get('host_name', '?')}, {context.get('num_cpus')} CPUs at "
          f"{context.get('mhz_per_cpu')} MHz; best target {best}; "
          f"CRC32 {context.get('chash_crc32')}; targets {', '.join(targets)}.")
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.exists(os.path.join(folder, "cpu.txt")):
        print(f"CPU: {cpu_folder.display_name(folder)} ({os.path.basename(folder)}/cpu.txt).")
    print()

    if any(f"baseline/batch1024/{r}" in m for r in lookup_rings):
        print_like_for_like(m, best, lookup_rings)
    if any(n.startswith("proxy/") for n in m):
        print_proxy(m)
    if any(n.startswith("lab/") for n in m):
        print_lab(m, best)
    if lookup_rings:
        print_lookups(m, targets, best, lookup_rings)
    crcs = sorted({n.split("/")[1] for n in m if n.startswith("crc32/") and "chash_api" not in n})
    if crcs:
        print_crc(m, crcs, context)
    if any(f"build/chash/{r}" in m for r in rings):
        print_build(m, peak, rings)


def print_like_for_like(m, best, lookup_rings):
    print(f"### Like for like ({best}): each chash figure beside the baseline of the same shape, "
          "baselines in the same huge-page memory, ns per lookup\n")
    print("| ring | single | std::lower_bound | | dependent | one dependent line | dependent / line "
          "| batch 1024 | branchless batch (32, prefetch) | | floor | batch / floor "
          "| key single | pingora key path | | key batch | baseline key batch | |")
    print("|---|" + "---|" * 17)
    for r in lookup_rings:
        g = lambda n: m.get(n)
        single, lb = g(f"chash/single/{r}/{best}"), g(f"lower_bound/single/{r}")
        dep, line = g(f"chash/dependent/{r}/{best}"), g(f"floor_dependent/{r}")
        batch, bb = g(f"chash/batch1024/{r}/{best}"), g(f"baseline/batch1024/{r}")
        floor = g(f"floor/{r}")
        key, pk = g(f"chash/key/{r}/{best}"), g(f"pingora/key/{r}")
        kb, bkb = g(f"chash/key_batch1024/{r}/{best}"), g(f"baseline/key_batch1024/{r}")
        print(f"| {r} | {fmt(single)} | {fmt(lb)} | {ratio(lb, single)} | {fmt(dep)} | {fmt(line)} "
              f"| {ratio(dep, line)} | {fmt(batch)} | {fmt(bb)} | {ratio(bb, batch)} | {fmt(floor)} "
              f"| {ratio(batch, floor)} | {fmt(key)} | {fmt(pk)} | {ratio(pk, key)} | {fmt(kb)} "
              f"| {fmt(bkb)} | {ratio(bkb, kb)} |")
    print()


PROXY_WHATS = ["chash_key", "pingora_key", "nginx_key", "chash_hash", "lower_bound_hash", "line",
               "radix_hash"]


def print_proxy(m):
    rings = [r for r in RINGS if any(n.startswith("proxy/") and n.endswith("/" + r) for n in m)]
    pollutions = []
    for n in m:
        if n.startswith("proxy/") and n.split("/")[2] not in pollutions:
            pollutions.append(n.split("/")[2])
    print("### Proxy-shaped: one lookup after other work (P: a sweep of P bytes; random: a "
          "binary search over 164 MB and one random line of 128 MiB), ns per lookup "
          "(mean; the clock's own cost subtracted)\n")
    print("| ring | P | chash key | pingora key path | | nginx key path | | chash by hash "
          "| std::lower_bound by hash | | one random line | chash key in lines "
          "| lab radix by hash | in lines |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rings:
        for p in pollutions:
            g = {w: m.get(f"proxy/{w}/{p}/{r}") for w in PROXY_WHATS}
            if not any(g.values()):
                continue
            print(f"| {r} | {p} | {fmt(g['chash_key'])} | {fmt(g['pingora_key'])} "
                  f"| {ratio(g['pingora_key'], g['chash_key'])} | {fmt(g['nginx_key'])} "
                  f"| {ratio(g['nginx_key'], g['chash_key'])} | {fmt(g['chash_hash'])} "
                  f"| {fmt(g['lower_bound_hash'])} | {ratio(g['lower_bound_hash'], g['chash_hash'])} "
                  f"| {fmt(g['line'])} | {lines(g['chash_key'], g['line'])} "
                  f"| {fmt(g['radix_hash'])} | {lines(g['radix_hash'], g['line'])} |")
    print()


def print_lab(m, best):
    print("### Layout lab: a radix table straight into the columns, against the S+ tree "
          "(index bytes per point; ns per lookup)\n")
    print("| ring | layout | index B/pt | single | dependent | dependent / line | batch 1024 |")
    print("|---|---|---|---|---|---|---|")
    for r in RINGS:
        line = m.get(f"floor_dependent/{r}")
        rows = [("S+ tree + prefix table (shipped)", None, m.get(f"chash/single/{r}/{best}"),
                 m.get(f"chash/dependent/{r}/{best}"), m.get(f"chash/batch1024/{r}/{best}"))]
        bits = sorted({int(n.split("/")[1][5:]) for n in m
                       if n.startswith("lab/radix") and n.endswith("/" + r)})
        for b in bits:
            rows.append((f"radix table 2^{b}", 4 * 2 ** b,
                         m.get(f"lab/radix{b}/single/{r}"), m.get(f"lab/radix{b}/dependent/{r}"),
                         m.get(f"lab/radix{b}/batch1024/{r}")))
        if not bits:
            continue
        for name, table_bytes, single, dep, batch in rows:
            bpp = f"{table_bytes / POINTS[r]:.3f}" if table_bytes else "-"
            print(f"| {r} | {name} | {bpp} | {fmt(single)} | {fmt(dep)} | {ratio(dep, line)} "
                  f"| {fmt(batch)} |")
    print()


POINTS = {"1.6K": 1600, "16K": 16000, "160K": 160000, "1.6M": 1.6e6, "20.5M": 20.48e6,
          "204.8M": 204.8e6}


def print_lookups(m, targets, best, lookup_rings):
    print(f"### Lookup by hash, ns per lookup ({best})\n")
    print("| ring | std::lower_bound | chash single | ratio | dependent (lower_bound) "
          "| batch 8 | batch 64 | batch 1024 | ratio | memory floor | batch 1024 / floor |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in lookup_rings:
        lb = m.get(f"lower_bound/single/{r}")
        single = m.get(f"chash/single/{r}/{best}")
        b1024 = m.get(f"chash/batch1024/{r}/{best}")
        floor = m.get(f"floor/{r}")
        print(f"| {r} | {fmt(lb)} | {fmt(single)} | {ratio(lb, single)} | "
              f"{fmt(m.get(f'chash/dependent/{r}/{best}'))} "
              f"({fmt(m.get(f'lower_bound/dependent/{r}'))}) | "
              f"{fmt(m.get(f'chash/batch8/{r}/{best}'))} | "
              f"{fmt(m.get(f'chash/batch64/{r}/{best}'))} | {fmt(b1024)} | {ratio(lb, b1024)} | "
              f"{fmt(floor)} | {b1024 / floor:.2f} |" if floor and b1024 else "| - |")

    targets = [t for t in targets if any(f"chash/single/{r}/{t}" in m for r in lookup_rings)]
    print("\n### Every target: single / batch 1024, ns per lookup (speed-up over std::lower_bound)\n")
    print("| ring | " + " | ".join(targets) + " |")
    print("|---|" + "---|" * len(targets))
    for r in lookup_rings:
        lb = m.get(f"lower_bound/single/{r}")
        cells = []
        for t in targets:
            s = m.get(f"chash/single/{r}/{t}")
            b = m.get(f"chash/batch1024/{r}/{t}")
            cells.append(f"{fmt(s)} / {fmt(b)} ({ratio(lb, s)} / {ratio(lb, b)})")
        print(f"| {r} | " + " | ".join(cells) + " |")

    print("\n### Key (30 bytes) to node, ns per key\n")
    print("| ring | pingora-style (table CRC + 8-byte points) | nginx-style (byte CRC + 16-byte "
          f"points) | chash single | ratio vs pingora | chash batch 1024 | ratio vs pingora |")
    print("|---|---|---|---|---|---|---|")
    for r in lookup_rings:
        p = m.get(f"pingora/key/{r}")
        single = m.get(f"chash/key/{r}/{best}")
        batch = m.get(f"chash/key_batch1024/{r}/{best}")
        print(f"| {r} | {fmt(p)} | {fmt(m.get(f'nginx/key/{r}'))} | {fmt(single)} | "
              f"{ratio(p, single)} | {fmt(batch)} | {ratio(p, batch)} |")

    print("\n### Lookup by hash in the peers' layouts, ns per lookup\n")
    print("| ring | pingora (8-byte points, binary_search_by) | nginx (16-byte points, branchy) "
          f"| chash single ({best}) |")
    print("|---|---|---|---|")
    for r in lookup_rings:
        print(f"| {r} | {fmt(m.get(f'pingora/by_hash/{r}'))} | {fmt(m.get(f'nginx/by_hash/{r}'))} "
              f"| {fmt(m.get(f'chash/single/{r}/{best}'))} |")

    huge = [r for r in lookup_rings if f"chash/single_4k_pages/{r}/{best}" in m]
    if huge:
        print("\n### Huge pages (THP, madvise) vs 4 KiB pages, ns per lookup\n")
        print("| ring | single: 2 MiB / 4 KiB | batch 1024: 2 MiB / 4 KiB | floor: 2 MiB / 4 KiB |")
        print("|---|---|---|---|")
        for r in huge:
            print(f"| {r} | {fmt(m.get(f'chash/single/{r}/{best}'))} / "
                  f"{fmt(m.get(f'chash/single_4k_pages/{r}/{best}'))} | "
                  f"{fmt(m.get(f'chash/batch1024/{r}/{best}'))} / "
                  f"{fmt(m.get(f'chash/batch1024_4k_pages/{r}/{best}'))} | "
                  f"{fmt(m.get(f'floor/{r}'))} / {fmt(m.get(f'floor_4k_pages/{r}'))} |")


def print_crc(m, crcs, context):
    lengths = sorted({int(n.split("/")[2]) for n in m if n.startswith("crc32/") and
                      "chash_api" not in n})
    print("\n### CRC32, ns per input\n")
    print("| bytes | " + " | ".join(crcs) + " |")
    print("|---|" + "---|" * len(crcs))
    for n in lengths:
        print(f"| {n} | " + " | ".join(fmt(m.get(f"crc32/{c}/{n}")) for c in crcs) + " |")
    api, api_batch, zlib30 = (m.get("crc32/chash_api/single/30"),
                              m.get("crc32/chash_api/batch/30"), m.get("crc32/zlib/30"))
    print(f"\nchash::Crc32 on 30-byte keys ({context.get('chash_crc32')}): {fmt(api)} ns, "
          f"{ratio(zlib30, api)} zlib's crc32(); batch path {fmt(api_batch)} ns "
          f"({ratio(zlib30, api_batch)}).")


def print_build(m, peak, rings):
    print("\n### Build (pingora-v2 rings), wall time and peak RSS growth per generated point\n")
    print("| ring | chash | std::sort build | ratio | chash peak B/pt | std::sort peak B/pt |")
    print("|---|---|---|---|---|---|")
    for r in rings:
        c, s = m.get(f"build/chash/{r}"), m.get(f"build/std_sort/{r}")
        if c is None:
            continue
        print(f"| {r} | {fmt(c)} | {fmt(s)} | {ratio(s, c)} | "
              f"{peak.get(f'build/chash/{r}', 0):.2f} | {peak.get(f'build/std_sort/{r}', 0):.2f} |")


if __name__ == "__main__":
    main(sys.argv[1])
