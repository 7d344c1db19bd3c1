#!/usr/bin/env bash
# The layout check can fail: a copy of the headers with one break each (two
# fields swapped, a constant renumbered, a parameter's type changed) fails
# it, naming the line; the headers as they are pass.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fails=0
"$here/layout_check.py" >/dev/null || { echo "FAIL: the headers as they are"; fails=1; }
try() {  # NAME SED-EXPRESSION EXPECTED-LINE
  rm -rf "$tmp/include" && cp -r "$root/include" "$tmp/include"
  sed -i "$2" "$tmp/include/chash/chash_c.h"
  if cmp -s "$root/include/chash/chash_c.h" "$tmp/include/chash/chash_c.h"; then
    echo "FAIL: $1: the edit changed nothing"; fails=1; return
  fi
  local out rc=0
  out="$("$here/layout_check.py" --include "$tmp/include")" || rc=$?
  if [ "$rc" -ne 1 ] || ! grep -qF -- "- $3" <<<"$out"; then
    echo "FAIL: $1: exit $rc, expected the break '- $3':"; echo "$out"; fails=1
  else
    echo "ok: $1 is a break"
  fi
}
try "two fields swapped" \
  's/^  uint32_t serving_last_good; \(.*\)$/  uint32_t state_error_swapped;/; s/^  uint32_t state_error;  .*$/  uint32_t serving_last_good;/; s/state_error_swapped/state_error/' \
  "field chash_reload_report.serving_last_good 8 uint32_t"
try "a constant renumbered" 's/^#define CHASH_RELOAD_NO_SHARE 1u/#define CHASH_RELOAD_NO_SHARE 16u/' \
  "const CHASH_RELOAD_NO_SHARE 1u"
# Hexadecimal values are pinned too (the sentinels were once left out).
try "a hexadecimal constant changed" 's/^#define CHASH_NO_NODE 0xFFFFFFFFu/#define CHASH_NO_NODE 0xFFFFu/' \
  "const CHASH_NO_NODE 0xFFFFFFFFu"
try "a parameter's type changed" \
  's/^CHASH_C_API int chash_reloader_poll(chash_reloader \*reloader)/CHASH_C_API int chash_reloader_poll(const chash_reloader *reloader)/' \
  "proto int chash_reloader_poll(chash_reloader *reloader)"
exit "$fails"
