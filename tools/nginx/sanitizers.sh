# The --sanitize runs of tools/nginx/test and tools/nginx/test-stream. Source
# it after tools/dev/lib/common.sh; do not run it.
#
# chash_nginx_sanitizers_on DIR  exports what tests/nginx/harness.py gives the
#   nginx processes it starts: the sanitizer runtimes preloaded (Debian's
#   nginx is not instrumented, the modules are: tools/nginx/build --sanitize)
#   and their options, reports written into DIR.
# chash_nginx_sanitizer_reports DIR NAME  prints the reports in DIR and
#   removes it; fails when there was one.

chash_nginx_sanitizers_on() {
  CHASH_NGINX_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
  # nginx frees its pools at exit, not every malloc: no leak check
  CHASH_NGINX_ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:log_path=$1/asan"
  CHASH_NGINX_UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$1/ubsan"
  export CHASH_NGINX_PRELOAD CHASH_NGINX_ASAN_OPTIONS CHASH_NGINX_UBSAN_OPTIONS
}

chash_nginx_sanitizer_reports() {
  if [ -n "$(ls -A "$1")" ]; then
    cat "$1"/* >&2
    echo "$2: sanitizer reports above"
    rm -rf "$1"
    return 1
  fi
  echo "$2: no sanitizer report"
  rm -rf "$1"
}
