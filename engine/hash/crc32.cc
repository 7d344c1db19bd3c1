// CRC-32/IEEE: the portable slice-by-8, and the choice, made once per process
// from the CPU, among it and the accelerated implementations
// (crc32_x86.cc, crc32_arm.cc).
#include <cstring>

#include "chash/crc32.h"
#include "chash/dispatch.h"
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

void SliceBy8Keys(const std::string_view* keys, size_t count, uint32_t* out) noexcept {
  for (size_t i = 0; i < count; ++i) {
    out[i] = SliceBy8Extend(0, reinterpret_cast<const uint8_t*>(keys[i].data()), keys[i].size());
  }
}

using KeysFunction = void (*)(const std::string_view*, size_t, uint32_t*) noexcept;

struct Backend {
  const Crc32Implementation* implementation;
  KeysFunction keys;
};

// Best first; the first supported one is used.
const std::vector<std::pair<Crc32Implementation, KeysFunction>>& Candidates() {
  static const std::vector<std::pair<Crc32Implementation, KeysFunction>> candidates = {
#if defined(__x86_64__)
      {{"vpclmul-avx512", Crc32ExtendVpclmul, CpuHasVpclmulAvx512()}, Crc32KeysPclmul},
      {{"pclmul", Crc32ExtendPclmul, CpuHasPclmul()}, Crc32KeysPclmul},
#endif
#if defined(__aarch64__)
      {{"armv8-crc32", Crc32ExtendArm, CpuHasArmCrc32()}, Crc32KeysArm},
#endif
      {{"slice-by-8", SliceBy8Extend, true}, SliceBy8Keys},
  };
  return candidates;
}

const Backend& Best() noexcept {
  static const Backend best = [] {
    for (const auto& [implementation, keys] : Candidates()) {
      if (implementation.supported) return Backend{&implementation, keys};
    }
    return Backend{&Candidates().back().first, SliceBy8Keys};
  }();
  return best;
}

}  // namespace

std::span<const Crc32Implementation> Crc32Implementations() noexcept {
  static const std::vector<Crc32Implementation> implementations = [] {
    std::vector<Crc32Implementation> list;
    for (const auto& candidate : Candidates()) list.push_back(candidate.first);
    return list;
  }();
  return implementations;
}

void Crc32Keys(const std::string_view* keys, size_t count, uint32_t* out) noexcept {
  Best().keys(keys, count, out);
}

const char* Crc32ImplementationName() noexcept { return Best().implementation->name; }

}  // namespace internal

std::string_view ActiveCrc32Name() noexcept { return internal::Crc32ImplementationName(); }

uint32_t Crc32Extend(uint32_t crc, const void* data, size_t len) noexcept {
  return internal::Best().implementation->extend(crc, static_cast<const uint8_t*>(data), len);
}

}  // namespace chash
