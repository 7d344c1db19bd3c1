// CRC-32/IEEE with the ARMv8 CRC32 instructions (crc32x/w/h/b: the IEEE
// polynomial; the crc32c* ones are Castagnoli's). Optional in ARMv8.0,
// mandatory from 8.1; crc32.cc checks HWCAP_CRC32 before calling. The
// function carries the +crc target attribute: no -march on the library.
#include "hash/crc32_internal.h"

#if defined(__aarch64__)
#include <arm_acle.h>
#include <sys/auxv.h>

#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)  // linux/arch/arm64/include/uapi/asm/hwcap.h
#endif

namespace chash::internal {
namespace {

#define CHASH_TARGET_ARM_CRC __attribute__((target("+crc")))

uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

CHASH_TARGET_ARM_CRC inline uint32_t ArmUpdate(uint32_t state, const uint8_t* p, size_t len) {
  for (; len >= 8; p += 8, len -= 8) state = __crc32d(state, Load64(p));
  if (len & 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    state = __crc32w(state, v);
    p += 4;
  }
  if (len & 2) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    state = __crc32h(state, v);
    p += 2;
  }
  if (len & 1) state = __crc32b(state, *p);
  return state;
}

}  // namespace

bool CpuHasArmCrc32() noexcept { return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }

uint32_t Crc32ExtendArm(uint32_t crc, const uint8_t* data, size_t len) noexcept {
  return ~ArmUpdate(~crc, data, len);
}

// Four keys at a time: the crc32x of each is 2-3 cycles of latency but one a
// cycle of throughput, so their common 8-byte words go in lockstep.
CHASH_TARGET_ARM_CRC void Crc32KeysArm(const std::string_view* keys, size_t count,
                                       uint32_t* out) noexcept {
  size_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const uint8_t* p[4];
    size_t common = keys[i].size();
    uint32_t s[4];
    for (size_t k = 0; k < 4; ++k) {
      p[k] = reinterpret_cast<const uint8_t*>(keys[i + k].data());
      common = std::min(common, keys[i + k].size());
      s[k] = 0xFFFFFFFFu;
    }
    const size_t words = common / 8;
    for (size_t w = 0; w < words; ++w) {
      for (size_t k = 0; k < 4; ++k) s[k] = __crc32d(s[k], Load64(p[k] + 8 * w));
    }
    for (size_t k = 0; k < 4; ++k) {
      out[i + k] = ~ArmUpdate(s[k], p[k] + 8 * words, keys[i + k].size() - 8 * words);
    }
  }
  for (; i < count; ++i) {
    out[i] = Crc32ExtendArm(0, reinterpret_cast<const uint8_t*>(keys[i].data()), keys[i].size());
  }
}

}  // namespace chash::internal

#endif  // __aarch64__
