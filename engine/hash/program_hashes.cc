#include "hash/program_hashes.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <xxhash.h>

#include <array>
#include <bit>
#include <cstring>
#include <functional>
#include <utility>

#include "chash/crc32.h"
#include "simd/search.h"

#if !defined(__GLIBCXX__)
#error "Envoy's MURMUR_HASH_2 is libstdc++'s std::hash<std::string>: build with libstdc++"
#endif

namespace chash::internal {
namespace {

// A byte as `char` reads it where the program's own build reads it signed
// (x86-64 Linux), widened to u32: 0x80..0xFF become 0xFFFFFF80..0xFFFFFFFF.
uint32_t SignedByte(char c) noexcept {
  return static_cast<uint32_t>(static_cast<int32_t>(static_cast<signed char>(c)));
}
uint32_t UnsignedByte(char c) noexcept { return static_cast<unsigned char>(c); }

uint32_t Load16Le(const char* p) noexcept { return UnsignedByte(p[0]) | UnsignedByte(p[1]) << 8; }
uint32_t Load32Le(const char* p) noexcept {
  return UnsignedByte(p[0]) | UnsignedByte(p[1]) << 8 | UnsignedByte(p[2]) << 16 |
         UnsignedByte(p[3]) << 24;
}

}  // namespace

// ---- HAProxy (src/hash.c reads `const unsigned char *`) -----------------------------

uint32_t HaproxySdbm(const char* data, size_t len) noexcept {
  uint32_t hash = 0;
  for (size_t i = 0; i < len; ++i) {
    hash = UnsignedByte(data[i]) + (hash << 6) + (hash << 16) - hash;
  }
  return hash;
}

uint32_t HaproxyDjb2(const char* data, size_t len) noexcept {
  uint32_t hash = 5381;
  for (size_t i = 0; i < len; ++i) hash = (hash << 5) + hash + UnsignedByte(data[i]);
  return hash;
}

// Two 32-bit lanes rotated by amounts the data picks (0..31; HAProxy's
// `(x << s) | (x >> (32 - s))` at s = 0 shifts by 32, which x86 and ARM
// reduce to 0 bits: a rotation by 0).
uint32_t HaproxyWt6(const char* data, size_t len) noexcept {
  uint32_t h0 = 0xa53c965au;
  uint32_t h1 = 0x5ca6953au;
  uint32_t step0 = 6;
  uint32_t step1 = 18;
  for (size_t i = 0; i < len; ++i) {
    const uint32_t byte = UnsignedByte(data[i]);
    h0 = ~(h0 ^ byte);
    h1 = ~(h1 + byte);
    const uint32_t rotated = std::rotl(h1, static_cast<int>(step0));
    h1 = std::rotl(h0, static_cast<int>(step1));
    h0 = rotated;
    const uint32_t t = ((h0 >> 16) ^ h1) & 0xffff;
    step0 = t & 0x1f;
    step1 = t >> 11;
  }
  return h0 ^ h1;
}

// ---- hashkit -----------------------------------------------------------------------

uint32_t OneAtATime(const char* data, size_t len) noexcept {
  uint32_t value = 0;
  for (size_t i = 0; i < len; ++i) {
    value += SignedByte(data[i]);
    value += value << 10;
    value ^= value >> 6;
  }
  value += value << 3;
  value ^= value >> 11;
  value += value << 15;
  return value;
}

uint32_t Fnv1a64Hashkit(const char* data, size_t len) noexcept {
  uint32_t hash = 0x84222325u;  // (uint32_t) 0xcbf29ce484222325
  for (size_t i = 0; i < len; ++i) {
    hash ^= SignedByte(data[i]);
    hash *= 0x1b3u;  // (uint32_t) 0x100000001b3
  }
  return hash;
}

uint32_t Fnv1_64Hashkit(const char* data, size_t len) noexcept {
  uint64_t hash = 0xcbf29ce484222325u;
  for (size_t i = 0; i < len; ++i) {
    hash *= 0x100000001b3u;
    hash ^= static_cast<uint64_t>(static_cast<int64_t>(static_cast<signed char>(data[i])));
  }
  return static_cast<uint32_t>(hash);
}

uint32_t Fnv1_32Hashkit(const char* data, size_t len) noexcept {
  uint32_t hash = 2166136261u;
  for (size_t i = 0; i < len; ++i) {
    hash *= 16777619u;
    hash ^= SignedByte(data[i]);
  }
  return hash;
}

uint32_t Fnv1a32Hashkit(const char* data, size_t len) noexcept {
  uint32_t hash = 2166136261u;
  for (size_t i = 0; i < len; ++i) {
    hash ^= SignedByte(data[i]);
    hash *= 16777619u;
  }
  return hash;
}

uint32_t Crc32Bits15Hashkit(const char* data, size_t len) noexcept {
  return (Crc32(data, len) >> 16) & 0x7fff;
}

namespace {
// CRC-16/XMODEM's table, MSB first: T[b] is the CRC of the byte b << 8.
constexpr std::array<uint16_t, 256> kCrc16XmodemTable = [] {
  std::array<uint16_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte << 8;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 0x8000) ? (crc << 1) ^ 0x1021u : crc << 1;
    table[byte] = static_cast<uint16_t>(crc);
  }
  return table;
}();
}  // namespace

uint32_t Crc16Twemproxy(const char* data, size_t len) noexcept {
  uint32_t crc = 0;
  for (size_t i = 0; i < len; ++i) {
    crc = (crc << 8) ^ kCrc16XmodemTable[((crc >> 8) ^ UnsignedByte(data[i])) & 0xff];
  }
  return crc;
}

uint32_t HsiehHashkit(const char* data, size_t len) noexcept {
  if (len == 0) return 0;
  uint32_t hash = 0;
  const size_t rem = len & 3;
  for (size_t blocks = len >> 2; blocks > 0; --blocks) {
    hash += Load16Le(data);
    const uint32_t tmp = (Load16Le(data + 2) << 11) ^ hash;
    hash = (hash << 16) ^ tmp;
    data += 4;
    hash += hash >> 11;
  }
  switch (rem) {
    case 3:
      hash += Load16Le(data);
      hash ^= hash << 16;
      hash ^= SignedByte(data[2]) << 18;  // read through `char`
      hash += hash >> 11;
      break;
    case 2:
      hash += Load16Le(data);
      hash ^= hash << 11;
      hash += hash >> 17;
      break;
    case 1:
      hash += UnsignedByte(data[0]);
      hash ^= hash << 10;
      hash += hash >> 1;
      break;
    default:
      break;
  }
  hash ^= hash << 3;
  hash += hash >> 5;
  hash ^= hash << 4;
  hash += hash >> 17;
  hash ^= hash << 25;
  hash += hash >> 6;
  return hash;
}

uint32_t MurmurHashkit(const char* data, size_t len) noexcept {
  constexpr uint32_t m = 0x5bd1e995u;
  const uint32_t seed = 0xdeadbeefu * static_cast<uint32_t>(len);
  uint32_t h = seed ^ static_cast<uint32_t>(len);
  while (len >= 4) {
    uint32_t k = Load32Le(data);
    k *= m;
    k ^= k >> 24;
    k *= m;
    h *= m;
    h ^= k;
    data += 4;
    len -= 4;
  }
  switch (len) {
    case 3:
      h ^= UnsignedByte(data[2]) << 16;
      [[fallthrough]];
    case 2:
      h ^= UnsignedByte(data[1]) << 8;
      [[fallthrough]];
    case 1:
      h ^= UnsignedByte(data[0]);
      h *= m;
      break;
    default:
      break;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return h;
}

uint32_t Murmur3Hashkit(const char* data, size_t len) noexcept {
  constexpr uint32_t c1 = 0xcc9e2d51u, c2 = 0x1b873593u;
  const auto scramble = [](uint32_t k) { return std::rotl(k * c1, 15) * c2; };
  uint32_t h = 0xdeadbeefu * static_cast<uint32_t>(len);
  const size_t blocks = len / 4;
  for (size_t i = 0; i < blocks; ++i) {
    h ^= scramble(Load32Le(data + 4 * i));
    h = std::rotl(h, 13) * 5 + 0xe6546b64u;
  }
  const char* tail = data + 4 * blocks;
  uint32_t k = 0;
  switch (len & 3) {
    case 3:
      k ^= UnsignedByte(tail[2]) << 16;
      [[fallthrough]];
    case 2:
      k ^= UnsignedByte(tail[1]) << 8;
      [[fallthrough]];
    case 1:
      k ^= UnsignedByte(tail[0]);
      h ^= scramble(k);
      break;
    default:
      break;
  }
  h ^= static_cast<uint32_t>(len);
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

namespace {
// lookup3's mix() and final(), on the three lanes.
void Lookup3Mix(uint32_t& a, uint32_t& b, uint32_t& c) noexcept {
  a -= c;
  a ^= std::rotl(c, 4);
  c += b;
  b -= a;
  b ^= std::rotl(a, 6);
  a += c;
  c -= b;
  c ^= std::rotl(b, 8);
  b += a;
  a -= c;
  a ^= std::rotl(c, 16);
  c += b;
  b -= a;
  b ^= std::rotl(a, 19);
  a += c;
  c -= b;
  c ^= std::rotl(b, 4);
  b += a;
}
void Lookup3Final(uint32_t& a, uint32_t& b, uint32_t& c) noexcept {
  c ^= b;
  c -= std::rotl(b, 14);
  a ^= c;
  a -= std::rotl(c, 11);
  b ^= a;
  b -= std::rotl(a, 25);
  c ^= b;
  c -= std::rotl(b, 16);
  a ^= c;
  a -= std::rotl(c, 4);
  b ^= a;
  b -= std::rotl(a, 14);
  c ^= b;
  c -= std::rotl(b, 24);
}
// The little-endian value of bytes [from, to) of `p`, 0..4 of them.
uint32_t LoadPartialLe(const char* p, size_t count) noexcept {
  uint32_t value = 0;
  for (size_t i = 0; i < count; ++i) value |= UnsignedByte(p[i]) << (8 * i);
  return value;
}
}  // namespace

uint32_t JenkinsHashLittle(const char* data, size_t len, uint32_t initval) noexcept {
  uint32_t a = 0xdeadbeefu + static_cast<uint32_t>(len) + initval;
  uint32_t b = a;
  uint32_t c = a;
  while (len > 12) {
    a += Load32Le(data);
    b += Load32Le(data + 4);
    c += Load32Le(data + 8);
    Lookup3Mix(a, b, c);
    len -= 12;
    data += 12;
  }
  if (len == 0) return c;  // lookup3 returns the state unmixed
  // The last 1..12 bytes, little-endian, into a, b, c (the rest zero).
  a += LoadPartialLe(data, len < 4 ? len : 4);
  if (len > 4) b += LoadPartialLe(data + 4, len < 8 ? len - 4 : 4);
  if (len > 8) c += LoadPartialLe(data + 8, len - 8);
  Lookup3Final(a, b, c);
  return c;
}

// ---- MD5 (RFC 1321) -------------------------------------------------------------------

namespace {

// floor(|sin(i + 1)| x 2^32), RFC 1321 section 3.4.
constexpr uint32_t kMd5K[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};
constexpr int kMd5Shift[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                               5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                               4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                               6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};

// Step i of a block: a = b + rotl(a + f(b, c, d) + K[i] + m[g], s[i]),
// with F and G in their one-operation-shorter forms (d ^ (b & (c ^ d)) is
// (b & c) | (~b & d); c ^ (d & (b ^ c)) is (d & b) | (~d & c)).
template <int i>
inline void Md5Step(uint32_t& a, uint32_t b, uint32_t c, uint32_t d, const uint32_t* m) noexcept {
  uint32_t f;
  int g;
  if constexpr (i < 16) {
    f = d ^ (b & (c ^ d));
    g = i;
  } else if constexpr (i < 32) {
    f = c ^ (d & (b ^ c));
    g = (5 * i + 1) % 16;
  } else if constexpr (i < 48) {
    f = b ^ c ^ d;
    g = (3 * i + 5) % 16;
  } else {
    f = c ^ (b | ~d);
    g = (7 * i) % 16;
  }
  a = b + std::rotl(a + f + kMd5K[i] + m[g], kMd5Shift[i]);
}

template <size_t... r>
inline void Md5Steps(uint32_t& a, uint32_t& b, uint32_t& c, uint32_t& d, const uint32_t* m,
                     std::index_sequence<r...>) noexcept {
  ((Md5Step<4 * r>(a, b, c, d, m), Md5Step<4 * r + 1>(d, a, b, c, m),
    Md5Step<4 * r + 2>(c, d, a, b, m), Md5Step<4 * r + 3>(b, c, d, a, m)),
   ...);
}

// One 64-byte block into the state: the 64 steps unrolled at compile time.
inline void Md5Block(uint32_t state[4], const uint8_t* block) noexcept {
  uint32_t m[16];
  for (int i = 0; i < 16; ++i) m[i] = DigestWordLe(block, i);
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
  Md5Steps(a, b, c, d, m, std::make_index_sequence<16>());
  state[0] += a;
  state[1] += b;
  state[2] += c;
  state[3] += d;
}

}  // namespace

void Md5(const void* data, size_t len, uint8_t digest[16]) noexcept {
  uint32_t state[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};
  const auto* bytes = static_cast<const uint8_t*>(data);
  size_t rest = len;
  for (; rest >= 64; rest -= 64, bytes += 64) Md5Block(state, bytes);
  // The tail, 0x80, zeros and the bit length: one block, or two when the
  // tail leaves fewer than 9 bytes of room.
  uint8_t tail[128] = {};
  if (rest > 0) std::memcpy(tail, bytes, rest);
  tail[rest] = 0x80;
  const size_t blocks = rest < 56 ? 1 : 2;
  const uint64_t bits = static_cast<uint64_t>(len) * 8;
  for (int i = 0; i < 8; ++i) tail[64 * blocks - 8 + i] = static_cast<uint8_t>(bits >> (8 * i));
  Md5Block(state, tail);
  if (blocks == 2) Md5Block(state, tail + 64);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) digest[4 * i + j] = static_cast<uint8_t>(state[i] >> (8 * j));
  }
}

uint32_t Md5Le32(const char* data, size_t len) noexcept {
  uint8_t digest[16];
  Md5(data, len, digest);
  return DigestWordLe(digest, 0);
}

namespace {

// OpenSSL 3's one-shot SHA256() fetches the algorithm and allocates a context
// on every call: 350 ns for a 30-byte key on an AMD EPYC, against 90 ns with
// the algorithm fetched once and a context kept a thread (Varnish's rings
// hash every key and every point with it).
struct Sha256Context {
  EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  Sha256Context() = default;
  Sha256Context(const Sha256Context&) = delete;
  Sha256Context& operator=(const Sha256Context&) = delete;
  ~Sha256Context() {
    EVP_MD_CTX_free(ctx);
    EVP_MD_free(md);
  }
};

}  // namespace

uint32_t Sha256Last4Le(const void* data, size_t len) noexcept {
  uint8_t digest[SHA256_DIGEST_LENGTH];
  thread_local Sha256Context context;
  unsigned int size = 0;
  if (context.md == nullptr || context.ctx == nullptr ||
      EVP_DigestInit_ex(context.ctx, context.md, nullptr) != 1 ||
      EVP_DigestUpdate(context.ctx, data, len) != 1 ||
      EVP_DigestFinal_ex(context.ctx, digest, &size) != 1 || size != sizeof(digest)) {
    SHA256(static_cast<const unsigned char*>(data), len, digest);  // allocates its own
  }
  return DigestWordLe(digest, 7);
}

uint64_t XxHash64(const void* data, size_t len, uint64_t seed) noexcept {
  return XXH64(data, len, seed);
}

uint64_t LibstdcxxStringHash(const void* data, size_t len) noexcept {
  static_assert(sizeof(size_t) == 8, "std::hash of a string is 64-bit only on LP64 targets");
  return std::hash<std::string_view>{}(std::string_view(static_cast<const char*>(data), len));
}

// ---- Key hashes -----------------------------------------------------------------------

namespace {
// What a key hashes: twemproxy's hash_tag picks the bytes between the first
// tag[0] and the first tag[1] after it (msg_parse), when there are some.
std::string_view HashedPart(const KeyHasher& hasher, std::string_view key) noexcept {
  if (!hasher.tagged) return key;
  const size_t open = key.find(hasher.tag[0]);
  if (open == std::string_view::npos) return key;
  const size_t close = key.find(hasher.tag[1], open + 1);
  if (close == std::string_view::npos || close - open <= 1) return key;
  return key.substr(open + 1, close - open - 1);
}
}  // namespace

uint64_t HashKey(const KeyHasher& hasher, const char* data, size_t len) noexcept {
  if (hasher.constant_zero || (hasher.zero_for_empty && len == 0)) return 0;
  if (hasher.tagged) {
    const std::string_view part = HashedPart(hasher, std::string_view(data, len));
    data = part.data();
    len = part.size();
  }
  uint32_t h = 0;
  switch (hasher.kind) {
    case KeyHashKind::kCrc32:
      h = Crc32(data, len);
      break;
    case KeyHashKind::kHaproxySdbm:
      h = HaproxySdbm(data, len);
      break;
    case KeyHashKind::kHaproxyDjb2:
      h = HaproxyDjb2(data, len);
      break;
    case KeyHashKind::kHaproxyWt6:
      h = HaproxyWt6(data, len);
      break;
    case KeyHashKind::kMd5Le32:
      h = Md5Le32(data, len);
      break;
    case KeyHashKind::kOneAtATime:
      h = OneAtATime(data, len);
      break;
    case KeyHashKind::kFnv1a64:
      h = Fnv1a64Hashkit(data, len);
      break;
    case KeyHashKind::kFnv1_64:
      h = Fnv1_64Hashkit(data, len);
      break;
    case KeyHashKind::kFnv1_32:
      h = Fnv1_32Hashkit(data, len);
      break;
    case KeyHashKind::kFnv1a32:
      h = Fnv1a32Hashkit(data, len);
      break;
    case KeyHashKind::kCrc32Bits15:
      h = Crc32Bits15Hashkit(data, len);
      break;
    case KeyHashKind::kCrc16:
      h = Crc16Twemproxy(data, len);
      break;
    case KeyHashKind::kHsieh:
      h = HsiehHashkit(data, len);
      break;
    case KeyHashKind::kMurmur:
      h = MurmurHashkit(data, len);
      break;
    case KeyHashKind::kJenkins:
      h = JenkinsHashLittle(data, len, 13);
      break;
    case KeyHashKind::kMurmur3:
      h = Murmur3Hashkit(data, len);
      break;
    case KeyHashKind::kSha256Last4:
      h = Sha256Last4Le(data, len);
      break;
    case KeyHashKind::kXxh64:
      return XxHash64(data, len, 0);
  }
  return hasher.avalanche ? HaproxyFullHash(h) : h;
}

void HashKeys(const KeyHasher& hasher, const std::string_view* keys, size_t count,
              uint64_t* out) noexcept {
  if (hasher.kind != KeyHashKind::kMd5Le32 || hasher.constant_zero || count < 2) {
    for (size_t i = 0; i < count; ++i) out[i] = HashKey(hasher, keys[i].data(), keys[i].size());
    return;
  }
  // MD5 a SIMD lane a key (hash/md5_lanes-inl.h), 64 keys at a time.
  constexpr size_t kChunk = 64;
  std::string_view parts[kChunk];
  uint32_t words[4 * kChunk];
  for (size_t first = 0; first < count; first += kChunk) {
    const size_t n = count - first < kChunk ? count - first : kChunk;
    for (size_t i = 0; i < n; ++i) parts[i] = HashedPart(hasher, keys[first + i]);
    DispatchMd5Messages(parts, n, words);
    for (size_t i = 0; i < n; ++i) {
      out[first + i] = hasher.zero_for_empty && keys[first + i].empty() ? 0 : words[4 * i];
    }
  }
}

}  // namespace chash::internal
