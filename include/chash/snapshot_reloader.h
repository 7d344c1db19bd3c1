// The reload policy every embedder shares (the nginx modules, chash.resty,
// the Rust crate, C programs): a SnapshotReloader owns the current snapshot
// of a path, replaces it when the file there is replaced, keeps the last
// good one and shares one sealed copy a host through its state directory.
// Snapshots themselves (writing, loading, the checks): chash/snapshot.h.
#ifndef CHASH_SNAPSHOT_RELOADER_H_
#define CHASH_SNAPSHOT_RELOADER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chash/snapshot.h"
#include "chash/status.h"

// Public API: exported from libchash.so (built with hidden visibility).
#pragma GCC visibility push(default)

namespace chash {

// Owns the current snapshot of a path and replaces it when the file at the
// path is replaced, by one policy that every embedder (the nginx modules,
// chash.resty, the Rust crate, C programs) uses:
//
// - Identity. The path is stat-ed (symlinks followed, as for Kubernetes'
//   ..data swap); a file is its (device, inode, size, modification time).
//   The identity served, and the last 16 refused ones, are not loaded
//   again: a file refused for its bytes is never verified twice. A file
//   that could not be read (an I/O error, EACCES while its mode is fixed)
//   is no verdict: it is read again at the next look, then less often
//   while it keeps failing (up to once a minute).
// - Every check of LOADING, with the options' keys, minimum version, size
//   cap and threads.
// - Versions only go up: a file below the version served (and, with a state
//   directory, below the last good file's, across restarts) is refused
//   (rollback); the version served with another ring is refused
//   (same_version); the ring served under another identity (a copy, a
//   touch) is remembered without a swap. A rollback is a new, higher
//   version of the old content: `chash build --from OLD --config-version N`.
// - Last known good. With a state directory, a file that passes is kept
//   there as BASE.good (written from the verified bytes); its version is
//   the floor across restarts once it passes every check itself (a
//   BASE.good that fails them is set aside: it refuses nothing). Create
//   serves the path's file if it passes, else BASE.good, never an older
//   ring without saying so (report().serving_last_good).
// - Expiry. A new file past its expiry is refused (expired); the ring
//   served stays served past its own, and the report says so
//   (serving_expired); Create, when neither the path's file nor BASE.good
//   passes, serves the newer one that fails only its expiry, likewise
//   reported: the same at a restart as while serving.
// - One copy a host. With a state directory and kSealed loads (share =
//   true), the process that loads a file publishes where its sealed copy
//   is (BASE.share); another process of the host with the same policy
//   maps that copy instead of reading the file, after every check a load
//   runs (nothing another process says is trusted: SECURITY.md): the
//   host keeps one copy, each process verifies.
// - The state directory is written only by processes whose effective uid
//   owns it (nginx's workers, not its root master), without following a
//   link; every record in it is read as untrusted input (SECURITY.md).
//
// Blocking calls (Create, Check, AdoptShared, Accept, Poll) touch the file
// system: call them off any event loop. Readers take a mutex for a pointer
// copy, never wait for a load; a ring they hold stays valid after a reload.
struct ReloadOptions {
  SnapshotLoadOptions load;
  // A directory for BASE.good, BASE.share and BASE.lock
  // (engine/snapshot/README.md): it must exist (unless write_state is
  // false), be a directory and not a link to one, and not be writable by
  // its group or others; only a process whose effective uid owns it writes
  // in it. "" keeps nothing across processes: versions are remembered in
  // memory only, every process reads its own copy.
  std::string state_dir;
  // The reloader's name in state_dir: 1..128 bytes of [A-Za-z0-9._-]; its
  // records' BASE is the name, ".p" and 8 hex digits of SHA-256 of the
  // path. "" = BASE "snapshot-" and 16 hex digits of SHA-256 of the path.
  std::string name;
  // With state_dir and kSealed: map the host's copies (after every check).
  bool share = true;
  // With state_dir: keep BASE.good, which is also what keeps the highest
  // version across restarts (without it, versions persist nowhere).
  bool keep_last_good = true;
  // false: read the state directory (the last good file, the copies to
  // adopt) but write nothing to it: for a configuration test (nginx -t)
  // that must leave no trace. A state directory that does not exist yet
  // is then nothing to read, not an error.
  bool write_state = true;
  // true: Create touches no file (it checks the options only); the first
  // Check finds the first ring as Create would (the path's file, else
  // BASE.good) and returns it as kNew. Until it is accepted current() is
  // null. For embedders that create the reloader where the file system
  // must not be touched (an event loop) and check from a thread.
  bool defer_first_load = false;
};

enum class ReloadOutcome : uint8_t {
  kUnchanged,  // the path names the file served, or one refused before
  kNew,        // a new ring passed every check: Accept or Refuse it
  kSameRing,   // another file with the ring served: remembered, no swap
  kRefused,    // the file failed a check; the current ring stays
};

// What Check found. Move-only in effect (it holds the candidate).
struct ReloadCandidate {
  ReloadOutcome outcome = ReloadOutcome::kUnchanged;
  SnapshotCheck check = SnapshotCheck::kNone;      // kRefused
  Status status;                                   // kRefused: why
  std::shared_ptr<const RingSnapshot> snapshot;    // kNew
  bool adopted = false;  // kNew: another process of the host verified it
  uint64_t token = 0;    // which Check made it (Accept and Refuse match it)
};

// What the reloader has done, for logs, status pages and alerts.
struct ReloadReport {
  uint64_t served_version = 0;
  // The highest config version ever served under this name (persisted with
  // a state directory; this process's otherwise).
  uint64_t highest_version = 0;
  uint64_t accepted = 0;   // files served after the first
  uint64_t adopted = 0;    // of those, verified by another process
  uint64_t refused = 0;    // files refused (each identity once)
  SnapshotCheck last_check = SnapshotCheck::kNone;  // of the last refusal
  std::string last_message;
  int64_t last_refused_unix_seconds = 0;
  // A Check in flight since (Unix seconds), 0 if none.
  int64_t checking_since_unix_seconds = 0;
  // Create served BASE.good: the path's file was refused (last_check says
  // why) and nothing newer has passed since.
  bool serving_last_good = false;
  // The last failure to write BASE.good (a full disk, a lock another
  // process held for a minute, a directory this process does not own and
  // is not root in): the ring was served all the same; the write is tried
  // again at the next Check. OK if none.
  Status state_error;
  // BASE.good's path ("" without a state directory): what status pages name.
  std::string state_file;
  // The served ring's expiry (Unix seconds, 0: never), and whether it has
  // passed: a ring past its expiry is served only while nothing newer
  // passes (refused files' checks say why).
  int64_t served_expires_unix_seconds = 0;
  bool serving_expired = false;
};

class SnapshotReloader {
 public:
  // Serves the newest ring that passes every check: the path's file, else
  // BASE.good (else the newer of the two that fails only its expiry). An
  // error (naming the path's refusal, and BASE.good's) if none passes;
  // kBadArgument for a bad name, kIoError for a state directory that
  // cannot be used. With defer_first_load, touches no file.
  static Result<std::unique_ptr<SnapshotReloader>> Create(std::string path,
                                                          ReloadOptions options);
  // Writes BASE.good if a reload left it to write (Accept serves at once;
  // BASE.good, the whole file, follows at the next Check or here).
  ~SnapshotReloader();
  SnapshotReloader(const SnapshotReloader&) = delete;
  SnapshotReloader& operator=(const SnapshotReloader&) = delete;

  // A pointer copy under a mutex; allocates nothing. Null only before the
  // first ring of a deferred reloader is accepted.
  std::shared_ptr<const RingSnapshot> current() const;
  std::shared_ptr<const Ring> ring() const { return RingOf(current()); }

  // Two steps, for embedders with checks of their own (an nginx worker
  // builds its peers from the new ring first). Check looks at the path once
  // and returns what it found; a kNew candidate is served only once Accept
  // takes it (Refuse remembers it as refused, with the embedder's check).
  // One Check at a time (they serialize); a candidate is valid until the
  // next Check.
  ReloadCandidate Check();
  // The copy of the path's file another process of the host published
  // (BASE.share), if it holds a newer ring than the one served and passes
  // every check: kNew (adopted), else kUnchanged. If there is none, the
  // last good file (BASE.good, every check) if it is newer than the ring
  // served. Reads the path's header and trailer (to know the copy is of
  // that file), never its body: a worker the master respawned catches up
  // with its siblings before its first request, at the cost of a
  // verification and without a copy of its own.
  ReloadCandidate AdoptShared();
  // Serves the candidate; a start (nothing served yet) writes BASE.good
  // now, a reload leaves it to the next Check. The ring is served even if
  // the state cannot be written (that error is returned, and kept in
  // report().state_error); kBadArgument if the candidate is not the last
  // kNew one of Check or AdoptShared.
  Status Accept(const ReloadCandidate& candidate);
  void Refuse(const ReloadCandidate& candidate, SnapshotCheck check, std::string message);

  // Check, then Accept a kNew candidate: Ok when nothing changed or the new
  // file was served, else the refusal (or the state error).
  Status Poll();
  // Polls every `interval` on a thread of its own until the destructor.
  // kOutOfMemory, or kIoError if the system refuses a thread (EAGAIN); Ok
  // if the thread runs (or already ran).
  Status StartWatching(std::chrono::milliseconds interval);

  // A copy (allocates the message): for logs and monitoring.
  ReloadReport report() const;
  // report().refused and .accepted, and the last refusal as a Status (Ok if
  // none): shorthands kept for tests and callers of 0.x.
  uint64_t reloads() const;
  uint64_t refusals() const;
  Status last_error() const;

 private:
  // Hidden as its definition is (reloader.cc): clang refuses a definition
  // whose visibility differs from the declaration's.
  struct __attribute__((visibility("hidden"))) Impl;
  explicit SnapshotReloader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace chash

#pragma GCC visibility pop

#endif  // CHASH_SNAPSHOT_RELOADER_H_
