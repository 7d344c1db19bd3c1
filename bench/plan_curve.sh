#!/usr/bin/env bash
# The README's CV curve: `chash plan --plot` on the demo's Cloudflare-scale fleet (2,048 x 625)
# (tools/dev/fleet 2048 625: 2,048 servers x weight 625, current ring
# pingora-v1 at 160 points per weight unit = 204,800,000 points), with
# measured points up to K = 160 so the curve shows where collisions turn
# it up. Writes bench/results/CPU/plan-2048x625-v1.{svg,txt} (the table,
# with /usr/bin/time -v; CPU: the folder tools/dev/lib/cpu-slug names).
# Needs ~4 GB of memory and a few minutes.
# Usage: bench/plan_curve.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/bench/measure_env.sh" "$@"

# Relative names, so the command recorded in the picture is the one to type.
cd "$tmp"
"$root/tools/dev/fleet" 2048 625 > fleet-2048x625.txt
command=(plan --servers fleet-2048x625.txt --mode pingora-v1
  --multiples 1,2,4,8,16,32,64,160 --max-points 268435456 --plot plan-2048x625-v1.svg)
{ measure_header "/usr/bin/time -v chash ${command[*]}   (fleet-2048x625.txt = tools/dev/fleet 2048 625)"
  /usr/bin/time -v "$chash" "${command[@]}" 2>&1
} > "$out/plan-2048x625-v1.txt"
mv plan-2048x625-v1.svg "$out/"
echo "wrote $out/plan-2048x625-v1.{svg,txt}"
