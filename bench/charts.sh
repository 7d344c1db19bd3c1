#!/usr/bin/env bash
# Regenerates the README's benchmark charts (bench/charts.py) from the
# committed JSON, one chart set in each CPU folder of bench/results/ that
# holds a bench_chash*.json (or in the folders given), installing Debian's
# python3-matplotlib first if it is missing. Arguments go to charts.py.
set -euo pipefail
source "$(dirname "$0")/../tools/dev/lib/common.sh"
chash_ensure_packages python3-matplotlib
exec /usr/bin/python3 "$CHASH_ROOT/bench/charts.py" "$@"
