# Cross build for aarch64 with Debian's g++-aarch64-linux-gnu; tests run under
# qemu-user. ARM64_DEPS_ROOT is the folder the arm64 .debs of Highway, the
# test libraries, mimalloc and zlib were unpacked into (tools/dev/test-arm makes
# it). No --sysroot: the cross gcc finds /usr/aarch64-linux-gnu itself.
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
# try_compile projects (compiler checks) see the same root.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES ARM64_DEPS_ROOT)
set(CMAKE_FIND_ROOT_PATH "${ARM64_DEPS_ROOT}" /usr/aarch64-linux-gnu)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The CPU model comes from QEMU_CPU at run time (a -cpu here would be baked
# into the discovered tests).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
