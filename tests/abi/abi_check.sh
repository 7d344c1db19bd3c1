#!/usr/bin/env bash
# The ABI of libchash.so.MAJOR only grows: the SONAME stays
# libchash.so.MAJOR, and every symbol of the baseline
# (tests/data/abi/libchash.so.MAJOR.symbols, the C and C++ exports with their
# version node, as `nm -D` prints them) is still exported. A new symbol is allowed and reported; add it to the baseline in the
# commit that adds it (`abi_check.sh LIB --update`). A missing one is an ABI
# break: it needs a new major version (SONAME), never an edit of the baseline.
#
#   tests/abi/abi_check.sh BUILD/libchash.so MAJOR [--update]
#
# MAJOR is the project's major version (CMakeLists.txt passes it): a new
# major starts a new baseline file with --update.
set -euo pipefail
lib="$1"
major="$2"
expected="libchash.so.$major"
baseline="$(dirname "$0")/../data/abi/$expected.symbols"
soname="$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')"
if [ "$soname" != "$expected" ]; then
  echo "FAIL: SONAME is '$soname', the baseline is $expected"
  exit 1
fi
exported="$(nm -D --defined-only "$lib" | awk '$2 != "A" {print $3}' | LC_ALL=C sort)"
if [ "${3:-}" = "--update" ]; then
  printf '%s\n' "$exported" >"$baseline"
  echo "baseline updated: $(grep -c . "$baseline") symbols"
  exit 0
fi
missing="$(LC_ALL=C comm -23 "$baseline" <(printf '%s\n' "$exported"))"
added="$(LC_ALL=C comm -13 "$baseline" <(printf '%s\n' "$exported"))"
if [ -n "$added" ]; then
  echo "new exports (add them to the baseline with --update):"
  printf '%s\n' "$added" | c++filt | sed 's/^/  + /'
fi
if [ -n "$missing" ]; then
  echo "FAIL: symbols of $expected no longer exported (an ABI break):"
  printf '%s\n' "$missing" | c++filt | sed 's/^/  - /'
  exit 1
fi
if [ -n "$added" ]; then
  echo "FAIL: the baseline does not list every export"
  exit 1
fi
echo "ok: SONAME $expected, $(grep -c . "$baseline") baseline symbols all exported"
