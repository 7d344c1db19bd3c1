// Which SIMD target the lookups run on, and a hook to force one.
//
// chash compiles its kernels for every Highway target of the architecture
// (x86: SSSE3, SSE4, AVX2, AVX3; ARM: NEON, SVE, SVE2, SVE_256, SVE2_128)
// and picks the best one the CPU supports at run time. No -march flag needed.
#ifndef CHASH_DISPATCH_H_
#define CHASH_DISPATCH_H_

#include <string>
#include <string_view>
#include <vector>

#include "chash/status.h"

// Public API: exported from libchash.so (built with hidden visibility).
#pragma GCC visibility push(default)
namespace chash {

// Name of the target lookups dispatch to now ("AVX3", "NEON", "SVE2", ...).
std::string_view ActiveTargetName() noexcept;

// Name of the CRC-32 implementation Crc32() and the key lookups use here,
// chosen once from the CPU: "vpclmul-avx512", "pclmul", "armv8-crc32" or
// "slice-by-8" (independent of ForceTarget).
std::string_view ActiveCrc32Name() noexcept;

// Targets that are both compiled in and supported by this CPU, best first.
// Found once per process; ForceTarget does not change the list.
std::vector<std::string> SupportedTargetNames();

// For tests, tools and benchmarks: make every later lookup run on `name`
// (one of SupportedTargetNames()); "" or "best" restores the default, and so
// does an unknown name (kBadArgument). NOT thread-safe: call it, and
// SupportedTargetNames, while no lookup is running.
Status ForceTarget(std::string_view name);

}  // namespace chash
#pragma GCC visibility pop

#endif  // CHASH_DISPATCH_H_
