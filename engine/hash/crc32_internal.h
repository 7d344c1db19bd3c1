// CRC-32/IEEE building blocks for the engine: the raw (not finalized) state
// that point chains continue from, and the slice-by-8 tables behind them.
#ifndef CHASH_ENGINE_HASH_CRC32_INTERNAL_H_
#define CHASH_ENGINE_HASH_CRC32_INTERNAL_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace chash::internal {

inline constexpr uint32_t kCrc32Polynomial = 0xEDB88320u;  // reflected 0x04C11DB7

// kCrc32Tables[0] is the byte-at-a-time table; kCrc32Tables[k][b] is the CRC
// of byte b followed by k zero bytes (the slice-by-8 tables), computed at
// compile time so there is no generated file to keep in sync.
inline constexpr std::array<std::array<uint32_t, 256>, 8> kCrc32Tables = [] {
  std::array<std::array<uint32_t, 256>, 8> tables{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (kCrc32Polynomial & (0u - (crc & 1u)));
    tables[0][byte] = crc;
  }
  for (uint32_t byte = 0; byte < 256; ++byte) {
    for (int k = 1; k < 8; ++k) {
      const uint32_t prev = tables[k - 1][byte];
      tables[k][byte] = (prev >> 8) ^ tables[0][prev & 0xFF];
    }
  }
  return tables;
}();

// Continues a raw CRC state (initial state 0xFFFFFFFF, no final xor) over
// `len` bytes. Portable slice-by-8.
uint32_t Crc32UpdateRaw(uint32_t state, const uint8_t* data, size_t len) noexcept;

// Every CRC-32 implementation compiled in, for tests, fuzzers and
// benchmarks that must check each one (Crc32Extend uses the best supported).
// `extend` has zlib semantics: extend(crc32(a), b, len(b)) == crc32(a + b).
struct Crc32Implementation {
  const char* name;
  uint32_t (*extend)(uint32_t crc, const uint8_t* data, size_t len) noexcept;
  bool supported;  // this CPU can run it
};
std::span<const Crc32Implementation> Crc32Implementations() noexcept;

// out[i] = Crc32(keys[i]) for a batch, with the best supported
// implementation; several keys' CRCs are interleaved to hide each one's
// latency.
void Crc32Keys(const std::string_view* keys, size_t count, uint32_t* out) noexcept;

// The name of the implementation Crc32Extend and Crc32Keys use here.
const char* Crc32ImplementationName() noexcept;

// ---- Per-architecture implementations (call only where supported) ----------
#if defined(__x86_64__)
bool CpuHasPclmul() noexcept;
bool CpuHasVpclmulAvx512() noexcept;
uint32_t Crc32ExtendPclmul(uint32_t crc, const uint8_t* data, size_t len) noexcept;
uint32_t Crc32ExtendVpclmul(uint32_t crc, const uint8_t* data, size_t len) noexcept;
void Crc32KeysPclmul(const std::string_view* keys, size_t count, uint32_t* out) noexcept;
#endif
#if defined(__aarch64__)
bool CpuHasArmCrc32() noexcept;
uint32_t Crc32ExtendArm(uint32_t crc, const uint8_t* data, size_t len) noexcept;
void Crc32KeysArm(const std::string_view* keys, size_t count, uint32_t* out) noexcept;
#endif

// One ketama point step: the raw state after HOST "\0" PORT, continued over
// the previous point hash as 4 little-endian bytes, finalized. Equal to
// zlib crc32(base_crc, prev_le32, 4) with base_crc = ~state.
inline uint32_t Crc32PointStep(uint32_t base_state, uint32_t prev_hash) noexcept {
  const auto& t = kCrc32Tables;
  const uint32_t x = base_state ^ prev_hash;  // little-endian bytes of prev
  return ~(t[3][x & 0xFF] ^ t[2][(x >> 8) & 0xFF] ^ t[1][(x >> 16) & 0xFF] ^
           t[0][x >> 24]);
}

}  // namespace chash::internal

#endif  // CHASH_ENGINE_HASH_CRC32_INTERNAL_H_
