// The hashes other programs place points and keys with, each exactly as its
// program computes it (tests/reference/COMPATIBILITY.md names each source):
//
//   HAProxy     sdbm, djb2, wt6, crc32 (src/hash.c) and full_hash
//               (include/haproxy/intops.h), over the bytes unsigned
//   hashkit     one-at-a-time, the FNV variants, twemproxy's crc32 (15 bits)
//               and crc32a, crc16, hsieh, murmur, jenkins: libmemcached's
//               libhashkit and twemproxy's src/hashkit, which agree on every
//               function chash offers; where they read a byte through
//               `char`, it is sign-extended, as on x86-64 and ARM Linux
//               builds of twemproxy (gcc's `char` is signed on x86-64;
//               on aarch64 it is unsigned: documented, not followed)
//   digests     MD5 (this file's own, RFC 1321: OpenSSL 3 keeps only its
//               EVP interface, whose per-call dispatch costs more than a
//               short key's digest; tests and fuzzers hold it to OpenSSL's),
//               SHA-256 (OpenSSL's SHA256()), XXH64 (Debian's libxxhash),
//               and libstdc++'s std::hash of a string (Envoy's MURMUR_HASH_2)
//
// The small hashes are this file's own code: no library computes these
// programs' exact variants (the signed bytes, twemproxy's 32-bit
// "fnv1a_64", the 15-bit crc32).
#ifndef CHASH_ENGINE_HASH_PROGRAM_HASHES_H_
#define CHASH_ENGINE_HASH_PROGRAM_HASHES_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace chash::internal {

// ---- HAProxy ----------------------------------------------------------------------

// Bob Jenkins' 6-shift integer hash then a multiplication by 3221225473: a
// bijection of u32 (every step is invertible).
constexpr uint32_t HaproxyFullHash(uint32_t a) noexcept {
  a = (a + 0x7ed55d16u) + (a << 12);
  a = (a ^ 0xc761c23cu) ^ (a >> 19);
  a = (a + 0x165667b1u) + (a << 5);
  a = (a + 0xd3a2646cu) ^ (a << 9);
  a = (a + 0xfd7046c5u) + (a << 3);
  a = (a ^ 0xb55a4f09u) ^ (a >> 16);
  return a * 3221225473u;
}
uint32_t HaproxySdbm(const char* data, size_t len) noexcept;
uint32_t HaproxyDjb2(const char* data, size_t len) noexcept;
uint32_t HaproxyWt6(const char* data, size_t len) noexcept;

// ---- hashkit (libmemcached, twemproxy) ------------------------------------------

uint32_t OneAtATime(const char* data, size_t len) noexcept;
// twemproxy's and libhashkit's "fnv1a_64": a 32-bit FNV-1a whose state
// starts at 0x84222325 and whose prime is 0x1b3 (the low 32 bits of the
// 64-bit constants).
uint32_t Fnv1a64Hashkit(const char* data, size_t len) noexcept;
uint32_t Fnv1_64Hashkit(const char* data, size_t len) noexcept;  // low 32 bits
uint32_t Fnv1_32Hashkit(const char* data, size_t len) noexcept;
uint32_t Fnv1a32Hashkit(const char* data, size_t len) noexcept;
// "crc32": bits 16..30 of the CRC-32 (((~crc) >> 16) & 0x7fff), 0..32767.
uint32_t Crc32Bits15Hashkit(const char* data, size_t len) noexcept;
// twemproxy 0.5's "crc16": the CRC-16/XMODEM (poly 0x1021) table step in a
// 32-bit state that is never masked, so past two bytes it is no CRC-16.
uint32_t Crc16Twemproxy(const char* data, size_t len) noexcept;
uint32_t HsiehHashkit(const char* data, size_t len) noexcept;
uint32_t MurmurHashkit(const char* data, size_t len) noexcept;
// libhashkit's "murmur3": MurmurHash3_x86_32 seeded with 0xdeadbeef x len.
uint32_t Murmur3Hashkit(const char* data, size_t len) noexcept;
// lookup3's hashlittle with `initval` (hashkit's "jenkins" passes 13).
uint32_t JenkinsHashLittle(const char* data, size_t len, uint32_t initval) noexcept;

// ---- Digests ----------------------------------------------------------------------

// MD5 (RFC 1321) of `len` bytes.
void Md5(const void* data, size_t len, uint8_t digest[16]) noexcept;
// Little-endian u32 of bytes 4i..4i+3 of a digest.
inline uint32_t DigestWordLe(const uint8_t* digest, int i) noexcept {
  return uint32_t{digest[4 * i]} | uint32_t{digest[4 * i + 1]} << 8 |
         uint32_t{digest[4 * i + 2]} << 16 | uint32_t{digest[4 * i + 3]} << 24;
}
// The ketama key hash: the little-endian u32 of MD5(key)[0..3].
uint32_t Md5Le32(const char* data, size_t len) noexcept;
// Varnish's VRT_HashStrands32: the last 4 bytes of SHA-256, little-endian.
uint32_t Sha256Last4Le(const void* data, size_t len) noexcept;
uint64_t XxHash64(const void* data, size_t len, uint64_t seed) noexcept;
// libstdc++'s std::hash<std::string> on 64-bit targets (_Hash_bytes with
// seed 0xc70f6907): Envoy's MurmurHash::murmurHash2 with STD_HASH_SEED.
uint64_t LibstdcxxStringHash(const void* data, size_t len) noexcept;

// ---- A ring's key hash ------------------------------------------------------------

enum class KeyHashKind : uint8_t {
  kCrc32,  // CRC-32/IEEE: nginx, pingora, resty, HAProxy's crc32, hashkit's crc32a
  kHaproxySdbm,
  kHaproxyDjb2,
  kHaproxyWt6,
  kMd5Le32,
  kOneAtATime,
  kFnv1a64,
  kFnv1_64,
  kFnv1_32,
  kFnv1a32,
  kCrc32Bits15,
  kCrc16,
  kHsieh,
  kMurmur,
  kJenkins,
  kMurmur3,
  kSha256Last4,
  kXxh64,
};

// How a ring hashes keys. Two rings with equal KeyHashers hash every key
// alike (DiffRings compares them).
struct KeyHasher {
  KeyHashKind kind = KeyHashKind::kCrc32;
  bool avalanche = false;       // HAProxy: then full_hash
  bool zero_for_empty = false;  // twemproxy: an empty key hashes to 0
  // twemproxy, libmemcached: a pool of one server hashes every key to 0;
  // HAProxy: one usable server. Set by the builder from the ring's nodes.
  bool constant_zero = false;
  // twemproxy's hash_tag: hash only the bytes between tag[0] and the next
  // tag[1] when both are there with a byte between.
  bool tagged = false;
  std::array<char, 2> tag{};

  friend bool operator==(const KeyHasher&, const KeyHasher&) = default;
};

// The key's hash; below 2^32 except for kXxh64.
uint64_t HashKey(const KeyHasher& hasher, const char* data, size_t len) noexcept;
// out[i] = HashKey(hasher, keys[i]) for a batch (several MD5s at once where
// the CPU has the lanes: hash/md5_lanes-inl.h).
void HashKeys(const KeyHasher& hasher, const std::string_view* keys, size_t count,
              uint64_t* out) noexcept;

}  // namespace chash::internal

#endif  // CHASH_ENGINE_HASH_PROGRAM_HASHES_H_
