#!/usr/bin/env bash
# Builds and runs bench_snapshot (bench/bench_snapshot.cc) as the committed
# results were made, recording the command, the machine's load before and
# after (the machine may be shared: compare ratios within one run) and the
# raw output:
#
#   bench/snapshot_bench.sh              16K and 20.5M rings
#       -> bench/results/CPU/bench_snapshot.{txt,json}
#   bench/snapshot_bench.sh --with_204m  the 204.8M-point v1 ring only (~6 GB)
#       -> bench/results/CPU/bench_snapshot_204m.{txt,json}
#
# CPU is the folder tools/dev/lib/cpu-slug names
#
# Extra arguments go to the benchmark (e.g. --benchmark_filter=load/).
set -euo pipefail
source "$(dirname "$0")/../tools/dev/lib/common.sh"
chash_ensure_packages "${CHASH_BUILD_PACKAGES[@]}"
build="${CHASH_BUILD_DIR:-$CHASH_ROOT/build}"
chash_configure "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(chash_jobs)" --target bench_snapshot >/dev/null

out="$(chash_results_dir)"
args=()
name=bench_snapshot
if [ "${1:-}" = "--with_204m" ]; then
  shift
  name=bench_snapshot_204m
  args=(--with_204m --benchmark_filter=/204.8M)
fi
args+=("$@")
cmd=("$build/bench/bench_snapshot" "${args[@]}" "--benchmark_out=$out/$name.json"
  --benchmark_out_format=json)
{
  echo "# ${cmd[*]#"$CHASH_ROOT/"}"
  echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(nproc) CPUs, $(git -C "$CHASH_ROOT" rev-parse --short HEAD)"
  echo "# $("$CHASH_ROOT/tools/dev/lib/cpu-slug" --describe | head -n2 | tr '\n' ';' | sed 's/;$//; s/;/; /g')"
  echo "# uptime before: $(uptime)"
} >"$out/$name.txt"
"${cmd[@]}" 2>&1 | tee -a "$out/$name.txt"
echo "# uptime after: $(uptime)" >>"$out/$name.txt"
echo "wrote $out/$name.txt and $out/$name.json"
