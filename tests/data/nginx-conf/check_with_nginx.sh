#!/usr/bin/env bash
# Checks these configs against the real nginx: nginx.conf must pass
# `nginx -t`, and each errors/*.conf whose failure is nginx's own must fail
# with the message nginx_conf_test expects from chash. Needs nginx and
# libnginx-mod-stream (Debian 12: nginx 1.22.1); `nginx -t` parses the
# configs and binds nginx.conf's one listener, 127.0.0.1:48080, for a moment.
#   tests/data/nginx-conf/check_with_nginx.sh
set -euo pipefail
cd "$(dirname "$0")"
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix"' EXIT
run() { nginx -t -q -e stderr -p "$prefix/" -c "$PWD/$1" 2>&1 || true; }
fail=0
out="$(run nginx.conf)"
if grep -q emerg <<<"$out"; then echo "nginx.conf: $out"; fail=1; else echo "nginx.conf: ok"; fi
while IFS='|' read -r file message; do
  out="$(run "errors/$file")"
  if grep -qF "$message" <<<"$out"; then echo "errors/$file: $message"; else
    echo "errors/$file: expected '$message', nginx said: $out"; fail=1; fi
done < <(sed "s#PWD#$PWD#g" <<'CASES'
backup_after_hash.conf|balancing method does not support parameter "backup" in PWD/errors/backup_after_hash.conf:6
weight_zero.conf|invalid parameter "weight=0" in PWD/errors/weight_zero.conf:5
unknown_parameter.conf|invalid parameter "slow_start=10s" in PWD/errors/unknown_parameter.conf:5
no_servers.conf|no servers are inside upstream in PWD/errors/no_servers.conf:5
server_arguments.conf|invalid number of arguments in "server" directive in PWD/errors/server_arguments.conf:5
unexpected_brace.conf|unexpected "}" in PWD/errors/unexpected_brace.conf:8
unexpected_eof.conf|unexpected end of file, expecting "}" in PWD/errors/unexpected_eof.conf:7
include_missing.conf|open() "PWD/errors/inc/missing.conf" failed (2: No such file or directory) in PWD/errors/include_missing.conf:3
in_include.conf|invalid parameter "weight=x" in PWD/errors/inc/upstream_bad_weight.inc:4
bad_port.conf|invalid port in upstream "10.0.0.2:99999" in PWD/errors/bad_port.conf:6
CASES
)
# nginx takes these; chash refuses them because nginx builds no ring.
for file in not_consistent.conf round_robin.conf; do
  out="$(run "errors/$file")"
  if grep -q emerg <<<"$out"; then echo "errors/$file: $out"; fail=1; else echo "errors/$file: ok"; fi
done
exit "$fail"
