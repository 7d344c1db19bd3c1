# Cross build for arm64 (Debian's g++-aarch64-linux-gnu), run under qemu-user.
#   cmake -S . -B build-arm64 -G Ninja --toolchain cmake/aarch64-linux-gnu.cmake \
#         -DARM64_DEPS_ROOT=$PWD/build-arm64-deps/root
# ARM64_DEPS_ROOT: the arm64 .debs of libhwy-dev, libhwy1, libgtest-dev,
# libmimalloc-dev, libmimalloc2.0, zlib1g-dev, zlib1g unpacked with dpkg -x
# (shared/notes/toolchain.md shows the apt-get download line).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
if(NOT DEFINED ARM64_DEPS_ROOT AND DEFINED ENV{ARM64_DEPS_ROOT})
  set(ARM64_DEPS_ROOT "$ENV{ARM64_DEPS_ROOT}")
endif()
if(NOT DEFINED ARM64_DEPS_ROOT)
  message(FATAL_ERROR "set ARM64_DEPS_ROOT to the folder the arm64 .debs were dpkg -x-ed into")
endif()
# try_compile projects re-read this file: hand them the variable.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES ARM64_DEPS_ROOT)
# No --sysroot: the overlay has no libc; the cross gcc finds /usr/aarch64-linux-gnu.
set(CMAKE_FIND_ROOT_PATH "${ARM64_DEPS_ROOT}" /usr/aarch64-linux-gnu)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# qemu-aarch64 reads QEMU_CPU at run time (e.g. cortex-a72 for NEON, max for SVE2);
# -L finds the arm64 libc, LD_LIBRARY_PATH-free thanks to RUNPATH.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
