// CRC-32/IEEE against zlib's crc32(), the oracle, for every implementation
// compiled in and for the public entry points.
#include <zlib.h>

#include <random>
#include <vector>

#include "hash/crc32_internal.h"
#include "test_util.h"

namespace chash {
namespace {

uint32_t Zlib(uint32_t crc, const uint8_t* data, size_t len) {
  return static_cast<uint32_t>(crc32(crc, data, static_cast<uInt>(len)));
}

TEST(Crc32, CheckValue) {
  // The catalogue check value of CRC-32/ISO-HDLC (zlib's CRC).
  EXPECT_EQ(Crc32(std::string_view("123456789")), 0xCBF43926u);
  EXPECT_EQ(Crc32(std::string_view("")), 0u);
  EXPECT_EQ(Crc32(std::string_view("a")), 0xE8B7BE43u);
}

TEST(Crc32, EveryImplementationEqualsZlibForEveryLengthAndAlignment) {
  std::mt19937 rng(7);
  std::vector<uint8_t> buffer(4096 + 64);
  for (uint8_t& byte : buffer) byte = static_cast<uint8_t>(rng());
  const auto implementations = internal::Crc32Implementations();
  ASSERT_FALSE(implementations.empty());
  for (const internal::Crc32Implementation& impl : implementations) {
    if (!impl.supported) continue;  // reported below: at least one must run
    SCOPED_TRACE(impl.name);
    for (size_t len = 0; len <= 4096; len += (len < 300 ? 1 : 37)) {
      for (size_t offset = 0; offset < 16; ++offset) {
        const uint8_t* data = buffer.data() + offset;
        const uint32_t seed = static_cast<uint32_t>(rng());
        ASSERT_EQ(impl.extend(0, data, len), Zlib(0, data, len)) << len << " @" << offset;
        ASSERT_EQ(impl.extend(seed, data, len), Zlib(seed, data, len)) << len;
      }
    }
  }
  size_t supported = 0;
  for (const auto& impl : implementations) supported += impl.supported;
  EXPECT_GE(supported, 1u);
}

TEST(Crc32, ExtendComposes) {
  const std::string a = "HOST", b = std::string("\0PORT", 5);
  EXPECT_EQ(Crc32Extend(Crc32(a), b.data(), b.size()), Crc32(a + b));
  EXPECT_EQ(Crc32Extend(0, a.data(), a.size()), Crc32(a));
}

TEST(Crc32, PointStepEqualsZlibOverFourLittleEndianBytes) {
  std::mt19937 rng(11);
  for (int i = 0; i < 10000; ++i) {
    const uint32_t base_crc = static_cast<uint32_t>(rng());
    const uint32_t prev = static_cast<uint32_t>(rng());
    const uint8_t le[4] = {uint8_t(prev), uint8_t(prev >> 8), uint8_t(prev >> 16),
                           uint8_t(prev >> 24)};
    ASSERT_EQ(internal::Crc32PointStep(~base_crc, prev), Zlib(base_crc, le, 4));
  }
}

}  // namespace
}  // namespace chash
