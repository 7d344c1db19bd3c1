#!/usr/bin/env bash
# Writes fuzz/corpus/conf_readers/ from the configs of tests/data: each seed
# is the selector byte of fuzz_conf_readers (0 nginx, 1 HAProxy, 2
# nutcracker, 3 the YAML layer) followed by a config file's bytes, named
# after the reader and the file.
#   fuzz/make_conf_readers_seeds.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=fuzz/corpus/conf_readers
rm -rf "$out"
mkdir -p "$out"
seed() {  # SELECTOR READER FILE...
  local selector="$1" reader="$2" file name
  shift 2
  for file in "$@"; do
    name="${reader}_$(basename "$(dirname "$file")")_$(basename "$file")"
    { printf "\\x0$selector"; cat "$file"; } >"$out/$name"
  done
}
seed 0 nginx tests/data/nginx-conf/nginx.conf tests/data/nginx-conf/conf.d/*.conf \
  tests/data/nginx-conf/errors/*.conf tests/data/nginx-conf/edges/*.conf
seed 1 haproxy tests/data/haproxy-cfg/*.cfg tests/data/haproxy-cfg/edges/*.cfg
seed 2 nutcracker tests/data/nutcracker-yml/*.yml tests/data/nutcracker-yml/edges/*.yml
seed 3 yaml tests/data/nutcracker-yml/*.yml tests/data/envoy-cluster/clusters.yaml
echo "wrote $(ls "$out" | wc -l) seeds to $out"
