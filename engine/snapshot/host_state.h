// The state directory of a SnapshotReloader: what persists across restarts
// and what the host's processes share (engine/snapshot/README.md, "The
// state directory"; SECURITY.md, the threat model). Another user may have
// written anything in it (nginx's workers own it; its master runs as
// root), so every read is of untrusted input, no write can be redirected,
// and no record decides anything on its own:
//
//   BASE.good   the last file that passed every check, written from the
//               verified bytes. Its header's config version is the floor
//               versions never go below across restarts, but only once the
//               file itself passes every check: a floor no verified file
//               backs refuses nothing.
//   BASE.share  where a sealed copy of the watched file is (a pid, a
//               descriptor, the memory file's identity): a hint, never a
//               verdict. Adoption checks what it maps as a load does.
//   BASE.lock   flock(2)-ed while a process writes the above (and verifies
//               a file, so that the host's others adopt its copy).
//   BASE.KIND.tmp.RANDOM  a write in progress; left by a crash, removed by
//               the next writer.
//
// BASE is the reloader's name; a name the embedder chose is followed by
// ".p" and 8 hex digits of SHA-256 of the watched path, so two watched
// files never share a record whatever they are called (two nginx instances
// with one upstream name).
//
// Writes: only by a process whose effective uid owns the directory (nginx's
// workers, never its root master in the workers' directory), under
// BASE.lock, relative to a descriptor of the directory opened O_NOFOLLOW and
// checked, through a temporary file created O_EXCL | O_NOFOLLOW under a
// random name and renamed over the record. Reads: openat O_NOFOLLOW |
// O_NONBLOCK, fstat: regular files only, records at most 4 KiB. A directory
// that is a symbolic link or that its group or others may write is refused.
// Every call touches the file system: off the event loop.
#ifndef CHASH_ENGINE_SNAPSHOT_HOST_STATE_H_
#define CHASH_ENGINE_SNAPSHOT_HOST_STATE_H_

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "chash/identity.h"
#include "chash/snapshot.h"
#include "snapshot/loader.h"
#include "util/os_handles.h"

namespace chash::internal {

// BASE.share: where a sealed copy of `path`'s file is, made under `policy`.
struct ShareRecord {
  std::string path;  // the watched path the copy was read from
  std::array<uint8_t, 32> policy{};
  pid_t pid = 0;
  SealedCopy copy;
  uint64_t config_version = 0;
  Fingerprint fingerprint;
};

// The record's text, and back: nullopt unless the text is exactly one
// record (the magic line, every field once, nothing else, numbers in
// range, at most kMaxRecordBytes). Allocates; never throws.
std::optional<ShareRecord> ParseShareRecord(std::string_view text) noexcept;
std::string FormatShareRecord(const ShareRecord& record);  // throws std::bad_alloc
inline constexpr size_t kMaxRecordBytes = 4096;

// The checks a verdict depends on that a header does not carry: the
// trusted keys (sorted), the checksum and points-digest flags. A share
// record of another policy is not a copy this process looks for.
std::array<uint8_t, 32> PolicyDigest(const SnapshotLoadOptions& options) noexcept;

// The state directory opened for one operation: a descriptor of it (opened
// O_DIRECTORY | O_NOFOLLOW), its owner, and whether this process writes in
// it (its effective uid is the owner).
class DirHandle {
 public:
  int fd() const noexcept { return fd_.get(); }
  bool writer() const noexcept { return writer_; }
  uid_t owner() const noexcept { return owner_; }

 private:
  friend class HostState;
  UniqueFd fd_;
  uid_t owner_ = 0;
  bool writer_ = false;
};

// An exclusive flock of BASE.lock, held by a writer of the directory; the
// directory's descriptor its writes go through. Released by the destructor
// (and by the kernel if the process dies holding it).
class HostLock {
 public:
  bool held() const noexcept { return fd_.valid(); }
  int dir_fd() const noexcept { return dir_.fd(); }

 private:
  friend class HostState;
  DirHandle dir_;
  UniqueFd fd_;
};

class HostState {
 public:
  // kBadArgument: a name that is not 1..128 bytes of [A-Za-z0-9._-];
  // kIoError: the directory cannot be used (a symbolic link, not a
  // directory, writable by its group or others), or does not exist unless
  // `may_be_absent` (a reader that writes nothing: nothing there to read).
  // `name` "" derives the name from the path (DefaultReloaderName).
  static Result<HostState> Open(const std::string& dir, const std::string& name,
                                const std::string& watched_path, bool may_be_absent);

  const std::string& base() const noexcept { return base_; }
  std::string PathOf(std::string_view kind) const;  // DIR/BASE.kind
  std::string GoodPath() const { return PathOf("good"); }

  // The directory now, checked; fd -1 (and no error) if it does not exist.
  Result<DirHandle> OpenDir() const;

  // For a writer of the directory: waits up to `wait` for BASE.lock
  // (created if absent). Not held (`why` says why, if given) when the
  // directory is absent or unusable, this process does not own it, the lock
  // file is not a regular file, or another process held it all that time:
  // the caller then writes nothing.
  HostLock Lock(std::chrono::milliseconds wait, std::string* why = nullptr) const;

  // BASE.good opened for a load (OpenSnapshotAt): `absent` when there is none.
  Status OpenGood(const SnapshotLoadOptions& options, OpenedSnapshot& out, bool& absent) const;
  // BASE.good from `size` verified bytes at `data`.
  Status WriteGood(const HostLock& lock, const uint8_t* data, uint64_t size) const;

  // nullopt when absent, unreadable or not one well-formed record.
  std::optional<ShareRecord> ReadShare() const noexcept;
  Status WriteShare(const HostLock& lock, const ShareRecord& record) const;

  // Removes this base's temporary files left by writes that never finished
  // (a crash, a kill): under the lock, so no write of this base is running.
  void RemoveLeftovers(const HostLock& lock) const noexcept;

 private:
  std::string dir_;
  std::string base_;
};

// 1..128 bytes of [A-Za-z0-9._-], not "." or "..".
bool ValidReloaderName(std::string_view name) noexcept;

// A name derived from the path for a reloader given none.
std::string DefaultReloaderName(const std::string& path);

}  // namespace chash::internal

#endif  // CHASH_ENGINE_SNAPSHOT_HOST_STATE_H_
