// Internal entry points of the snapshot loader, for the reloader.
#ifndef CHASH_ENGINE_SNAPSHOT_LOADER_H_
#define CHASH_ENGINE_SNAPSHOT_LOADER_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "chash/snapshot.h"

namespace chash::internal {

// Which file a path named when it was opened (fstat of the descriptor).
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  int64_t size = -1;
  int64_t mtime_ns = 0;
  friend bool operator==(const FileIdentity&, const FileIdentity&) = default;
};

// FileIdentity of the path now (stat); size -1 if it cannot be stat-ed.
FileIdentity IdentityOfPath(const std::string& path) noexcept;

// LoadSnapshot that also reports the identity of the file it opened (set
// whenever the open succeeded, even if a check then failed).
Result<std::shared_ptr<const RingSnapshot>> LoadSnapshotFile(const std::string& path,
                                                             const SnapshotLoadOptions& options,
                                                             FileIdentity* identity);

}  // namespace chash::internal

#endif  // CHASH_ENGINE_SNAPSHOT_LOADER_H_
