// MD5 (RFC 1321) of several messages at once, one message a SIMD lane of
// u32: the 64 steps of a block run on every lane together, so a batch of
// keys costs about one key's dependency chain per Lanes() keys (16 on
// AVX-512, 8 on AVX2, 4 on SSE4 and NEON, 1 on SCALAR). Included by
// simd/search.cc once per Highway target (foreach_target.h), which lists it
// among the target's kernels.
//
// Messages of different lengths share the group: a lane whose message has
// fewer blocks keeps its state (IfThenElse) while the longer ones go on.
// Each block is transposed into 16 word vectors by scalar stores (64 bytes
// a lane), which costs about as much as a few steps.

#if defined(CHASH_ENGINE_HASH_MD5_LANES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CHASH_ENGINE_HASH_MD5_LANES_INL_H_
#undef CHASH_ENGINE_HASH_MD5_LANES_INL_H_
#else
#define CHASH_ENGINE_HASH_MD5_LANES_INL_H_
#endif

#include <cstring>
#include <string_view>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace chash {
namespace HWY_NAMESPACE {
namespace md5 {

namespace hn = hwy::HWY_NAMESPACE;
using D = hn::CappedTag<uint32_t, 16>;  // at most 16 messages a group
using V = hn::Vec<D>;
constexpr size_t kMaxLanes = 16;

HWY_INLINE V F(V b, V c, V d) { return hn::Or(hn::And(b, c), hn::AndNot(b, d)); }
HWY_INLINE V G(V b, V c, V d) { return hn::Or(hn::And(d, b), hn::AndNot(d, c)); }
HWY_INLINE V H(V b, V c, V d) { return hn::Xor(hn::Xor(b, c), d); }
HWY_INLINE V I(V b, V c, V d) { return hn::Xor(c, hn::Or(b, hn::Not(d))); }

// a = b + rotl(a + f(b, c, d) + m + k, s)
#define CHASH_MD5_STEP(f, a, b, c, d, m, k, s) \
  a = hn::Add(                                 \
      b, hn::RotateRight<32 - (s)>(hn::Add(hn::Add(a, f(b, c, d)), hn::Add(m, hn::Set(du, k)))))

// Word w of each lane's block, as a vector: loaded where a step needs it
// (SVE vectors are sizeless: no array of them), stored at p + w * lanes.
struct BlockWords {
  const uint32_t* p;
  size_t lanes;
  HWY_INLINE V operator[](size_t w) const { return hn::Load(D(), p + w * lanes); }
};

// One 64-byte block of every lane.
HWY_INLINE void Block(V& a0, V& b0, V& c0, V& d0, const BlockWords& m) {
  const D du;
  V a = a0, b = b0, c = c0, d = d0;
  CHASH_MD5_STEP(F, a, b, c, d, m[0], 0xd76aa478u, 7);
  CHASH_MD5_STEP(F, d, a, b, c, m[1], 0xe8c7b756u, 12);
  CHASH_MD5_STEP(F, c, d, a, b, m[2], 0x242070dbu, 17);
  CHASH_MD5_STEP(F, b, c, d, a, m[3], 0xc1bdceeeu, 22);
  CHASH_MD5_STEP(F, a, b, c, d, m[4], 0xf57c0fafu, 7);
  CHASH_MD5_STEP(F, d, a, b, c, m[5], 0x4787c62au, 12);
  CHASH_MD5_STEP(F, c, d, a, b, m[6], 0xa8304613u, 17);
  CHASH_MD5_STEP(F, b, c, d, a, m[7], 0xfd469501u, 22);
  CHASH_MD5_STEP(F, a, b, c, d, m[8], 0x698098d8u, 7);
  CHASH_MD5_STEP(F, d, a, b, c, m[9], 0x8b44f7afu, 12);
  CHASH_MD5_STEP(F, c, d, a, b, m[10], 0xffff5bb1u, 17);
  CHASH_MD5_STEP(F, b, c, d, a, m[11], 0x895cd7beu, 22);
  CHASH_MD5_STEP(F, a, b, c, d, m[12], 0x6b901122u, 7);
  CHASH_MD5_STEP(F, d, a, b, c, m[13], 0xfd987193u, 12);
  CHASH_MD5_STEP(F, c, d, a, b, m[14], 0xa679438eu, 17);
  CHASH_MD5_STEP(F, b, c, d, a, m[15], 0x49b40821u, 22);

  CHASH_MD5_STEP(G, a, b, c, d, m[1], 0xf61e2562u, 5);
  CHASH_MD5_STEP(G, d, a, b, c, m[6], 0xc040b340u, 9);
  CHASH_MD5_STEP(G, c, d, a, b, m[11], 0x265e5a51u, 14);
  CHASH_MD5_STEP(G, b, c, d, a, m[0], 0xe9b6c7aau, 20);
  CHASH_MD5_STEP(G, a, b, c, d, m[5], 0xd62f105du, 5);
  CHASH_MD5_STEP(G, d, a, b, c, m[10], 0x02441453u, 9);
  CHASH_MD5_STEP(G, c, d, a, b, m[15], 0xd8a1e681u, 14);
  CHASH_MD5_STEP(G, b, c, d, a, m[4], 0xe7d3fbc8u, 20);
  CHASH_MD5_STEP(G, a, b, c, d, m[9], 0x21e1cde6u, 5);
  CHASH_MD5_STEP(G, d, a, b, c, m[14], 0xc33707d6u, 9);
  CHASH_MD5_STEP(G, c, d, a, b, m[3], 0xf4d50d87u, 14);
  CHASH_MD5_STEP(G, b, c, d, a, m[8], 0x455a14edu, 20);
  CHASH_MD5_STEP(G, a, b, c, d, m[13], 0xa9e3e905u, 5);
  CHASH_MD5_STEP(G, d, a, b, c, m[2], 0xfcefa3f8u, 9);
  CHASH_MD5_STEP(G, c, d, a, b, m[7], 0x676f02d9u, 14);
  CHASH_MD5_STEP(G, b, c, d, a, m[12], 0x8d2a4c8au, 20);

  CHASH_MD5_STEP(H, a, b, c, d, m[5], 0xfffa3942u, 4);
  CHASH_MD5_STEP(H, d, a, b, c, m[8], 0x8771f681u, 11);
  CHASH_MD5_STEP(H, c, d, a, b, m[11], 0x6d9d6122u, 16);
  CHASH_MD5_STEP(H, b, c, d, a, m[14], 0xfde5380cu, 23);
  CHASH_MD5_STEP(H, a, b, c, d, m[1], 0xa4beea44u, 4);
  CHASH_MD5_STEP(H, d, a, b, c, m[4], 0x4bdecfa9u, 11);
  CHASH_MD5_STEP(H, c, d, a, b, m[7], 0xf6bb4b60u, 16);
  CHASH_MD5_STEP(H, b, c, d, a, m[10], 0xbebfbc70u, 23);
  CHASH_MD5_STEP(H, a, b, c, d, m[13], 0x289b7ec6u, 4);
  CHASH_MD5_STEP(H, d, a, b, c, m[0], 0xeaa127fau, 11);
  CHASH_MD5_STEP(H, c, d, a, b, m[3], 0xd4ef3085u, 16);
  CHASH_MD5_STEP(H, b, c, d, a, m[6], 0x04881d05u, 23);
  CHASH_MD5_STEP(H, a, b, c, d, m[9], 0xd9d4d039u, 4);
  CHASH_MD5_STEP(H, d, a, b, c, m[12], 0xe6db99e5u, 11);
  CHASH_MD5_STEP(H, c, d, a, b, m[15], 0x1fa27cf8u, 16);
  CHASH_MD5_STEP(H, b, c, d, a, m[2], 0xc4ac5665u, 23);

  CHASH_MD5_STEP(I, a, b, c, d, m[0], 0xf4292244u, 6);
  CHASH_MD5_STEP(I, d, a, b, c, m[7], 0x432aff97u, 10);
  CHASH_MD5_STEP(I, c, d, a, b, m[14], 0xab9423a7u, 15);
  CHASH_MD5_STEP(I, b, c, d, a, m[5], 0xfc93a039u, 21);
  CHASH_MD5_STEP(I, a, b, c, d, m[12], 0x655b59c3u, 6);
  CHASH_MD5_STEP(I, d, a, b, c, m[3], 0x8f0ccc92u, 10);
  CHASH_MD5_STEP(I, c, d, a, b, m[10], 0xffeff47du, 15);
  CHASH_MD5_STEP(I, b, c, d, a, m[1], 0x85845dd1u, 21);
  CHASH_MD5_STEP(I, a, b, c, d, m[8], 0x6fa87e4fu, 6);
  CHASH_MD5_STEP(I, d, a, b, c, m[15], 0xfe2ce6e0u, 10);
  CHASH_MD5_STEP(I, c, d, a, b, m[6], 0xa3014314u, 15);
  CHASH_MD5_STEP(I, b, c, d, a, m[13], 0x4e0811a1u, 21);
  CHASH_MD5_STEP(I, a, b, c, d, m[4], 0xf7537e82u, 6);
  CHASH_MD5_STEP(I, d, a, b, c, m[11], 0xbd3af235u, 10);
  CHASH_MD5_STEP(I, c, d, a, b, m[2], 0x2ad7d2bbu, 15);
  CHASH_MD5_STEP(I, b, c, d, a, m[9], 0xeb86d391u, 21);

  a0 = hn::Add(a0, a);
  b0 = hn::Add(b0, b);
  c0 = hn::Add(c0, c);
  d0 = hn::Add(d0, d);
}
#undef CHASH_MD5_STEP

// Block `block` of a message as MD5 pads it (the bytes, 0x80, zeros, the
// length in bits little-endian in the last 8 bytes of the last block).
HWY_INLINE void PaddedBlock(std::string_view message, size_t block, size_t blocks, uint8_t* out) {
  const size_t from = block * 64;
  size_t taken = 0;
  if (from < message.size()) {
    taken = message.size() - from < 64 ? message.size() - from : 64;
    std::memcpy(out, message.data() + from, taken);
  }
  std::memset(out + taken, 0, 64 - taken);
  if (message.size() >= from && message.size() - from < 64) out[message.size() - from] = 0x80;
  if (block + 1 == blocks) {
    const uint64_t bits = static_cast<uint64_t>(message.size()) * 8;
    for (int i = 0; i < 8; ++i) out[56 + i] = static_cast<uint8_t>(bits >> (8 * i));
  }
}

// The blocks MD5 pads a message of `len` bytes into.
HWY_INLINE size_t Blocks(size_t len) { return (len + 8) / 64 + 1; }

// words[4 i + j] = word j of MD5(messages[i]) (a, b, c, d as u32: digest
// bytes 4j..4j+3 little-endian), for i < count.
HWY_INLINE void Md5Messages(const std::string_view* HWY_RESTRICT messages, size_t count,
                            uint32_t* HWY_RESTRICT words) {
  const D du;
  const size_t lanes = hn::Lanes(du);
  HWY_ALIGN uint32_t block_words[16 * kMaxLanes];
  HWY_ALIGN uint32_t remaining[kMaxLanes];
  HWY_ALIGN uint32_t state[4][kMaxLanes];
  uint8_t bytes[64];
  for (size_t first = 0; first < count; first += lanes) {
    const size_t group = count - first < lanes ? count - first : lanes;
    size_t most = 0;
    size_t blocks[kMaxLanes] = {};
    for (size_t l = 0; l < lanes; ++l) {
      blocks[l] = l < group ? Blocks(messages[first + l].size()) : 0;
      most = blocks[l] > most ? blocks[l] : most;
    }
    V a = hn::Set(du, 0x67452301u), b = hn::Set(du, 0xefcdab89u);
    V c = hn::Set(du, 0x98badcfeu), d = hn::Set(du, 0x10325476u);
    for (size_t block = 0; block < most; ++block) {
      for (size_t l = 0; l < lanes; ++l) {
        remaining[l] = block < blocks[l] ? 1 : 0;
        if (block >= blocks[l]) {
          for (size_t w = 0; w < 16; ++w) block_words[w * lanes + l] = 0;
          continue;
        }
        PaddedBlock(messages[first + l], block, blocks[l], bytes);
        for (size_t w = 0; w < 16; ++w) {
          block_words[w * lanes + l] = uint32_t{bytes[4 * w]} | uint32_t{bytes[4 * w + 1]} << 8 |
                                       uint32_t{bytes[4 * w + 2]} << 16 |
                                       uint32_t{bytes[4 * w + 3]} << 24;
        }
      }
      V na = a, nb = b, nc = c, nd = d;
      Block(na, nb, nc, nd, BlockWords{block_words, lanes});
      const auto active = hn::Ne(hn::Load(du, remaining), hn::Zero(du));
      a = hn::IfThenElse(active, na, a);
      b = hn::IfThenElse(active, nb, b);
      c = hn::IfThenElse(active, nc, c);
      d = hn::IfThenElse(active, nd, d);
    }
    hn::Store(a, du, state[0]);
    hn::Store(b, du, state[1]);
    hn::Store(c, du, state[2]);
    hn::Store(d, du, state[3]);
    for (size_t l = 0; l < group; ++l) {
      for (size_t j = 0; j < 4; ++j) words[4 * (first + l) + j] = state[j][l];
    }
  }
}

}  // namespace md5
}  // namespace HWY_NAMESPACE
}  // namespace chash
HWY_AFTER_NAMESPACE();

#endif  // CHASH_ENGINE_HASH_MD5_LANES_INL_H_
