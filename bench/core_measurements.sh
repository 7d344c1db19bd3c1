#!/usr/bin/env bash
# The core-ring figures quoted in the README, recorded with their raw output
# under bench/results/CPU/ (the folder tools/dev/lib/cpu-slug names): the demo
# (204.8M + 20.5M points), memory of the 2,048 x 100 v1 ring (bytes per
# point, peak RSS), and `chash route` throughput on 10 million keys. Needs ~3.5 GB of memory and a few minutes.
# Usage: bench/core_measurements.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/bench/measure_env.sh" "$@"

{ measure_header "/usr/bin/time -v chash demo"; /usr/bin/time -v "$chash" demo 2>&1; } > "$out/demo.txt"

"$root/tools/dev/fleet" 2048 100 > "$tmp/fleet-2048x100.txt"
{ measure_header "/usr/bin/time -v chash stats --mode pingora-v1 --servers <tools/dev/fleet 2048 100>"
  /usr/bin/time -v "$chash" stats --mode pingora-v1 --servers "$tmp/fleet-2048x100.txt" 2>&1
} > "$out/stats-2048x100-v1.txt"

"$root/tools/dev/fleet" 1000 5 > "$tmp/fleet-1000x5.txt"
awk 'BEGIN { srand(1); for (i = 0; i < 10000000; i++) printf "/obj/%d/%08x.jpg\n", i, int(rand() * 4294967295) }' \
  > "$tmp/keys-10M.txt"
{ measure_header "time chash route --servers <tools/dev/fleet 1000 5> --keys <10,000,000 keys of ~25 bytes> > file"
  /usr/bin/time -v "$chash" route --servers "$tmp/fleet-1000x5.txt" --keys "$tmp/keys-10M.txt" \
    2>&1 >"$tmp/routed.txt"
  echo "lines routed: $(wc -l < "$tmp/routed.txt")"
} > "$out/route-10M.txt"
echo "wrote $out/{demo,stats-2048x100-v1,route-10M}.txt"
