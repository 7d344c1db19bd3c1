#!/usr/bin/env python3
"""The ratios quoted for bench_ops, from its raw JSON (Google Benchmark,
--benchmark_repetitions=5). Per benchmark: CPU ns per lookup, the minimum
and the median over the repetitions. On a shared machine interference only
adds time, so the minimum is the steadier estimate; both are printed.

    bench/ops_ratios.py bench/results/amd-epyc-avx512/ops.json
"""
import collections
import json
import statistics
import sys

data = json.load(open(sys.argv[1]))
runs = collections.defaultdict(list)
counters = {}
for b in data["benchmarks"]:
    if b.get("run_type") != "iteration":
        continue
    if "items_per_second" in b:
        runs[b["run_name"]].append(1e9 / b["items_per_second"])
    if "saved_fraction" in b:
        counters[b["run_name"]] = (b["label"], b)
stat = {k: (min(v), statistics.median(v)) for k, v in runs.items()}
ctx = data["context"]
print(f"# {ctx['host_name']}, {ctx['num_cpus']} CPUs at {ctx['mhz_per_cpu']} MHz, "
      f"load average {ctx['load_avg']}, {ctx['date']}")


def ratio(a, b, label):
    (amin, amed), (bmin, bmed) = stat[a], stat[b]
    print(f"{label:50s} min {amin:7.1f} / {bmin:7.1f} ns = {amin / bmin:5.2f}x"
          f"   median {amed:7.1f} / {bmed:7.1f} ns = {amed / bmed:5.2f}x")


for f, name in ((0, "100 nodes, 8,800 points (cache-resident)"),
                (1, "2,048 nodes, 1.8M points (11 MB)")):
    print(f"\n## {name}")
    ratio(f"BM_Plain/{f}", f"BM_Plain/{f}", "plain lookup")
    ratio(f"BM_Masked/{f}/100", f"BM_Plain/{f}", "masked, all up / plain")
    ratio(f"BM_Masked/{f}/90", f"BM_Plain/{f}", "masked, 10% down / plain")
    ratio(f"BM_AvailabilityMask/{f}/100", f"BM_Plain/{f}", "AvailabilityMask, all up / plain")
    ratio(f"BM_AvailabilityMask/{f}/90", f"BM_Plain/{f}", "AvailabilityMask, 10% down / plain")
    ratio(f"BM_MaskedBatch/{f}/100", f"BM_PlainBatch/{f}", "masked batch, all up / plain batch")
    ratio(f"BM_MaskedBatch/{f}/90", f"BM_PlainBatch/{f}", "masked batch, 10% down / plain batch")
    ratio(f"BM_Masked/{f}/50", f"BM_DedicatedSubsetRing/{f}/50", "50% subset: mask / own ring")
    ratio(f"BM_Masked/{f}/10", f"BM_DedicatedSubsetRing/{f}/10", "10% subset: mask / own ring")
    ratio(f"BM_MigrationOverhead/{f}/0", f"BM_Plain/{f}", "migration 0%, same ring / plain")
    ratio(f"BM_MigrationOverhead/{f}/50", f"BM_Plain/{f}", "migration 50%, same ring / plain")
    ratio(f"BM_MigrationOverheadBatch/{f}/50", f"BM_PlainBatch/{f}",
          "migration batch 50%, same ring / plain batch")
    ratio(f"BM_Migration/{f}/0", f"BM_PlainOldRing/{f}", "v1->v2 migration 0% / plain v1")
    ratio(f"BM_Migration/{f}/100", f"BM_Plain/{f}", "v1->v2 migration 100% / plain v2")
    ratio(f"BM_BoundedLoad/{f}/0", f"BM_Plain/{f}", "bounded load, none full / plain")
    ratio(f"BM_BoundedLoad/{f}/20", f"BM_Plain/{f}", "bounded load, 20% full / plain")

print("\n## parts (30-byte keys)")
for k in ("BM_KeyCrc32", "BM_MigrationKeyHash", "BM_MigrationChoose"):
    print(f"{k:50s} min {stat[k][0]:5.1f} ns   median {stat[k][1]:5.1f} ns")

print("\n## memory: one ring + 16 masks against 16 dedicated subset rings")
for name, (label, b) in sorted(counters.items()):
    print(f"{label:40s} 16 own rings {b['subset_rings_bytes']:12,.0f} B   "
          f"1 ring + 16 masks {b['one_ring_plus_masks_bytes']:12,.0f} B   "
          f"saved {b['saved_bytes']:12,.0f} B ({100 * b['saved_fraction']:.1f}%)")
