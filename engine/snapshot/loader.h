// The loader's internal entry points: the checks over bytes
// (snapshot_reader.cc), the files they come from (snapshot_open.cc: the
// pre-body checks, sealed copies, adoption of another process's sealed
// copy after every check), for the reloader and the public load calls.
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

// What the reload policy adds to a load's checks on the header, before the
// body (SnapshotReloader). With a floor: below `version` is a rollback;
// `version` with another fingerprint is same_version; `version` with this
// fingerprint is loaded and checked as any file (a copy of the ring served
// must still prove its bytes: a damaged one is refused, not taken for the
// ring served). allow_expired: a file past its expiry passes (the policy
// serves the newest such ring only when no unexpired one passes:
// engine/snapshot/README.md, "Expiry").
struct ReloadGate {
  bool has_floor = false;
  uint64_t version = 0;
  Fingerprint fingerprint;
  bool allow_expired = false;
};

// The checks before a byte of the body is read, on the header's 512 bytes
// and the trailer's 128 of a file of `size` bytes: size, magic, version,
// header, sections (the table), min_version, rollback and same_version
// (with the gate's floor), expired (unless the gate allows it), signature
// (signed by a trusted key). O(keys).
Status Precheck(const uint8_t* head, const uint8_t* trailer, uint64_t size,
                const SnapshotLoadOptions& options, const ReloadGate* gate, Prechecked& out);

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
  // The verified bytes (the sealed copy's, the private copy's or the
  // file's pages), valid while snapshot lives.
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  bool changed_while_read = false;  // a refusal that says nothing about the file's content
};

// A snapshot file opened for a load, with its header and trailer read (two
// preads) and nothing of its body. Owns the descriptor.
struct OpenedSnapshot {
  int fd = -1;
  std::string path;  // for messages
  uint64_t size = 0;
  FileIdentity identity;  // of the descriptor (fstat); the path's stat until it is open
  uint8_t head[snapshot::kHeaderBytes] = {};
  uint8_t tail[snapshot::kTrailerBytes] = {};
  OpenedSnapshot() = default;
  OpenedSnapshot(const OpenedSnapshot&) = delete;
  OpenedSnapshot& operator=(const OpenedSnapshot&) = delete;
  ~OpenedSnapshot();
};

// The watched path: stat-ed (symlinks followed, as Kubernetes' ..data swap
// needs), refused if it is not a regular file of a snapshot's size, then
// opened without blocking (O_NONBLOCK: a FIFO renamed in between is
// refused, never waited on), checked again on the descriptor, its holes
// refused, its header and trailer read. `out.identity` is filled as soon as
// the path is stat-ed, also when a check then fails.
Status OpenSnapshotPath(const std::string& path, const SnapshotLoadOptions& options,
                        OpenedSnapshot& out);
// A file in a directory another user may write (the state directory's
// BASE.good): openat(dir_fd, name, O_NOFOLLOW | O_NONBLOCK), so a symbolic
// link, a FIFO or a device there is refused without being followed or
// waited on; then the same checks. `absent` (if given) is set when there is
// no such file (ENOENT), which is then not an error.
Status OpenSnapshotAt(int dir_fd, const std::string& name, const std::string& display,
                      const SnapshotLoadOptions& options, OpenedSnapshot& out,
                      bool* absent = nullptr);

// The pre-body checks (with the gate), then the body read the options' way
// and every check.
Result<std::shared_ptr<const RingSnapshot>> LoadOpened(OpenedSnapshot& file,
                                                       const SnapshotLoadOptions& options,
                                                       const ReloadGate* gate, LoadedFile* loaded);
// OpenSnapshotPath, then LoadOpened.
Result<std::shared_ptr<const RingSnapshot>> LoadSnapshotFile(const std::string& path,
                                                             const SnapshotLoadOptions& options,
                                                             LoadedFile* loaded = nullptr,
                                                             const ReloadGate* gate = nullptr);

// Another process's sealed copy of `bound`, the file it stands for: the
// memory file process `pid` holds as descriptor copy.fd (/proc/PID/fd: the
// same user, or root), stat-ed before it is opened (a regular file, the
// device and inode named, bound's size), opened without blocking, sealed
// against writes and resizes, and holding bound's header and trailer byte
// for byte. Then every check a load of `bound` runs, the gate's included:
// nothing the process that published the copy says is trusted. Sharing
// saves the file's read and the memory of a second copy, not the
// verification. kIoError if it cannot be opened or is not that copy; a
// check's refusal if its bytes fail one. `adopted` receives the copy's
// descriptor (this process's), bytes and bound's identity.
Result<std::shared_ptr<const RingSnapshot>> AdoptSealedCopy(pid_t pid, const SealedCopy& copy,
                                                            const OpenedSnapshot& bound,
                                                            const SnapshotLoadOptions& options,
                                                            const ReloadGate* gate,
                                                            LoadedFile& adopted);

// The names of a file's subsets (best effort: none if the section is bad).
Result<std::vector<std::string>> SubsetNamesOf(const uint8_t* data, const Header& h);

}  // namespace internal

// Friend of RingSnapshot: fills its private members.
struct SnapshotLoader {
  // Every check after the pre-body ones (`pre`), on `size` bytes at `data`
  // that `backing` keeps alive.
  static Result<std::shared_ptr<RingSnapshot>> Load(std::shared_ptr<const void> backing,
                                                    const uint8_t* data, uint64_t size,
                                                    SnapshotLoadMode mode,
                                                    const SnapshotLoadOptions& options,
                                                    const internal::Prechecked& pre);
  // 1.0 exported this form (its symbol is in tests/data/abi's baseline, so
  // it stays): adoption once skipped the content checks. Every depth now
  // runs every check, as Load above.
  enum class LoadDepth : uint8_t { kVerify, kAdopt };
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
