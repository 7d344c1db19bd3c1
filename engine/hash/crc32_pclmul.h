// CRC-32/IEEE by carry-less multiplication on x86: PCLMULQDQ folding of 16-
// byte blocks (four streams of them from 64 bytes on); crc32_x86.cc adds
// VPCLMULQDQ on AVX-512 for inputs of 256 bytes and more.
//
// The algebra (bit-reflected CRC, as zlib's): the message is a polynomial
// over GF(2) whose first stream bit has the highest degree; a little-endian
// 128-bit load of 16 message bytes holds the block with bit k = coefficient
// of x^(127 - k) (call it stream order). The raw CRC register after a
// message M continued from register S is (S * x^(8|M|) + M * x^32) mod P,
// which is M with S xored into its first 4 bytes, times x^32, mod P.
//   Folding: an accumulator A = Q0 * x^64 + Q1 (Q0 = its low qword, the first
// in the stream) becomes A * x^D + next = Q0 * (x^(D+64) mod P) + Q1 * (x^D
// mod P) + next: two 64x32-bit carry-less products, which stay below 128
// bits. A reflected clmul of two stream-order operands comes out one factor
// of x short, so the constant for x^e is x^(e-1) mod P, bit-reversed.
//   Finishing: A * x^32 mod P: fold Q0 by x^96 onto Q1 * x^32 (< 96 bits),
// fold the top 32 bits by x^64 (< 64 bits), then Barrett-reduce the 64-bit
// remainder with mu = floor(x^64 / P).
// All constants are computed below at compile time from P alone.
//
// Header-only so that the lookup kernels (simd/search.cc) can inline a key's
// CRC into the search: every function carries its own target attribute and
// is inlined only into callers compiled for a superset of it (Highway's
// SSE4, AVX2 and AVX-512 targets include pclmul). Call only where
// CpuHasPclmul() (crc32_internal.h) holds.
#ifndef CHASH_ENGINE_HASH_CRC32_PCLMUL_H_
#define CHASH_ENGINE_HASH_CRC32_PCLMUL_H_

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "hash/crc32_internal.h"

namespace chash::internal::pclmul {

// Below this, the 128-bit path's four streams keep up and the 512-bit
// registers of VPCLMULQDQ (crc32_x86.cc) cost a warm-up (bench_chash BM_Crc32
// by length).
inline constexpr size_t kVpclmulMinBytes = 256;

// ---- Constants --------------------------------------------------------------

// P(x) = x^32 + 0x04C11DB7, bit i = coefficient of x^i.
inline constexpr uint64_t kPolynomial = 0x104C11DB7;

inline constexpr uint32_t XPowModP(uint32_t exponent) {
  uint64_t r = 1;
  for (uint32_t i = 0; i < exponent; ++i) {
    r <<= 1;
    if (r >> 32) r ^= kPolynomial;
  }
  return static_cast<uint32_t>(r);
}

inline constexpr uint64_t ReverseBits64(uint64_t v) {
  uint64_t r = 0;
  for (int i = 0; i < 64; ++i) r |= ((v >> i) & 1) << (63 - i);
  return r;
}

// The clmul operand that multiplies a stream-order qword by x^e (mod P).
inline constexpr uint64_t TimesXPow(uint32_t e) { return ReverseBits64(XPowModP(e - 1)); }

// A degree-32 polynomial with bit j = coefficient of x^(32 - j).
inline constexpr uint64_t Reflect33(uint64_t poly) { return ReverseBits64(poly) >> 31; }

// floor(x^64 / P) by long division.
inline constexpr uint64_t BarrettQuotient() {
  unsigned __int128 remainder = static_cast<unsigned __int128>(1) << 64;
  uint64_t quotient = 0;
  for (int degree = 64; degree >= 32; --degree) {
    if ((remainder >> degree) & 1) {
      remainder ^= static_cast<unsigned __int128>(kPolynomial) << (degree - 32);
      quotient |= uint64_t{1} << (degree - 32);
    }
  }
  return quotient;
}

inline constexpr uint64_t kReflectedP = Reflect33(kPolynomial);
inline constexpr uint64_t kReflectedMu = Reflect33(BarrettQuotient());
static_assert(kReflectedP == 0x1DB710641, "the reflected IEEE polynomial");
static_assert(kCrc32Polynomial == static_cast<uint32_t>(kReflectedP >> 1));

// Fold distances, in bits: the low lane multiplies the first qword by
// x^(D+64), the high lane the second by x^D.
struct FoldPair {
  uint64_t first, second;
};
inline constexpr FoldPair FoldBy(uint32_t bits) { return {TimesXPow(bits + 64), TimesXPow(bits)}; }

inline constexpr FoldPair kFold128 = FoldBy(128);
inline constexpr FoldPair kFold256 = FoldBy(256);
inline constexpr FoldPair kFold384 = FoldBy(384);
inline constexpr FoldPair kFold512 = FoldBy(512);
inline constexpr FoldPair kFold2048 = FoldBy(2048);
inline constexpr FoldPair kFinish = {TimesXPow(96), TimesXPow(64)};
inline constexpr FoldPair kBarrett = {kReflectedMu, kReflectedP};

// Byte-shuffle indices: 16 bytes from offset o select source byte p + o - 16
// at position p where that is 0..15, and zero elsewhere.
alignas(64) inline constexpr uint8_t kShiftIndices[48] = {
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
    0x80, 0x80, 0x80, 0x80, 0,    1,    2,    3,    4,    5,    6,    7,
    8,    9,    10,   11,   12,   13,   14,   15,   0x80, 0x80, 0x80, 0x80,
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};

// ---- PCLMULQDQ ------------------------------------------------------------------

#define CHASH_TARGET_PCLMUL __attribute__((target("pclmul,sse4.1")))

CHASH_TARGET_PCLMUL inline __m128i Pair(FoldPair k) {
  return _mm_set_epi64x(static_cast<long long>(k.second), static_cast<long long>(k.first));
}

CHASH_TARGET_PCLMUL inline __m128i Load16(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// acc * x^D + next, for the distance D of `k`.
CHASH_TARGET_PCLMUL inline __m128i FoldInto(__m128i acc, __m128i k, __m128i next) {
  return _mm_xor_si128(
      _mm_xor_si128(_mm_clmulepi64_si128(acc, k, 0x00), _mm_clmulepi64_si128(acc, k, 0x11)),
      next);
}

// Four accumulators of consecutive 16-byte blocks, a0 first, folded into one.
CHASH_TARGET_PCLMUL inline __m128i FoldFour(__m128i a0, __m128i a1, __m128i a2, __m128i a3) {
  return FoldInto(a0, Pair(kFold384),
                  FoldInto(a1, Pair(kFold256), FoldInto(a2, Pair(kFold128), a3)));
}

// The raw CRC register of a 128-bit stream-order block A: A * x^32 mod P.
CHASH_TARGET_PCLMUL inline uint32_t Reduce128(__m128i acc) {
  const __m128i finish = Pair(kFinish);
  // T = Q0 * x^96 + Q1 * x^32: below 96 bits, in bits 32..127.
  const __m128i t = _mm_xor_si128(_mm_clmulepi64_si128(acc, finish, 0x00),
                                  _mm_slli_si128(_mm_srli_si128(acc, 8), 4));
  // W = (T's x^64..x^95 part) * x^64 + (T's part below x^64): the high qword.
  const __m128i w = _mm_xor_si128(_mm_clmulepi64_si128(t, finish, 0x10),
                                  _mm_and_si128(t, _mm_set_epi64x(-1, 0)));
  // Barrett: quotient q = floor(W_high32 * mu / x^32), remainder W + q * P.
  const __m128i barrett = Pair(kBarrett);
  const __m128i low32 = _mm_set_epi64x(0, 0xFFFFFFFF);
  const __m128i wq = _mm_srli_si128(w, 8);
  const __m128i q = _mm_clmulepi64_si128(_mm_and_si128(wq, low32), barrett, 0x00);
  const __m128i qp = _mm_clmulepi64_si128(_mm_and_si128(q, low32), barrett, 0x10);
  return static_cast<uint32_t>(_mm_extract_epi32(_mm_xor_si128(wq, qp), 1));
}

inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// 0 <= len < 16: the message right-aligned in one zero-padded block, the
// register xored into its first 4 bytes. Reads only the message's bytes.
CHASH_TARGET_PCLMUL inline uint32_t UpdateShort(uint32_t state, const uint8_t* p, size_t len) {
  if (len < 4) {
    for (size_t i = 0; i < len; ++i) state = (state >> 8) ^ kCrc32Tables[0][(state ^ p[i]) & 0xFF];
    return state;
  }
  uint64_t first = 0, second;
  if (len >= 8) {
    second = Load64(p + len - 8);
    if (len > 8) first = Load64(p) << (8 * (16 - len));
  } else {
    second = uint64_t{Load32(p + len - 4)} << 32;
    if (len > 4) second |= static_cast<uint32_t>(Load32(p) << (8 * (8 - len)));
  }
  const __m128i at_start =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(kShiftIndices + len));
  const __m128i block =
      _mm_xor_si128(_mm_set_epi64x(static_cast<long long>(second), static_cast<long long>(first)),
                    _mm_shuffle_epi8(_mm_cvtsi32_si128(static_cast<int>(state)), at_start));
  return Reduce128(block);
}

// Folds the remaining whole blocks and the last 1..15 bytes into `acc`, then
// reduces. `end` - `p` = len; the message holds 16 bytes before `p` at least.
CHASH_TARGET_PCLMUL inline uint32_t Finish(__m128i acc, const uint8_t* p, size_t len) {
  const __m128i k128 = Pair(kFold128);
  for (; len >= 16; p += 16, len -= 16) acc = FoldInto(acc, k128, Load16(p));
  if (len > 0) {
    // acc * x^(8t) + tail = [first t bytes of acc] * x^128 + [the other 16 -
    // t bytes of acc, then the tail]. The last 16 message bytes end with it.
    const __m128i drop_first = _mm_loadu_si128(
        reinterpret_cast<const __m128i*>(kShiftIndices + 16 + len));
    const __m128i keep_first =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(kShiftIndices + len));
    const __m128i tail_lanes = _mm_cmpgt_epi8(keep_first, _mm_set1_epi8(-1));
    const __m128i low = _mm_xor_si128(_mm_shuffle_epi8(acc, drop_first),
                                      _mm_and_si128(Load16(p + len - 16), tail_lanes));
    acc = FoldInto(_mm_shuffle_epi8(acc, keep_first), k128, low);
  }
  return Reduce128(acc);
}

CHASH_TARGET_PCLMUL inline uint32_t PclmulUpdate(uint32_t state, const uint8_t* p, size_t len) {
  if (len < 16) return UpdateShort(state, p, len);
  __m128i acc = _mm_xor_si128(Load16(p), _mm_cvtsi32_si128(static_cast<int>(state)));
  p += 16;
  len -= 16;
  if (len >= 48) {
    // Four independent streams of blocks, 64 bytes apart.
    __m128i a0 = acc, a1 = Load16(p), a2 = Load16(p + 16), a3 = Load16(p + 32);
    p += 48;
    len -= 48;
    const __m128i k512 = Pair(kFold512);
    for (; len >= 64; p += 64, len -= 64) {
      a0 = FoldInto(a0, k512, Load16(p));
      a1 = FoldInto(a1, k512, Load16(p + 16));
      a2 = FoldInto(a2, k512, Load16(p + 32));
      a3 = FoldInto(a3, k512, Load16(p + 48));
    }
    acc = FoldFour(a0, a1, a2, a3);
  }
  return Finish(acc, p, len);
}

}  // namespace chash::internal::pclmul

#endif  // __x86_64__
#endif  // CHASH_ENGINE_HASH_CRC32_PCLMUL_H_
