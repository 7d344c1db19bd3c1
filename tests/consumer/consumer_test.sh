#!/usr/bin/env bash
# chash as its users get it: installed into a temporary prefix, then used
# from outside the tree. Run by ctest (tests/CMakeLists.txt), one step a test:
#
#   consumer_test.sh install BUILD WORK   cmake --install BUILD into WORK/prefix
#   consumer_test.sh symbols BUILD WORK   libchash.so exports only the public
#                                         C and C++ API; SONAME libchash.so.MAJOR
#   consumer_test.sh c BUILD WORK         a C99 program built with nothing but
#                                         cc prog.c $(pkg-config --cflags --libs chash)
#   consumer_test.sh cxx BUILD WORK [TARGET]  a C++ project with find_package(chash)
#   consumer_test.sh static-only BUILD WORK   chash configured with
#                                         CHASH_BUILD_SHARED=OFF and installed:
#                                         its CMake package and chash.pc work
#                                         (chash::chash is libchash.a), and a
#                                         missing Highway fails find_package
#   consumer_test.sh subproject BUILD WORK  chash added with add_subdirectory
#                                         to a parent project that keeps its
#                                         own build type and install
#
# Each consumer routes golden answers of the real nginx and pingora-ketama
# (tests/data/) and checks every key.
set -euo pipefail
step="$1" build="$2" work="$3"
here="$(cd "$(dirname "$0")" && pwd)"
data="$here/../data"
prefix="$work/prefix"
fail() { echo "FAIL: $*" >&2; exit 1; }

# The golden sets every consumer routes: FLAVOR MULTIPLE SERVERS GOLDEN.
golden_sets=(
  "nginx 0 $data/nginx/a.servers $data/nginx/a.csv"
  "nginx 0 $data/nginx/f.servers $data/nginx/f.csv"
  "pingora-v1 0 $data/pingora/servers_nginx9.txt $data/pingora/golden_v1_nginx9.csv"
)

run_golden() {  # BINARY: every golden set, each must print "ok N"
  local set out
  for set in "${golden_sets[@]}"; do
    # shellcheck disable=SC2086
    out="$("$@" $set)" || fail "$* $set"
    [[ "$out" =~ ^ok\ [1-9][0-9]*$ ]] || fail "$* $set printed '$out'"
    echo "  ${set%% *} $(basename "${set##* }"): $out"
  done
}

libdir() {
  local lib
  lib="$(find "$prefix" -name 'libchash.so' -print -quit)"
  [ -n "$lib" ] || fail "no libchash.so under $prefix"
  dirname "$lib"
}

case "$step" in
  install)
    rm -rf "$prefix"
    cmake --install "$build" --prefix "$prefix" >/dev/null
    for file in include/chash/chash_c.h include/chash/version.h include/chash/chash.h bin/chash; do
      [ -e "$prefix/$file" ] || fail "$file is not installed"
    done
    lib="$(libdir)"
    for file in libchash.a libchash.so libchash.so.1 cmake/chash/chash-config.cmake \
                cmake/chash/chash-config-version.cmake pkgconfig/chash.pc; do
      [ -e "$lib/$file" ] || fail "$lib/$file is not installed"
    done
    version="$("$prefix/bin/chash" --version)"
    [ "$version" = "chash 1.0.0" ] || fail "chash --version printed '$version'"
    # The man page beside the tool (made by help2man; none in a cross build).
    [ -s "$prefix/share/man/man1/chash.1" ] || fail "share/man/man1/chash.1 is not installed"
    MANWIDTH=80 LC_ALL=C man -l "$prefix/share/man/man1/chash.1" | grep -q '^SYNOPSIS' ||
      fail "the installed chash.1 does not render"
    (cd "$prefix" && find . | sort)
    ;;

  symbols)
    lib="$(libdir)/libchash.so"
    soname="$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
    [ "$soname" = "libchash.so.1" ] || fail "SONAME is '$soname'"
    readelf -d "$lib" | grep NEEDED | grep -qi mimalloc && fail "libchash.so links mimalloc"
    # Every defined dynamic symbol: a C API function, or C++ in namespace
    # chash, and the version node.
    stray="$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | grep -v '^chash_' |
             grep -v '^CHASH_1$' | c++filt | grep -v '^chash::' || true)"
    [ -z "$stray" ] || fail "libchash.so exports more than the public API:
$stray"
    c_count="$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -c '^chash_')"
    cxx_count="$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | c++filt |
                 grep -c '^chash::')"
    # Every function chash_c.h declares is exported, and nothing else chash_.
    declared="$(grep -o 'chash_[a-z0-9_]*(' "$here/../../include/chash/chash_c.h" | tr -d '(' |
                LC_ALL=C sort -u)"
    exported="$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' |
                grep '^chash_' | LC_ALL=C sort -u)"
    [ "$declared" = "$exported" ] || fail "chash_c.h and the exports differ:
$(diff <(echo "$declared") <(echo "$exported"))"
    [ "$(nm -D --defined-only "$lib" | grep -c .)" -eq $((c_count + cxx_count + 1)) ] ||
      fail "symbol count"
    echo "libchash.so ($soname): $((c_count + cxx_count)) symbols exported:" \
         "$c_count C (chash_*), $cxx_count C++ (chash::)"
    ;;

  c)
    export PKG_CONFIG_PATH="$(libdir)/pkgconfig"
    cflags="$(pkg-config --cflags chash)"
    libs="$(pkg-config --libs chash)"
    # Only chash's own include folder: Highway and libstdc++ stay private.
    read -r -a words <<<"$cflags"
    [ ${#words[@]} -eq 1 ] && [ "$(realpath -m "${words[0]#-I}")" = "$prefix/include" ] ||
      fail "pkg-config --cflags: '$cflags'"
    read -r -a words <<<"$libs"
    [ ${#words[@]} -eq 2 ] && [ "$(realpath -m "${words[0]#-L}")" = "$(libdir)" ] &&
      [ "${words[1]}" = "-lchash" ] || fail "pkg-config --libs: '$libs'"
    mkdir -p "$work/c"
    # shellcheck disable=SC2046
    cc -std=c99 -Wall -Wextra -pedantic -Werror "$here/golden_route.c" \
      $(pkg-config --cflags --libs chash) -o "$work/c/golden_route"
    needed="$(readelf -d "$work/c/golden_route" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | LC_ALL=C sort |
              tr '\n' ' ')"
    [ "$needed" = "libc.so.6 libchash.so.1 " ] || fail "the C program needs: $needed"
    echo "C consumer: cc golden_route.c $cflags $libs (needs $needed)"
    LD_LIBRARY_PATH="$(libdir)" run_golden "$work/c/golden_route"
    ;;

  cxx)
    target="${4:-chash::chash}"
    dir="$work/cxx-${target##*::}"
    rm -rf "$dir"
    cmake -S "$here/cpp" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix" -DCHASH_TARGET="$target" >"$work/cmake-${target##*::}.log" ||
      { cat "$work/cmake-${target##*::}.log"; fail "configure"; }
    cmake --build "$dir" >>"$work/cmake-${target##*::}.log" ||
      { cat "$work/cmake-${target##*::}.log"; fail "build"; }
    # No include folder but chash's own on the consumer's command line.
    includes="$(grep -o -- ' -I[^ ]*\| -isystem [^ ]*' "$dir/build.ninja" | LC_ALL=C sort -u | tr -d '\n')"
    [ "$includes" = " -isystem $prefix/include" ] || fail "include folders: '$includes'"
    echo "C++ consumer: find_package(chash) -> $target, includes:$includes"
    LD_LIBRARY_PATH="$(libdir)" run_golden "$dir/golden_route_cxx"
    ;;

  static-only)
    source_dir="$(cd "$here/../.." && pwd)"
    sbuild="$work/static-only-build" sprefix="$work/static-only-prefix"
    rm -rf "$sbuild" "$sprefix"
    log="$work/static-only.log"
    # Build type None (Debian's: no flags, so no optimization): what is
    # checked is the install, and the unoptimized library builds faster.
    cmake -S "$source_dir" -B "$sbuild" -G Ninja -DCMAKE_BUILD_TYPE=None \
      -DCHASH_BUILD_SHARED=OFF -DCHASH_BUILD_TESTS=OFF -DCHASH_BUILD_TOOLS=OFF \
      -DCHASH_BUILD_BENCH=OFF -DCHASH_BUILD_FUZZ=OFF -DCHASH_INSTALL=ON \
      -DCMAKE_INSTALL_PREFIX="$sprefix" >"$log" 2>&1 || { cat "$log"; fail "configure"; }
    cmake --build "$sbuild" -j 2 >>"$log" 2>&1 || { tail -30 "$log"; fail "build"; }
    cmake --install "$sbuild" >>"$log" 2>&1 || { cat "$log"; fail "install"; }
    [ -z "$(find "$sprefix" -name 'libchash.so*')" ] || fail "a static-only install holds libchash.so"
    for file in cmake/chash/chash-config.cmake pkgconfig/chash.pc libchash.a; do
      [ -n "$(find "$sprefix" -path "*/$file")" ] || fail "a static-only install has no $file"
    done
    prefix="$sprefix"
    export PKG_CONFIG_PATH="$(dirname "$(find "$sprefix" -name chash.pc)")"
    mkdir -p "$work/static-c"
    # shellcheck disable=SC2046
    cc -std=c99 -Wall -Wextra -pedantic -Werror "$here/golden_route.c" \
      $(pkg-config --cflags --libs chash) -o "$work/static-c/golden_route" ||
      fail "cc golden_route.c \$(pkg-config --cflags --libs chash): $(pkg-config --libs chash)"
    readelf -d "$work/static-c/golden_route" | grep -q 'libchash' && fail "linked a libchash.so"
    echo "C consumer of a static-only install: pkg-config --libs chash = $(pkg-config --libs chash)"
    run_golden "$work/static-c/golden_route"
    for target in chash::chash chash::chash_static; do
      dir="$work/static-cxx-${target##*::}"
      rm -rf "$dir"
      cmake -S "$here/cpp" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$sprefix" -DCHASH_TARGET="$target" >"$log" 2>&1 ||
        { cat "$log"; fail "configure the C++ consumer with $target"; }
      cmake --build "$dir" >>"$log" 2>&1 || { cat "$log"; fail "build the C++ consumer"; }
      echo "C++ consumer of a static-only install: find_package(chash) -> $target"
      run_golden "$dir/golden_route_cxx"
    done
    # Without Highway, libchash.a cannot link: find_package must say so.
    dir="$work/static-cxx-nohwy"
    rm -rf "$dir"
    if cmake -S "$here/cpp" -B "$dir" -G Ninja -DCMAKE_PREFIX_PATH="$sprefix" \
         -DCMAKE_DISABLE_FIND_PACKAGE_hwy=ON >"$log" 2>&1; then
      fail "find_package(chash) succeeded without Highway"
    fi
    grep -q 'hwy' "$log" || { cat "$log"; fail "the failed find_package does not name Highway"; }
    echo "without Highway: find_package(chash) fails naming hwy"
    ;;

  subproject)
    source_dir="$(cd "$here/../.." && pwd)"
    dir="$work/subproject"
    rm -rf "$dir" "$work/subproject-prefix"
    log="$work/subproject.log"
    cmake -S "$here/subproject" -B "$dir" -G Ninja -DCHASH_SOURCE_DIR="$source_dir" \
      -DCMAKE_INSTALL_PREFIX="$work/subproject-prefix" >"$log" 2>&1 ||
      { cat "$log"; fail "configure the parent project"; }
    cmake --build "$dir" -j 2 >>"$log" 2>&1 || { tail -30 "$log"; fail "build the parent project"; }
    run_golden "$dir/golden_route_cxx"
    run_golden "$dir/golden_route_c"
    cmake --install "$dir" >>"$log" 2>&1 || { cat "$log"; fail "install the parent project"; }
    installed="$(cd "$work/subproject-prefix" && find . -type f | LC_ALL=C sort | tr '\n' ' ')"
    [ "$installed" = "./bin/golden_route_cxx " ] ||
      fail "the parent's install holds more than its own program: $installed"
    echo "subproject: the parent keeps no build type, builds only the library, installs only its own"
    ;;

  *)
    fail "unknown step $step"
    ;;
esac
