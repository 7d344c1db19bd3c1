#!/usr/bin/env bash
# Runs bench_programs the way bench/results/*/bench_programs.* were made:
# every row once (JSON and console), then each memory/ row again in a
# process of its own, so that its resident growth is not hidden by what
# earlier rows left in the allocator. Prints the CPU first.
#
#   bench/programs_run.sh BUILD_DIR OUT_DIR
set -euo pipefail
build="$1"
out="$2"
mkdir -p "$out"
bin="$build/bench/bench_programs"
{
  grep -m1 "model name" /proc/cpuinfo
  date -u +%FT%TZ
} > "$out/bench_programs.cpu.txt"
"$bin" --benchmark_min_time=0.1 --benchmark_out="$out/bench_programs.json" \
  --benchmark_out_format=json > "$out/bench_programs.txt"
: > "$out/bench_programs_memory.txt"
for row in $("$bin" --benchmark_list_tests --benchmark_filter='^memory/'); do
  "$bin" --benchmark_filter="^${row}\$" 2>/dev/null | grep '^memory/' >> "$out/bench_programs_memory.txt"
done
