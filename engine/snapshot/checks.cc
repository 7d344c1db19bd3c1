// The snapshot checks' names and status codes (SnapshotCheck), one table.
#include <array>
#include <string_view>

#include "chash/snapshot.h"

namespace chash {
namespace {

// A check's facts: its name as messages spell it, and the status code a
// failure of it carries. One row a check, in SnapshotCheck's order.
struct CheckRow {
  SnapshotCheck check;
  std::string_view name;
  StatusCode code;
};

constexpr std::array<CheckRow, kSnapshotCheckCount> kChecks = {{
    {SnapshotCheck::kNone, "none", StatusCode::kOk},
    {SnapshotCheck::kIo, "io", StatusCode::kIoError},
    {SnapshotCheck::kNotRegular, "not_regular", StatusCode::kIoError},
    {SnapshotCheck::kMaxSize, "max_size", StatusCode::kBadSnapshot},
    {SnapshotCheck::kSparse, "sparse", StatusCode::kBadSnapshot},
    {SnapshotCheck::kSize, "size", StatusCode::kBadSnapshot},
    {SnapshotCheck::kMagic, "magic", StatusCode::kBadSnapshot},
    {SnapshotCheck::kVersion, "version", StatusCode::kBadSnapshot},
    {SnapshotCheck::kHeader, "header", StatusCode::kBadSnapshot},
    {SnapshotCheck::kSections, "sections", StatusCode::kBadSnapshot},
    {SnapshotCheck::kMinVersion, "min_version", StatusCode::kUntrusted},
    {SnapshotCheck::kExpired, "expired", StatusCode::kUntrusted},
    {SnapshotCheck::kSignature, "signature", StatusCode::kUntrusted},
    {SnapshotCheck::kChecksum, "checksum", StatusCode::kBadSnapshot},
    {SnapshotCheck::kLabel, "label", StatusCode::kBadSnapshot},
    {SnapshotCheck::kNodeTable, "node_table", StatusCode::kBadSnapshot},
    {SnapshotCheck::kHashColumn, "hash_column", StatusCode::kBadSnapshot},
    {SnapshotCheck::kNodeColumn, "node_column", StatusCode::kBadSnapshot},
    {SnapshotCheck::kCollisions, "collisions", StatusCode::kBadSnapshot},
    {SnapshotCheck::kSubsets, "subsets", StatusCode::kBadSnapshot},
    {SnapshotCheck::kIndex, "index", StatusCode::kBadSnapshot},
    {SnapshotCheck::kFingerprint, "fingerprint", StatusCode::kBadSnapshot},
    {SnapshotCheck::kPointsDigest, "points_digest", StatusCode::kBadSnapshot},
    {SnapshotCheck::kRollback, "rollback", StatusCode::kUntrusted},
    {SnapshotCheck::kSameVersion, "same_version", StatusCode::kUntrusted},
    {SnapshotCheck::kOutOfMemory, "out_of_memory", StatusCode::kOutOfMemory},
    {SnapshotCheck::kFlavor, "flavor", StatusCode::kBadSnapshot},
    {SnapshotCheck::kAddress, "address", StatusCode::kBadSnapshot},
    {SnapshotCheck::kBackendMismatch, "backend_mismatch", StatusCode::kBadSnapshot},
    {SnapshotCheck::kEmbedder, "embedder", StatusCode::kBadSnapshot},
    {SnapshotCheck::kOptions, "options", StatusCode::kBadSnapshot},
    {SnapshotCheck::kLowColumn, "low_column", StatusCode::kBadSnapshot},
}};

constexpr bool RowsFollowTheEnum() {
  for (size_t i = 0; i < kChecks.size(); ++i) {
    if (static_cast<size_t>(kChecks[i].check) != i) return false;
  }
  return true;
}
static_assert(RowsFollowTheEnum(), "kChecks: one row a SnapshotCheck, in its order");

}  // namespace

std::string_view SnapshotCheckName(SnapshotCheck check) noexcept {
  const auto index = static_cast<size_t>(check);
  return index < kChecks.size() ? kChecks[index].name : std::string_view("unknown");
}

StatusCode CodeOfSnapshotCheck(SnapshotCheck check) noexcept {
  const auto index = static_cast<size_t>(check);
  return index < kChecks.size() ? kChecks[index].code : StatusCode::kBadSnapshot;
}

SnapshotCheck FailedSnapshotCheck(const Status& status) noexcept {
  if (status.ok()) return SnapshotCheck::kNone;
  if (status.code() == StatusCode::kOutOfMemory) return SnapshotCheck::kOutOfMemory;
  if (status.code() != StatusCode::kBadSnapshot && status.code() != StatusCode::kUntrusted &&
      status.code() != StatusCode::kIoError) {
    return SnapshotCheck::kNone;
  }
  const std::string_view message = status.message();
  const size_t colon = message.find(':');
  if (colon == std::string_view::npos) return SnapshotCheck::kNone;
  const std::string_view name = message.substr(0, colon);
  for (size_t i = 1; i < kChecks.size(); ++i) {
    if (kChecks[i].name == name) return kChecks[i].check;
  }
  return SnapshotCheck::kNone;
}

}  // namespace chash
