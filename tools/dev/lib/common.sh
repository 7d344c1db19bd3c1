# Shared helpers of the tools/ scripts. Source it; do not run it.
#
# chash_ensure_packages PKG...  installs the Debian packages that are missing
#   (apt-get, through sudo when not root); prints nothing when none is.
# chash_configure DIR [CMAKE ARGS...]  configures DIR with Ninja if needed.
# chash_results_dir  prints bench/results/<this CPU>/ (tools/dev/lib/cpu-slug),
#   creating it with its cpu.txt when it is new: where benchmarks write.

CHASH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"

chash_log() { printf '%s\n' "$*" >&2; }

chash_ensure_packages() {
  local missing=() pkg
  for pkg in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1; then
      chash_log "missing Debian packages: ${missing[*]} (run as root or install sudo)"
      return 1
    fi
    sudo=(sudo)
  fi
  chash_log "installing missing Debian packages: ${missing[*]}"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null ||
    { chash_log "apt-get update failed"; return 1; }
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null ||
    { chash_log "apt-get install ${missing[*]} failed"; return 1; }
}

# What every build of chash needs (Debian 12 package names).
CHASH_BUILD_PACKAGES=(cmake ninja-build g++ pkg-config libhwy-dev libmimalloc-dev
  libgtest-dev libbenchmark-dev zlib1g-dev libsodium-dev libssl-dev libxxhash-dev
  python3 librsvg2-bin  # tests/plot_test.py: runs in Python, renders SVG
  help2man man-db groff-base  # chash(1): made by help2man, rendered by tests/man_page_test.py
  libyaml-dev  # chash --nutcracker-yml: twemproxy's config read with libyaml
  clang-14  # tests/abi/layout_check.py: the C structs' layouts, as clang lays them out
  python3-yaml)  # tests/oracles/envoy_cluster_model.py: Envoy clusters' expected answers

# CHASH_WERROR=ON in the environment: every build configured here treats
# warnings as errors (CI sets it for the g++ suite).
chash_configure() {
  local dir="$1"
  shift
  if [ -n "${CHASH_WERROR:-}" ]; then set -- "$@" "-DCHASH_WERROR=$CHASH_WERROR"; fi
  if [ ! -f "$dir/build.ninja" ]; then
    cmake -S "$CHASH_ROOT" -B "$dir" -G Ninja "$@" >/dev/null ||
      { chash_log "cmake configure of $dir failed"; return 1; }
  else
    cmake "$dir" "$@" >/dev/null || return 1
  fi
}

chash_results_dir() {
  local dir
  dir="$CHASH_ROOT/bench/results/$("$CHASH_ROOT/tools/dev/lib/cpu-slug")" || return 1
  mkdir -p "$dir" || return 1
  [ -f "$dir/cpu.txt" ] || "$CHASH_ROOT/tools/dev/lib/cpu-slug" --describe >"$dir/cpu.txt"
  printf '%s\n' "$dir"
}

chash_jobs() { nproc 2>/dev/null || echo 2; }

# The sanitizer builds' optimisation and debug info: -O1, the level the
# sanitizers' own manuals recommend (the checks are of the source's
# semantics, which -O2 does not change; the release build at -O2 runs the
# same suite), and line tables only (-g1), which is what a sanitizer report's
# stack needs (function, file, line). Against -O2 -g1 it halves the compile of
# the larger test files under ASan (capi_test.cc: 55 -> 29 s here), the
# longest stage of CI.
CHASH_SANITIZER_FLAGS=(
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
)
