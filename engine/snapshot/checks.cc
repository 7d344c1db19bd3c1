// The names of the snapshot checks (SnapshotCheck), as messages spell them.
#include <array>
#include <string_view>

#include "chash/snapshot.h"

namespace chash {
namespace {

constexpr std::array<std::string_view, kSnapshotCheckCount> kCheckNames = {
    "none",        "io",          "not_regular", "max_size",   "sparse",
    "size",        "magic",       "version",     "header",     "sections",
    "min_version", "expired",     "signature",   "checksum",   "label",
    "node_table",  "hash_column", "node_column", "collisions", "subsets",
    "index",       "fingerprint", "points_digest", "rollback", "same_version",
    "out_of_memory", "flavor",    "address",     "backend_mismatch", "embedder",
    "options",     "low_column",
};

}  // namespace

std::string_view SnapshotCheckName(SnapshotCheck check) noexcept {
  const auto index = static_cast<size_t>(check);
  return index < kCheckNames.size() ? kCheckNames[index] : std::string_view("unknown");
}

StatusCode CodeOfSnapshotCheck(SnapshotCheck check) noexcept {
  switch (check) {
    case SnapshotCheck::kNone:
      return StatusCode::kOk;
    case SnapshotCheck::kIo:
    case SnapshotCheck::kNotRegular:
      return StatusCode::kIoError;
    case SnapshotCheck::kMinVersion:
    case SnapshotCheck::kExpired:
    case SnapshotCheck::kSignature:
    case SnapshotCheck::kRollback:
    case SnapshotCheck::kSameVersion:
      return StatusCode::kUntrusted;
    case SnapshotCheck::kOutOfMemory:
      return StatusCode::kOutOfMemory;
    default:
      return StatusCode::kBadSnapshot;
  }
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
  for (size_t i = 1; i < kCheckNames.size(); ++i) {
    if (kCheckNames[i] == name) return static_cast<SnapshotCheck>(i);
  }
  return SnapshotCheck::kNone;
}

}  // namespace chash
