// Which SIMD target the lookups run on, and which CRC-32 implementation.
//
// chash compiles its kernels for every Highway target of the architecture
// (x86: SSSE3, SSE4, AVX2, AVX3; ARM: NEON, SVE, SVE2, SVE_256, SVE2_128)
// and picks the best one the CPU supports at run time. No -march flag needed.
// Log these names beside a ring's fingerprint: answers are the same on every
// target, speed is not.
#ifndef CHASH_DISPATCH_H_
#define CHASH_DISPATCH_H_

#include <string_view>

// Public API: exported from libchash.so (built with hidden visibility).
#pragma GCC visibility push(default)
namespace chash {

// Name of the target lookups run on now ("AVX3", "NEON", "SVE2", ...). The
// first call (or lookup) picks the target, once per process. Thread-safe,
// no allocation.
std::string_view ActiveTargetName() noexcept;

// Name of the CRC-32 implementation Crc32() and the key lookups use here,
// chosen once from the CPU: "vpclmul-avx512", "pclmul", "armv8-crc32" or
// "slice-by-8". Thread-safe, no allocation.
std::string_view ActiveCrc32Name() noexcept;

}  // namespace chash
#pragma GCC visibility pop

#endif  // CHASH_DISPATCH_H_
