# Sourced by the measurement scripts that record a figure of the README with
# its raw output (bench/core_measurements.sh, bench/plan_curve.sh), with root
# set to the checkout and their arguments ([BUILD_DIR], default root/build).
# Sets build, chash (the command, which must be built), out (bench/results/CPU/,
# the folder tools/dev/lib/cpu-slug names) and tmp (a scratch folder removed at
# exit); measure_header TITLE prints the two comment lines each recorded
# output starts with: the command, then the date, the machine and its CPU.
source "$root/tools/dev/lib/common.sh"
build="${1:-$root/build}"
chash="$build/tools/chash"
out="$(chash_results_dir)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
[ -x "$chash" ] || { echo "build chash first (tools/dev/test or tools/demo)" >&2; exit 2; }

measure_header() {
  echo "# $*"
  echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(uname -srm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') ($("$root/tools/dev/lib/cpu-slug"))"
}
