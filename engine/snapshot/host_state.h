// What a SnapshotReloader keeps in its state directory, for the processes of
// one host and for its own restarts (engine/snapshot/README.md):
//
//   NAME.state  the highest config version served and its fingerprint:
//               versions never go back, across restarts
//   NAME.good   the last file that passed every check (written from the
//               verified sealed copy): what a restart serves when the path's
//               file is refused
//   NAME.share  the sealed copy of the last file a process verified (its pid,
//               descriptor and memory file identity), the file it came from,
//               and the last file refused, so that the host's other
//               processes adopt either verdict instead of verifying again
//   NAME.lock   flock(2)-ed while a process verifies or writes the above:
//               one verification a file a host
//
// The records are small text files replaced atomically (a temporary file,
// rename; NAME.state and NAME.good also fsync-ed with their directory), so
// a process may replace a record another user wrote (nginx's master runs as
// root, its workers as www-data): only the directory must be writable.
// Every call touches the file system: off the event loop.
#ifndef CHASH_ENGINE_SNAPSHOT_HOST_STATE_H_
#define CHASH_ENGINE_SNAPSHOT_HOST_STATE_H_

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <string>

#include "chash/identity.h"
#include "chash/snapshot.h"
#include "snapshot/loader.h"

namespace chash::internal {

struct PersistedState {
  bool present = false;
  uint64_t highest_version = 0;
  Fingerprint fingerprint;  // of highest_version's ring
};

struct ShareRecord {
  // The sealed copy of a verified file.
  bool has_copy = false;
  pid_t pid = 0;
  SealedCopy copy;
  FileIdentity source;  // the file it was read from
  uint64_t config_version = 0;
  Fingerprint fingerprint;
  // The last file refused (each a verdict of the same policy).
  bool has_refusal = false;
  FileIdentity refused;
  SnapshotCheck check = SnapshotCheck::kNone;
  std::string message;  // one line
  // Digest of the checks the verdicts were made under (PolicyDigest).
  std::array<uint8_t, 32> policy{};
};

// The checks a verdict depends on that an adopter cannot redo from the
// header: the trusted keys (sorted), the checksum and points-digest flags.
// Two reloaders with equal digests would reach the same verdict on a file.
std::array<uint8_t, 32> PolicyDigest(const SnapshotLoadOptions& options) noexcept;

// An exclusive flock of NAME.lock, released by the destructor (and by the
// kernel if the process dies holding it).
class HostLock {
 public:
  HostLock() = default;
  HostLock(HostLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  HostLock& operator=(HostLock&& other) noexcept;
  ~HostLock();
  bool held() const noexcept { return fd_ >= 0; }

 private:
  friend class HostState;
  int fd_ = -1;
};

class HostState {
 public:
  // kBadArgument: a name that is not 1..128 bytes of [A-Za-z0-9._-];
  // kIoError: the directory does not exist or is not a writable directory.
  static Result<HostState> Open(const std::string& dir, const std::string& name);

  const std::string& name() const noexcept { return name_; }
  std::string PathOf(std::string_view suffix) const;  // DIR/NAME.suffix

  // Waits up to `wait` for the lock; an unheld lock after that (or if the
  // lock file cannot be made): the caller goes on without it.
  HostLock Lock(std::chrono::milliseconds wait) const;

  // An absent file is not an error (present = false); a damaged one is
  // kIoError naming it and saying how to recover.
  Result<PersistedState> ReadState() const;
  Status WriteState(const PersistedState& state) const;
  // NAME.good from a sealed copy's descriptor (sendfile, fsync, rename).
  Status WriteGood(int sealed_fd, uint64_t size) const;
  std::string GoodPath() const { return PathOf("good"); }

  // Absent or unreadable: an empty record (nothing to adopt).
  ShareRecord ReadShare() const noexcept;
  Status WriteShare(const ShareRecord& record) const;

 private:
  std::string dir_;
  std::string name_;
};

// 1..128 bytes of [A-Za-z0-9._-], not "." or "..".
bool ValidReloaderName(std::string_view name) noexcept;

// A name derived from the path for a reloader given none.
std::string DefaultReloaderName(const std::string& path);

}  // namespace chash::internal

#endif  // CHASH_ENGINE_SNAPSHOT_HOST_STATE_H_
