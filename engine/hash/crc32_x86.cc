// CRC-32/IEEE by carry-less multiplication on x86: PCLMULQDQ folding
// (hash/crc32_pclmul.h, where the algebra is), and VPCLMULQDQ on AVX-512 for
// inputs of 256 bytes and more. Each function carries its own target
// attribute (no -m flag on the library); crc32.cc calls them only after
// checking the CPU.
#include "hash/crc32_internal.h"
#include "hash/crc32_pclmul.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace chash::internal {
namespace {

using namespace pclmul;  // NOLINT: this file extends those helpers

// ---- VPCLMULQDQ (AVX-512) ----------------------------------------------------------

#define CHASH_TARGET_VPCLMUL \
  __attribute__((target("vpclmulqdq,avx512f,avx512bw,avx512vl,pclmul,sse4.1")))

// (The plain broadcast and extract intrinsics of GCC 12 start from an
// "undefined" register and trip -Wmaybe-uninitialized.)
CHASH_TARGET_VPCLMUL inline __m512i Broadcast(FoldPair k) {
  const auto first = static_cast<long long>(k.first);
  const auto second = static_cast<long long>(k.second);
  return _mm512_set_epi64(second, first, second, first, second, first, second, first);
}

template <int kLane>
CHASH_TARGET_VPCLMUL inline __m128i Lane(__m512i z) {
  return _mm512_mask_extracti32x4_epi32(_mm_setzero_si128(), 0xF, z, kLane);
}

CHASH_TARGET_VPCLMUL inline __m512i Fold512(__m512i acc, __m512i k, __m512i next) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(acc, k, 0x00),
                                   _mm512_clmulepi64_epi128(acc, k, 0x11), next, 0x96);
}

CHASH_TARGET_VPCLMUL uint32_t VpclmulUpdate(uint32_t state, const uint8_t* p, size_t len) {
  if (len < kVpclmulMinBytes) return PclmulUpdate(state, p, len);
  // Four 512-bit accumulators = sixteen 16-byte streams, 256 bytes a round.
  __m512i z0 = _mm512_xor_si512(_mm512_loadu_si512(p),
                                _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(state))));
  __m512i z1 = _mm512_loadu_si512(p + 64);
  __m512i z2 = _mm512_loadu_si512(p + 128);
  __m512i z3 = _mm512_loadu_si512(p + 192);
  p += 256;
  len -= 256;
  const __m512i k2048 = Broadcast(kFold2048);
  for (; len >= 256; p += 256, len -= 256) {
    z0 = Fold512(z0, k2048, _mm512_loadu_si512(p));
    z1 = Fold512(z1, k2048, _mm512_loadu_si512(p + 64));
    z2 = Fold512(z2, k2048, _mm512_loadu_si512(p + 128));
    z3 = Fold512(z3, k2048, _mm512_loadu_si512(p + 192));
  }
  // Lane l of z_i is block 4i + l of the last round: z_i and z_(i+1) are 512
  // bits apart lane by lane; then the four lanes are 128 bits apart.
  const __m512i k512 = Broadcast(kFold512);
  __m512i z = Fold512(z0, k512, z1);
  z = Fold512(z, k512, z2);
  z = Fold512(z, k512, z3);
  return Finish(FoldFour(Lane<0>(z), Lane<1>(z), Lane<2>(z), Lane<3>(z)), p, len);
}

}  // namespace

bool CpuHasPclmul() noexcept {
  return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
}

bool CpuHasVpclmulAvx512() noexcept {
  return CpuHasPclmul() && __builtin_cpu_supports("vpclmulqdq") &&
         __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

uint32_t Crc32ExtendPclmul(uint32_t crc, const uint8_t* data, size_t len) noexcept {
  return ~PclmulUpdate(~crc, data, len);
}

uint32_t Crc32ExtendVpclmul(uint32_t crc, const uint8_t* data, size_t len) noexcept {
  return ~VpclmulUpdate(~crc, data, len);
}

// Keys of one batch are independent and their code is branch-predictable
// when lengths repeat, so with the update inlined the core overlaps several
// keys' carry-less multiply chains.
CHASH_TARGET_PCLMUL void Crc32KeysPclmul(const std::string_view* keys, size_t count,
                                         uint32_t* out) noexcept {
  for (size_t i = 0; i < count; ++i) {
    out[i] = ~PclmulUpdate(0xFFFFFFFFu, reinterpret_cast<const uint8_t*>(keys[i].data()),
                           keys[i].size());
  }
}

}  // namespace chash::internal

#endif  // __x86_64__
