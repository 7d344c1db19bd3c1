// CRC-32/IEEE against zlib's crc32(), the oracle, for every implementation
// compiled in and supported here (slice-by-8, PCLMULQDQ, VPCLMULQDQ, ARMv8
// CRC32) and for the public entry points: every length 0..4 KiB at every
// alignment in a cache line, continuation from any state, the batch path.
#include <zlib.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "hash/crc32_internal.h"
#include "test_util.h"

namespace chash {
namespace {

using testing::Scaled;

uint32_t Zlib(uint32_t crc, const uint8_t* data, size_t len) {
  return static_cast<uint32_t>(crc32(crc, data, static_cast<uInt>(len)));
}

std::vector<const internal::Crc32Implementation*> Supported() {
  std::vector<const internal::Crc32Implementation*> list;
  for (const internal::Crc32Implementation& implementation : internal::Crc32Implementations()) {
    if (implementation.supported) list.push_back(&implementation);
  }
  return list;
}

TEST(Crc32, ListsTheImplementationInUse) {
  bool found = false;
  std::string names;
  for (const internal::Crc32Implementation& implementation : internal::Crc32Implementations()) {
    names += std::string(implementation.name) + (implementation.supported ? "+ " : "- ");
    found |= std::string(implementation.name) == internal::Crc32ImplementationName();
  }
  std::printf("CRC32 implementations (+ supported): %s; in use: %s\n", names.c_str(),
              internal::Crc32ImplementationName());
  EXPECT_TRUE(found);
  EXPECT_EQ(Supported().back()->name, std::string("slice-by-8"));
}

TEST(Crc32, EveryLengthAtEveryCacheLineAlignmentEndsAtTheBuffer) {
  constexpr size_t kMaxLength = 4096;
  constexpr size_t kAlignments = 64;
  std::mt19937_64 rng(11);
  std::vector<uint8_t> message(kMaxLength);
  for (uint8_t& byte : message) byte = static_cast<uint8_t>(rng());
  // The buffer ends right after the message at every alignment, so an
  // implementation that reads past the end is caught by ASan.
  std::vector<uint32_t> expected(kMaxLength + 1);
  for (size_t len = 0; len <= kMaxLength; ++len) expected[len] = Zlib(0, message.data(), len);
  for (const internal::Crc32Implementation* implementation : Supported()) {
    size_t failures = 0;
    for (size_t align = 0; align < kAlignments; ++align) {
      for (size_t len = 0; len <= kMaxLength; ++len) {
        std::vector<uint8_t> buffer(align + len);
        std::copy(message.begin(), message.begin() + static_cast<ptrdiff_t>(len),
                  buffer.begin() + static_cast<ptrdiff_t>(align));
        const uint32_t got = implementation->extend(0, buffer.data() + align, len);
        if (got != expected[len] && ++failures <= 5) {
          ADD_FAILURE() << implementation->name << ": length " << len << ", alignment "
                        << align << ": " << std::hex << got << " != zlib " << expected[len];
        }
      }
    }
    EXPECT_EQ(failures, 0u) << implementation->name;
  }
}

TEST(Crc32, ContinuesFromAnyState) {
  std::mt19937_64 rng(12);
  std::vector<uint8_t> data(5000);
  for (uint8_t& byte : data) byte = static_cast<uint8_t>(rng());
  for (const internal::Crc32Implementation* implementation : Supported()) {
    for (size_t trial = 0; trial < Scaled(3000, 300); ++trial) {
      const size_t len = rng() % data.size();
      const size_t split = len == 0 ? 0 : rng() % (len + 1);
      const uint32_t start = static_cast<uint32_t>(rng());
      const uint32_t first = implementation->extend(start, data.data(), split);
      ASSERT_EQ(first, Zlib(start, data.data(), split)) << implementation->name;
      ASSERT_EQ(implementation->extend(first, data.data() + split, len - split),
                Zlib(start, data.data(), len))
          << implementation->name << " len " << len << " split " << split;
    }
  }
}

TEST(Crc32, BatchEqualsSingle) {
  std::mt19937_64 rng(13);
  for (const size_t max_length : {8, 40, 300}) {
    std::vector<std::string> keys(Scaled(2000, 200) + 3);
    for (std::string& key : keys) {
      key.resize(rng() % max_length);
      for (char& c : key) c = static_cast<char>(rng());
    }
    std::vector<std::string_view> views(keys.begin(), keys.end());
    std::vector<uint32_t> batch(keys.size());
    internal::Crc32Keys(views.data(), views.size(), batch.data());
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(batch[i], Zlib(0, reinterpret_cast<const uint8_t*>(keys[i].data()),
                               keys[i].size()))
          << "key " << i << " of length " << keys[i].size();
    }
  }
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
