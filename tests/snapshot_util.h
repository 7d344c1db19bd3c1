// Helpers of the snapshot tests (snapshot_test, snapshot_flavors_test,
// snapshot_faults_test, capi_snapshot_test): a version's write options, the
// check a refusal names, the fields of a file's bytes, and what a loaded
// ring must share with the ring it was written from. Header-only.
#ifndef CHASH_TESTS_SNAPSHOT_UTIL_H_
#define CHASH_TESTS_SNAPSHOT_UTIL_H_

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "chash/chash.h"
#include "chash/snapshot.h"
#include "snapshot/format.h"

namespace chash::testing {

// The write options of `config_version`, labelled `label`.
inline SnapshotWriteOptions Versioned(uint64_t config_version, std::string label = "") {
  SnapshotWriteOptions options;
  options.config_version = config_version;
  options.label = std::move(label);
  return options;
}

// The name of the check a refusal names ("" for none).
inline std::string_view CheckOf(const Status& status) {
  return status.ok() ? std::string_view() : SnapshotCheckName(FailedSnapshotCheck(status));
}

// The little-endian T (uint8_t to uint64_t) at `at` of a file's bytes.
template <typename T>
T LoadAt(const std::string& bytes, size_t at) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data()) + at;
  if constexpr (sizeof(T) == 1) return static_cast<T>(*p);
  if constexpr (sizeof(T) == 2) return static_cast<T>(internal::snapshot::LoadU16(p));
  if constexpr (sizeof(T) == 4) return static_cast<T>(internal::snapshot::LoadU32(p));
  if constexpr (sizeof(T) == 8) return static_cast<T>(internal::snapshot::LoadU64(p));
}

// `bytes` with the little-endian `value` (T's width) stored at `at`.
template <typename T>
std::string StoredAt(std::string bytes, size_t at, T value) {
  auto* p = reinterpret_cast<uint8_t*>(bytes.data()) + at;
  if constexpr (sizeof(T) == 1) *p = static_cast<uint8_t>(value);
  if constexpr (sizeof(T) == 2) internal::snapshot::StoreU16(p, static_cast<uint16_t>(value));
  if constexpr (sizeof(T) == 4) internal::snapshot::StoreU32(p, static_cast<uint32_t>(value));
  if constexpr (sizeof(T) == 8) internal::snapshot::StoreU64(p, static_cast<uint64_t>(value));
  return bytes;
}

// The offset of a section, from the header's first list of sections or,
// for format 1.4's kFlavorOptions and kLowColumn, from its second.
inline uint64_t SectionOffset(const std::string& bytes, uint32_t section) {
  namespace fmt = internal::snapshot;
  return section < fmt::kSectionCount
             ? LoadAt<uint64_t>(bytes, fmt::kOffSections + 16 * section)
             : LoadAt<uint64_t>(bytes, fmt::kOffSectionsMore + 16 * (section - fmt::kSectionCount));
}

// Recomputes the trailer's checksum after an edit, so that the structural
// check behind it is the one that must fail.
inline void FixChecksum(std::string& bytes) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  const std::array<uint8_t, 16> sum = internal::snapshot::Checksum(data, bytes.size() - 16);
  std::memcpy(bytes.data() + bytes.size() - 16, sum.data(), 16);
}

// What a loaded ring shares with the ring it was written from, lookups
// aside: its sizes, flavor, multiple and tie-break, and every node's
// address, weight and points.
inline void ExpectSameShape(const Ring& built, const Ring& loaded) {
  ASSERT_EQ(built.num_points(), loaded.num_points());
  ASSERT_EQ(built.num_nodes(), loaded.num_nodes());
  EXPECT_EQ(built.points_generated(), loaded.points_generated());
  EXPECT_EQ(built.nodes_with_points(), loaded.nodes_with_points());
  EXPECT_EQ(built.flavor(), loaded.flavor());
  EXPECT_EQ(built.point_multiple(), loaded.point_multiple());
  EXPECT_EQ(built.tie_break(), loaded.tie_break());
  for (uint32_t id = 0; id < built.num_nodes(); ++id) {
    ASSERT_EQ(built.node(id).address.written, loaded.node(id).address.written) << id;
    ASSERT_EQ(built.node(id).weight, loaded.node(id).weight) << id;
    ASSERT_EQ(built.owns_points(id), loaded.owns_points(id)) << id;
    ASSERT_EQ(built.has_points(id), loaded.has_points(id)) << id;
  }
}

}  // namespace chash::testing

#endif  // CHASH_TESTS_SNAPSHOT_UTIL_H_
