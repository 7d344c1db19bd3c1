// CRC-32/IEEE: the portable slice-by-8, and the choice, made once per process
// from the CPU, among it and the accelerated implementations
// (crc32_x86.cc, crc32_arm.cc).
#include <array>
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

// Every implementation compiled in, best first, and its batch form. Static
// storage, filled once (thread-safe), never allocates: Crc32Extend is
// noexcept.
struct Candidates {
  static constexpr size_t kMax = 4;
  std::array<Crc32Implementation, kMax> implementations;
  std::array<KeysFunction, kMax> keys;
  size_t count = 0;

  void Add(Crc32Implementation implementation, KeysFunction keys_function) noexcept {
    implementations[count] = implementation;
    keys[count++] = keys_function;
  }
};

const Candidates& AllCandidates() noexcept {
  static const Candidates candidates = [] {
    Candidates list;
#if defined(__x86_64__)
    list.Add({"vpclmul-avx512", Crc32ExtendVpclmul, CpuHasVpclmulAvx512()}, Crc32KeysPclmul);
    list.Add({"pclmul", Crc32ExtendPclmul, CpuHasPclmul()}, Crc32KeysPclmul);
#endif
#if defined(__aarch64__)
    list.Add({"armv8-crc32", Crc32ExtendArm, CpuHasArmCrc32()}, Crc32KeysArm);
#endif
    list.Add({"slice-by-8", SliceBy8Extend, true}, SliceBy8Keys);
    return list;
  }();
  return candidates;
}

// The first supported candidate (slice-by-8, last, always is).
size_t BestIndex() noexcept {
  static const size_t best = [] {
    const Candidates& all = AllCandidates();
    size_t i = 0;
    while (!all.implementations[i].supported) ++i;
    return i;
  }();
  return best;
}

}  // namespace

std::span<const Crc32Implementation> Crc32Implementations() noexcept {
  const Candidates& all = AllCandidates();
  return {all.implementations.data(), all.count};
}

void Crc32Keys(const std::string_view* keys, size_t count, uint32_t* out) noexcept {
  AllCandidates().keys[BestIndex()](keys, count, out);
}

const char* Crc32ImplementationName() noexcept {
  return AllCandidates().implementations[BestIndex()].name;
}

}  // namespace internal

std::string_view ActiveCrc32Name() noexcept { return internal::Crc32ImplementationName(); }

uint32_t Crc32Extend(uint32_t crc, const void* data, size_t len) noexcept {
  return internal::AllCandidates()
      .implementations[internal::BestIndex()]
      .extend(crc, static_cast<const uint8_t*>(data), len);
}

}  // namespace chash
