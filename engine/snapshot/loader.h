// The loader's internal entry points: the checks over bytes
// (snapshot_reader.cc), the files they come from (snapshot_open.cc: the
// pre-body checks, sealed copies, adoption of another process's sealed
// copy), for the reloader and the public load calls.
#ifndef CHASH_ENGINE_SNAPSHOT_LOADER_H_
#define CHASH_ENGINE_SNAPSHOT_LOADER_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chash/snapshot.h"
#include "snapshot/format.h"

namespace chash {
namespace internal {

// The header and trailer's fields, as ParseFixedHeader reads them.
struct Header {
  SnapshotInfo info;
  uint32_t flags = 0;
  // Sections 8 and 9 only in files of the other programs' flavors
  // (section_count 10); zero otherwise.
  uint64_t offset[snapshot::kMaxSectionCount] = {};
  uint64_t length[snapshot::kMaxSectionCount] = {};
  uint32_t section_count = snapshot::kSectionCount;
  uint64_t trailer = 0;
  uint32_t subsets = 0;  // named subsets in the subset section
};

// What the pre-body checks found: the header, and the trusted key that
// signed the file (nullptr without trusted keys).
struct Prechecked {
  Header header;
  const PublicKey* signer = nullptr;
};

// The reload policy's versions, checked on the header before the body:
// below `version` is a rollback; `version` with another fingerprint is
// same_version; `version` with this fingerprint is loaded and checked as
// any file (a copy of the ring served must still prove its bytes: a
// damaged one is refused, not taken for the ring served).
struct VersionFloor {
  uint64_t version = 0;
  Fingerprint fingerprint;
};

// The checks before a byte of the body is read, on the header's 512 bytes
// and the trailer's 128 of a file of `size` bytes: size, magic, version,
// header, sections (the table), min_version, rollback and same_version
// (with a floor), expired, signature (signed by a trusted key). O(keys).
Status Precheck(const uint8_t* head, const uint8_t* trailer, uint64_t size,
                const SnapshotLoadOptions& options, const VersionFloor* floor,
                Prechecked& out);

// Which file a path named (stat or fstat): device, inode, size, mtime.
struct FileIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  int64_t size = -1;  // -1: the path could not be stat-ed
  int64_t mtime_ns = 0;
  friend bool operator==(const FileIdentity&, const FileIdentity&) = default;
};
FileIdentity IdentityOf(const struct stat& st) noexcept;
// The identity of the path now (stat, symlinks followed); size -1 if it
// cannot be stat-ed.
FileIdentity IdentityOfPath(const std::string& path) noexcept;

// A sealed memory file holding a verified snapshot, as another process
// names it to adopt it: the holder's pid and descriptor, and the memory
// file's own identity (so that a descriptor number reused for something
// else is refused).
struct SealedCopy {
  int fd = -1;
  dev_t device = 0;
  ino_t inode = 0;
  uint64_t size = 0;
};

// A load from a file, and what the reloader needs to know about it.
struct LoadedFile {
  std::shared_ptr<const RingSnapshot> snapshot;
  FileIdentity identity;    // of the file opened (before and after the copy)
  SealedCopy sealed;        // kSealed: the copy's descriptor, valid while snapshot lives
  bool changed_while_read = false;  // a refusal that says nothing about the file's content
};

// Opens the path without blocking (O_NONBLOCK: a FIFO is refused, never
// waited on), runs the pre-body checks, then reads the body the options'
// way and runs every check. `loaded->identity` is filled as soon as the
// file is stat-ed, also when a check then fails.
Result<std::shared_ptr<const RingSnapshot>> LoadSnapshotFile(const std::string& path,
                                                             const SnapshotLoadOptions& options,
                                                             LoadedFile* loaded = nullptr,
                                                             const VersionFloor* floor = nullptr);

// Maps the sealed copy process `pid` holds as descriptor copy.fd (through
// /proc/PID/fd, as the same user) after checking that it is that memory
// file (device, inode, size) and that it is sealed against writes and
// resizes, then loads it with only the checks memory safety needs (the
// pre-body checks against `options`, the sections, the node table,
// subsets, the collision table; O(nodes + losers)): its content was
// verified by the process that made it, under the same policy. kIoError if
// it cannot be opened or is not that sealed file.
Result<std::shared_ptr<const RingSnapshot>> AdoptSealedCopy(pid_t pid, const SealedCopy& copy,
                                                            const SnapshotLoadOptions& options,
                                                            SealedCopy* adopted);

// The names of a file's subsets (best effort: none if the section is bad).
Result<std::vector<std::string>> SubsetNamesOf(const uint8_t* data, const Header& h);

}  // namespace internal

// Friend of RingSnapshot: fills its private members.
struct SnapshotLoader {
  enum class LoadDepth : uint8_t {
    kVerify,  // every check
    kAdopt,   // a sealed copy another process verified: what memory safety needs
  };
  static Result<std::shared_ptr<RingSnapshot>> Load(std::shared_ptr<const void> backing,
                                                    const uint8_t* data, uint64_t size,
                                                    SnapshotLoadMode mode,
                                                    const SnapshotLoadOptions& options,
                                                    const internal::Prechecked& pre,
                                                    LoadDepth depth);
  // Precheck, then Load with every check: for bytes already in memory.
  static Result<std::shared_ptr<RingSnapshot>> LoadBytes(std::shared_ptr<const void> backing,
                                                         const uint8_t* data, uint64_t size,
                                                         SnapshotLoadMode mode,
                                                         const SnapshotLoadOptions& options);
  static Result<Ring> TakeRing(const std::string& path, const SnapshotLoadOptions& options,
                               SnapshotInfo* info, std::vector<NamedSubset>* subsets);
};

}  // namespace chash

#endif  // CHASH_ENGINE_SNAPSHOT_LOADER_H_
