// Portable CRC-32/IEEE: slice-by-8 (eight table lookups per 8 input bytes).
#include <cstring>

#include "chash/crc32.h"
#include "hash/crc32_internal.h"

namespace chash {
namespace internal {

uint32_t Crc32UpdateRaw(uint32_t state, const uint8_t* data, size_t len) noexcept {
  const auto& t = kCrc32Tables;
  while (len >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, data, 4);  // little-endian hosts only (x86-64, aarch64)
    std::memcpy(&hi, data + 4, 4);
    lo ^= state;
    state = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^
            t[4][lo >> 24] ^ t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^
            t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    data += 8;
    len -= 8;
  }
  while (len-- > 0) state = (state >> 8) ^ t[0][(state ^ *data++) & 0xFF];
  return state;
}

namespace {
uint32_t SliceBy8Extend(uint32_t crc, const uint8_t* data, size_t len) noexcept {
  return ~Crc32UpdateRaw(~crc, data, len);
}
constexpr Crc32Implementation kImplementations[] = {
    {"slice-by-8", SliceBy8Extend, true},
};
}  // namespace

std::span<const Crc32Implementation> Crc32Implementations() noexcept {
  return kImplementations;
}

void Crc32Keys(const std::string_view* keys, size_t count, uint32_t* out) noexcept {
  for (size_t i = 0; i < count; ++i) out[i] = Crc32(keys[i]);
}

}  // namespace internal

uint32_t Crc32Extend(uint32_t crc, const void* data, size_t len) noexcept {
  return ~internal::Crc32UpdateRaw(~crc, static_cast<const uint8_t*>(data), len);
}

}  // namespace chash
