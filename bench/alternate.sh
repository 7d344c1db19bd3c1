#!/usr/bin/env bash
# Runs two builds of a Google Benchmark program alternately (before, after,
# before, after, ...) and tables them with compare_runs.py: on a shared
# machine only runs made side by side in one session compare.
#
#   bench/alternate.sh --before BIN --after BIN --out DIR [--rounds N] -- ARGS...
#
# BIN: the same benchmark program of two builds (e.g. a `git worktree` of the
# old commit built into its own folder, and build/bench/bench_chash). ARGS go
# to both (a --benchmark_filter, --benchmark_repetitions, --with_204m, ...).
# Writes DIR/before_R.json and DIR/after_R.json for R = 1..N (default 3),
# DIR/log.txt (the command, each run's start and the load average) and
# DIR/summary.txt (compare_runs.py's table), and prints the table.
set -euo pipefail
before="" after="" out="" rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --before) before="$2"; shift 2 ;;
    --after) after="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "alternate.sh: unknown argument '$1' (see the header)" >&2; exit 2 ;;
  esac
done
if [ -z "$before" ] || [ -z "$after" ] || [ -z "$out" ]; then
  echo "alternate.sh: --before, --after and --out are required" >&2
  exit 2
fi
for bin in "$before" "$after"; do
  [ -x "$bin" ] || { echo "alternate.sh: '$bin' is not an executable" >&2; exit 2; }
done
case "$rounds" in
  '' | *[!0-9]* | 0) echo "alternate.sh: --rounds takes a whole number from 1" >&2; exit 2 ;;
esac
mkdir -p "$out"
{
  echo "# bench/alternate.sh --before $before --after $after --rounds $rounds -- $*"
  echo "# $("$(dirname "$0")/../tools/dev/lib/cpu-slug" --describe | head -n2 | tr '\n' ';' |
    sed 's/;$//; s/;/; /g')"
} >"$out/log.txt"
for round in $(seq 1 "$rounds"); do
  for side in before after; do
    bin="$before"
    [ "$side" = after ] && bin="$after"
    echo "## $side round $round, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)" \
      >>"$out/log.txt"
    "$bin" "$@" --benchmark_out="$out/${side}_$round.json" --benchmark_out_format=json \
      >/dev/null
  done
done
echo "# done $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/log.txt"
befores=() afters=()
for round in $(seq 1 "$rounds"); do
  befores+=("$out/before_$round.json")
  afters+=("$out/after_$round.json")
done
python3 "$(dirname "$0")/compare_runs.py" --before "${befores[@]}" --after "${afters[@]}" |
  tee "$out/summary.txt"
