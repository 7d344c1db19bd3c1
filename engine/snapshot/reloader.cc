// SnapshotReloader: the one reload policy (include/chash/snapshot.h) that
// the C API, the nginx modules, chash.resty and the Rust crate use. What it
// trusts in its state directory, and why, is SECURITY.md's; the design is
// engine/snapshot/README.md's.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <deque>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include "chash/snapshot.h"
#include "util/out_of_memory.h"
#include "snapshot/host_state.h"
#include "snapshot/loader.h"

namespace chash {
namespace {

using internal::FileIdentity;
using internal::HostLock;
using internal::LoadedFile;
using internal::OpenedSnapshot;
using internal::ReloadGate;
using internal::SealedCopy;
using internal::ShareRecord;

// Refused identities remembered: a flapping file (good, bad, good...) stays
// cheap; an older refusal is forgotten once 16 others came after it.
constexpr size_t kRememberedRefusals = 16;
// How long a writer waits for another that verifies a file or writes a
// record under the host's lock (a 1.23 GB file verifies in about a second)
// before going on without writing anything.
constexpr std::chrono::milliseconds kLockWait{60000};
// A file that could not be read (EACCES while a deploy tool fixes its mode,
// EMFILE, EIO) is read again at the next look, then after 2, 4, ... up to
// this many seconds while it keeps failing.
constexpr int64_t kMaxIoBackoffSeconds = 60;

int64_t NowSeconds() { return static_cast<int64_t>(std::time(nullptr)); }

// A refusal that says something about the file's bytes (or its kind), and
// so is remembered for its identity. An I/O error, running out of memory
// or a file that changed while it was read says nothing about them: the
// file is read again.
bool IsVerdictOnBytes(const Status& status, bool changed_while_read) {
  if (changed_while_read) return false;
  switch (FailedSnapshotCheck(status)) {
    case SnapshotCheck::kNone:
    case SnapshotCheck::kIo:
    case SnapshotCheck::kOutOfMemory:
      return false;
    default:
      return true;
  }
}

bool IsVersionRefusal(const Status& status) {
  const SnapshotCheck check = FailedSnapshotCheck(status);
  return check == SnapshotCheck::kRollback || check == SnapshotCheck::kSameVersion;
}

// A load's outcome: the snapshot, or the refusal, and what it came from.
struct Attempt {
  Result<std::shared_ptr<const RingSnapshot>> result = Status(StatusCode::kIoError, "");
  LoadedFile loaded;
  bool adopted = false;
};

}  // namespace

// Hidden: the class it belongs to is exported, its implementation is not.
struct __attribute__((visibility("hidden"))) SnapshotReloader::Impl {
  std::string path;
  ReloadOptions options;
  std::optional<internal::HostState> host;
  std::array<uint8_t, 32> policy{};

  // Readers: a pointer copy under this mutex.
  mutable std::mutex current_mutex;
  std::shared_ptr<const RingSnapshot> current;

  // One Check, AdoptShared, Accept or Refuse at a time; guards everything
  // below but the report.
  std::mutex poll_mutex;
  FileIdentity current_file;   // the path's file known to hold the ring served
  SealedCopy current_sealed;   // the served ring's sealed copy (fd -1 if none)
  LoadedFile current_bytes;    // the served ring's bytes (for BASE.good)
  std::deque<FileIdentity> refused_files;
  // A file that could not be read: when it is read again.
  struct IoRetry {
    FileIdentity file;
    int failures = 0;
    std::chrono::steady_clock::time_point next;
  } io_retry;
  uint64_t highest = 0;  // the highest version served here, or proven by BASE.good
  Fingerprint highest_fingerprint;
  bool has_highest = false;
  // What BASE.good's own checks said of the file of that identity: its
  // version is a floor only once it passed them (proven); a file that
  // failed them is set aside (its claim refuses nothing).
  struct GoodVerdict {
    FileIdentity file;
    bool proven = false;
  };
  std::optional<GoodVerdict> good_verdict;
  uint64_t next_token = 1;
  struct Pending {
    uint64_t token = 0;
    std::shared_ptr<const RingSnapshot> snapshot;
    FileIdentity file;
    LoadedFile bytes;
    bool adopted = false;
    bool from_last_good = false;
  } pending;
  // Create deferred the first load (ReloadOptions::defer_first_load): the
  // state directory is opened and the first ring found by the first Check.
  bool initialized = false;
  // A ring served whose bytes BASE.good must still receive (the snapshot
  // keeps them alive until then): written by the next writer's Check.
  struct GoodPending {
    std::shared_ptr<const RingSnapshot> snapshot;
    LoadedFile bytes;
  } good_pending;
  bool leftovers_removed = false;

  // What report() copies, under its own mutex: a report never waits for a
  // Check in flight.
  mutable std::mutex report_mutex;
  ReloadReport report;
  Status last_status;
  std::atomic<int64_t> checking_since{0};

  // The watcher thread.
  std::mutex watch_mutex;
  std::condition_variable watch_wake;
  bool stopping = false;
  std::thread watcher;

  bool sharing() const {
    return host.has_value() && options.share && options.load.mode == SnapshotLoadMode::kSealed;
  }
  bool writing() const { return host.has_value() && options.write_state; }

  std::shared_ptr<const RingSnapshot> Current() const {
    std::lock_guard<std::mutex> lock(current_mutex);
    return current;
  }

  bool IsRefused(const FileIdentity& id) const {
    return std::find(refused_files.begin(), refused_files.end(), id) != refused_files.end();
  }

  // Counts a refusal and keeps it for the report. A verdict on the file's
  // bytes is remembered for its identity (never loaded again); any other
  // failure is tried again, later each time it recurs, and counted once.
  void NoteRefusal(const FileIdentity& id, const Status& status, bool verdict) {
    bool count = true;
    if (verdict) {
      if (!IsRefused(id)) {
        refused_files.push_back(id);
        if (refused_files.size() > kRememberedRefusals) refused_files.pop_front();
      }
    } else if (id.size >= 0) {
      const bool again = io_retry.failures > 0 && io_retry.file == id;
      count = !again;
      io_retry.failures = again ? io_retry.failures + 1 : 1;
      io_retry.file = id;
      const int64_t wait = std::min<int64_t>(int64_t{1} << std::min(io_retry.failures - 1, 6),
                                             kMaxIoBackoffSeconds);
      io_retry.next = std::chrono::steady_clock::now() + std::chrono::seconds(wait - 1);
    }
    std::lock_guard<std::mutex> lock(report_mutex);
    if (count) ++report.refused;
    report.last_check = FailedSnapshotCheck(status);
    report.last_message = status.message();
    report.last_refused_unix_seconds = NowSeconds();
    last_status = status;
  }

  // The path's file failed to be read before and its next try is not due.
  bool WaitingToRetry(const FileIdentity& id) const {
    return io_retry.failures > 0 && io_retry.file == id &&
           std::chrono::steady_clock::now() < io_retry.next;
  }

  void Raise(uint64_t version, const Fingerprint& fingerprint) {
    if (!has_highest || version > highest) {
      highest = version;
      highest_fingerprint = fingerprint;
      has_highest = true;
    }
  }

  // The versions a new file must not go below: this process's own, and
  // BASE.good's header unless that file has been set aside (`claim`).
  ReloadGate Gate(const SnapshotInfo* claim) const {
    ReloadGate gate;
    gate.has_floor = has_highest;
    gate.version = highest;
    gate.fingerprint = highest_fingerprint;
    if (claim != nullptr && (!gate.has_floor || claim->config_version > gate.version)) {
      gate.has_floor = true;
      gate.version = claim->config_version;
      gate.fingerprint = claim->fingerprint;
    }
    return gate;
  }

  // BASE.good opened (its header read, nothing else), if there is one that
  // this process has not set aside; its header's info in `claim`.
  bool OpenGood(OpenedSnapshot& good, SnapshotInfo& claim) {
    if (!host) return false;
    bool absent = true;
    if (!host->OpenGood(options.load, good, absent).ok() || absent) return false;
    if (good_verdict && good_verdict->file == good.identity && !good_verdict->proven) {
      return false;  // set aside
    }
    internal::Prechecked pre;
    ReloadGate any;
    any.allow_expired = true;
    const SnapshotLoadOptions header_only;
    if (!internal::Precheck(good.head, good.tail, good.size, header_only, &any, pre).ok()) {
      return false;  // its load refuses it, with the reason, when it is loaded
    }
    claim = pre.header.info;
    return true;
  }

  // Loads BASE.good with every check: it proves its version a floor, or is
  // set aside (a refusal the report names). An I/O error decides nothing.
  Attempt ProveGood(OpenedSnapshot& good) {
    Attempt attempt;
    ReloadGate any;
    any.allow_expired = true;  // an expired file still proves what was served
    attempt.result = internal::LoadOpened(good, options.load, &any, &attempt.loaded);
    if (attempt.result.ok()) {
      good_verdict = GoodVerdict{good.identity, true};
      Raise(attempt.result.value()->info().config_version,
            attempt.result.value()->info().fingerprint);
    } else if (IsVerdictOnBytes(attempt.result.status(), attempt.loaded.changed_while_read)) {
      good_verdict = GoodVerdict{good.identity, false};
      NoteRefusal(good.identity,
                  Status(attempt.result.status().code(),
                         attempt.result.status().message() +
                             "; the last good file is set aside: its version is no floor"),
                  true);
    }
    return attempt;
  }

  // Another process's sealed copy of `file`, adopted after every check
  // (gate's included); a refusal if there is none or it fails any.
  Attempt Adopt(OpenedSnapshot& file, const std::optional<ShareRecord>& record,
                const ReloadGate& gate) {
    Attempt attempt;
    if (!sharing() || !record || record->policy != policy || record->path != path ||
        record->copy.size != file.size) {
      attempt.result = Status(StatusCode::kIoError, "io: no copy of " + path + " to adopt");
      return attempt;
    }
    attempt.result = internal::AdoptSealedCopy(record->pid, record->copy, file, options.load,
                                               &gate, attempt.loaded);
    attempt.adopted = attempt.result.ok();
    return attempt;
  }

  // `file` as another process's sealed copy of it, else loaded from the file
  // itself: whatever the copy's bytes failed says nothing of the file's.
  Attempt LoadOrAdopt(OpenedSnapshot& file, const std::optional<ShareRecord>& record,
                      const ReloadGate& gate) {
    Attempt attempt = Adopt(file, record, gate);
    if (attempt.adopted) return attempt;
    attempt = Attempt();
    attempt.result = internal::LoadOpened(file, options.load, &gate, &attempt.loaded);
    return attempt;
  }

  // The path's file with every check, or adopted: against this process's
  // floor and BASE.good's, which is proven (or set aside) first if it
  // would refuse the file.
  Attempt LoadPath(OpenedSnapshot& file, const std::optional<ShareRecord>& record,
                   bool allow_expired) {
    OpenedSnapshot good;
    SnapshotInfo claim;
    const bool has_claim = OpenGood(good, claim);
    ReloadGate gate = Gate(has_claim ? &claim : nullptr);
    gate.allow_expired = allow_expired;
    Attempt attempt = LoadOrAdopt(file, record, gate);
    const bool unproven =
        has_claim && !(good_verdict && good_verdict->file == good.identity && good_verdict->proven);
    if (attempt.result.ok() || !unproven || !IsVersionRefusal(attempt.result.status())) {
      return attempt;
    }
    const Attempt proof = ProveGood(good);
    if (proof.result.ok()) return attempt;  // the floor holds: the refusal stands
    gate = Gate(nullptr);
    gate.allow_expired = allow_expired;
    return LoadOrAdopt(file, record, gate);
  }

  ReloadCandidate Candidate(std::shared_ptr<const RingSnapshot> snapshot, const FileIdentity& file,
                            const LoadedFile& bytes, bool adopted) {
    pending.token = next_token++;
    pending.snapshot = snapshot;
    pending.file = file;
    pending.bytes = bytes;
    pending.bytes.snapshot = snapshot;
    pending.adopted = adopted;
    ReloadCandidate candidate;
    candidate.outcome = ReloadOutcome::kNew;
    candidate.snapshot = std::move(snapshot);
    candidate.adopted = adopted;
    candidate.token = pending.token;
    return candidate;
  }

  static ReloadCandidate Refused(const Status& status) {
    ReloadCandidate candidate;
    candidate.outcome = ReloadOutcome::kRefused;
    candidate.check = FailedSnapshotCheck(status);
    candidate.status = status;
    return candidate;
  }

  // Where the copy of a verified file is, for the host's other processes:
  // a writer's, under its lock.
  void Publish(const HostLock& lock, const LoadedFile& loaded) {
    if (!sharing() || !writing() || !lock.held() || loaded.sealed.fd < 0 || !loaded.snapshot) {
      return;
    }
    ShareRecord record;
    record.path = path;
    record.policy = policy;
    record.pid = getpid();
    record.copy = loaded.sealed;
    record.config_version = loaded.snapshot->info().config_version;
    record.fingerprint = loaded.snapshot->info().fingerprint;
    (void)host->WriteShare(lock, record);  // at worst the others verify for themselves
  }

  // The host's lock, for a writer of the state directory (the others
  // neither wait for it nor write); the first time, the leftovers of
  // crashed writes are removed under it.
  HostLock WriterLock(std::string* why = nullptr) {
    if (!host) return HostLock();
    HostLock lock = host->Lock(kLockWait, why);
    if (lock.held() && !leftovers_removed) {
      host->RemoveLeftovers(lock);
      leftovers_removed = true;
    }
    return lock;
  }

  // BASE.good for a ring being served, unless it already holds that ring
  // or a newer one (proven, or not yet looked at: another process wrote
  // it); written now (good_now: a start, which serves nothing yet) or by
  // the next Check (a reload: a file of a gigabyte written and fsync-ed
  // first would delay every swap by seconds). A process that does not own
  // the directory writes nothing: its descendants that do (nginx's workers)
  // write what it left pending.
  Status Persist(std::shared_ptr<const RingSnapshot> snapshot, const LoadedFile& bytes,
                 bool good_now) {
    if (!writing() || !options.keep_last_good || bytes.data == nullptr) return Status();
    good_pending = GoodPending{std::move(snapshot), bytes};
    return good_now ? WritePendingGood() : Status();
  }

  Status WritePendingGood() {
    if (!good_pending.snapshot || !writing()) return Status();
    std::string why;
    HostLock lock = WriterLock(&why);
    if (!lock.held()) {
      // Not the directory's owner: nginx's root master, whose workers own
      // it and write what it left pending; not an error.
      Result<internal::DirHandle> dir = host->OpenDir();
      if (geteuid() == 0 && dir.ok() && dir.value().fd() >= 0 && !dir.value().writer()) {
        return Status();
      }
      return Status(StatusCode::kIoError, why + " (" + host->GoodPath() + " not written)");
    }
    const SnapshotInfo& info = good_pending.snapshot->info();
    const LoadedFile& bytes = good_pending.bytes;
    OpenedSnapshot good;
    SnapshotInfo claim;
    if (OpenGood(good, claim)) {
      // Another process wrote these bytes (the same header and trailer: the
      // trailer's checksum covers the rest), or a newer ring, kept once it
      // passes its checks (then it is the floor) and replaced if it fails.
      const bool same_bytes =
          good.size == bytes.size &&
          std::memcmp(good.head, bytes.data, sizeof good.head) == 0 &&
          std::memcmp(good.tail, bytes.data + bytes.size - sizeof good.tail, sizeof good.tail) == 0;
      const bool proven = good_verdict && good_verdict->file == good.identity;
      if (same_bytes ||
          (claim.config_version > info.config_version && (proven || ProveGood(good).result.ok()))) {
        good_pending = GoodPending();
        return Status();
      }
    }
    if (Status status = host->WriteGood(lock, good_pending.bytes.data, good_pending.bytes.size);
        !status.ok()) {
      return status;
    }
    good_pending = GoodPending();
    return Status();
  }

  void NoteStateError(const Status& status) {
    std::lock_guard<std::mutex> lock(report_mutex);
    report.state_error = status;
  }

  void Serve(std::shared_ptr<const RingSnapshot> snapshot, const FileIdentity& file,
             const LoadedFile& bytes) {
    Raise(snapshot->info().config_version, snapshot->info().fingerprint);
    current_file = file;
    current_sealed = bytes.sealed;
    current_bytes = bytes;
    current_bytes.snapshot = snapshot;
    const uint64_t version = snapshot->info().config_version;
    const int64_t expires = snapshot->info().expires_unix_seconds;
    {
      std::lock_guard<std::mutex> lock(current_mutex);
      current = std::move(snapshot);
    }
    std::lock_guard<std::mutex> lock(report_mutex);
    report.served_version = version;
    report.highest_version = highest;
    report.served_expires_unix_seconds = expires;
  }

  // Marks a Check in flight for the report.
  struct Checking {
    explicit Checking(std::atomic<int64_t>& since) : since_(since) { since_.store(NowSeconds()); }
    ~Checking() { since_.store(0); }
    std::atomic<int64_t>& since_;
  };

  // Serves the pending candidate, then leaves its bytes for BASE.good (an
  // error is kept in the report and returned; the ring is served all the
  // same). A reload (not the first ring) is counted.
  Status Commit() {
    const bool reload = Current() != nullptr;
    Pending taken = std::move(pending);
    pending = Pending();
    Status persisted;
    try {
      persisted = Persist(taken.snapshot, taken.bytes, !reload);
    } catch (const std::bad_alloc&) {
      persisted = internal::OutOfMemory("writing the reload state", path);
    }
    NoteStateError(persisted);
    Serve(std::move(taken.snapshot), taken.file, taken.bytes);
    std::lock_guard<std::mutex> lock(report_mutex);
    if (reload) {
      ++report.accepted;
      if (taken.adopted) ++report.adopted;
    }
    report.serving_last_good = taken.from_last_good;
    return persisted;
  }

  Status Initialize();
  ReloadCandidate FirstCandidate();
  ReloadCandidate CheckLocked();
  ReloadCandidate AdoptSharedLocked();
};

SnapshotReloader::SnapshotReloader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SnapshotReloader::~SnapshotReloader() {
  if (impl_->watcher.joinable()) {
    {
      std::lock_guard<std::mutex> lock(impl_->watch_mutex);
      impl_->stopping = true;
    }
    impl_->watch_wake.notify_all();
    impl_->watcher.join();
  }
  // A BASE.good still to write is written now: a restart must find the
  // ring this reloader served last.
  std::lock_guard<std::mutex> poll(impl_->poll_mutex);
  try {
    (void)impl_->WritePendingGood();
  } catch (...) {
    // Out of memory while naming a failure: the next start serves the path's file.
  }
}

// Opens the state directory. Touches the file system: Create does it, or
// the first Check when deferred.
Status SnapshotReloader::Impl::Initialize() {
  if (initialized) return Status();
  if (!options.state_dir.empty()) {
    Result<internal::HostState> opened = internal::HostState::Open(
        options.state_dir, options.name, path, /*may_be_absent=*/!options.write_state);
    if (!opened.ok()) return opened.status();
    host = std::move(opened).value();
    std::lock_guard<std::mutex> lock(report_mutex);
    report.state_file = host->GoodPath();
  }
  initialized = true;
  return Status();
}

// The newest ring that passes every check, while nothing is served yet: the
// path's file (adopted from another process of the host, or loaded), else
// the last good file (BASE.good); and if both fail, the newer of the two
// that fails only its expiry (served, and reported as expired, rather than
// nothing: as a served ring that expires is served on). A candidate
// (pending; from_last_good says which), or the refusal naming why the
// path's file (and the last good one) failed.
ReloadCandidate SnapshotReloader::Impl::FirstCandidate() {
  pending = Pending();
  HostLock lock = sharing() && writing() ? WriterLock() : HostLock();
  const std::optional<ShareRecord> record = sharing() ? host->ReadShare() : std::nullopt;
  struct Option {
    Attempt attempt;
    FileIdentity file;
    bool from_last_good = false;
    bool absent = false;  // no last good file
  };
  const auto try_path = [&](bool allow_expired) {
    Option option;
    OpenedSnapshot file;
    Status opened = internal::OpenSnapshotPath(path, options.load, file);
    option.file = file.identity;
    if (!opened.ok()) {
      option.attempt.result = opened;
      option.attempt.loaded.identity = file.identity;
    } else {
      option.attempt = LoadPath(file, record, allow_expired);
    }
    return option;
  };
  const auto try_good = [&](bool allow_expired) {
    Option option;
    option.from_last_good = true;
    OpenedSnapshot good;
    bool absent = true;
    Status opened =
        host->OpenGood(options.load, good, absent);
    if (!opened.ok()) {
      option.attempt.result = opened;
    } else if (absent) {
      option.absent = true;
      option.attempt.result = Status(StatusCode::kIoError, "io: no last good file");
    } else {
      ReloadGate gate;  // its own version is no floor for itself
      gate.allow_expired = allow_expired;
      option.attempt.result = internal::LoadOpened(good, options.load, &gate, &option.attempt.loaded);
      if (option.attempt.result.ok()) {
        good_verdict = GoodVerdict{good.identity, true};
      } else if (IsVerdictOnBytes(option.attempt.result.status(),
                                  option.attempt.loaded.changed_while_read)) {
        good_verdict = GoodVerdict{good.identity, false};
      }
    }
    return option;
  };
  const auto take = [&](Option& option) {
    const std::shared_ptr<const RingSnapshot> snapshot = option.attempt.result.value();
    if (!option.attempt.adopted) Publish(lock, option.attempt.loaded);
    ReloadCandidate candidate = Candidate(snapshot, option.from_last_good ? FileIdentity{} : option.file,
                                          option.attempt.loaded, option.attempt.adopted);
    pending.from_last_good = option.from_last_good;
    return candidate;
  };

  const FileIdentity now = internal::IdentityOfPath(path);
  // A file refused already (the embedder's own checks refused it: the
  // next candidate is the last good file).
  const bool path_refused = now.size >= 0 && IsRefused(now);
  Option from_path;
  Status refusal;
  if (path_refused) {
    std::lock_guard<std::mutex> report_lock(report_mutex);
    refusal = last_status;
  } else {
    from_path = try_path(false);
    if (from_path.attempt.result.ok()) return take(from_path);
    refusal = from_path.attempt.result.status();
    if (refusal.code() == StatusCode::kOutOfMemory) return Refused(refusal);
    NoteRefusal(from_path.attempt.loaded.identity, refusal,
                IsVerdictOnBytes(refusal, from_path.attempt.loaded.changed_while_read));
  }
  if (!host || !options.keep_last_good) return Refused(refusal);
  Option from_good = try_good(false);
  if (from_good.attempt.result.ok()) {
    const SnapshotInfo& info = from_good.attempt.result.value()->info();
    if (has_highest && info.config_version < highest) {
      NoteRefusal(FileIdentity{},
                  Status(StatusCode::kUntrusted,
                         "rollback: " + refusal.message() + "; serving the last good file " +
                             host->GoodPath() + ", config version " +
                             std::to_string(info.config_version) +
                             ", older than the highest served, " + std::to_string(highest)),
                  false);
    } else if (has_highest && info.config_version == highest &&
               !(info.fingerprint == highest_fingerprint)) {
      return Refused(Status(refusal.code(), refusal.message() + "; and the last good file " +
                                                host->GoodPath() + " holds another ring of version " +
                                                std::to_string(info.config_version)));
    }
    Raise(info.config_version, info.fingerprint);
    return take(from_good);
  }
  // Nothing passes: the newer ring of the two that fails only its expiry.
  const Status good_refusal = from_good.attempt.result.status();
  const bool path_expired = FailedSnapshotCheck(refusal) == SnapshotCheck::kExpired;
  const bool good_expired = FailedSnapshotCheck(good_refusal) == SnapshotCheck::kExpired;
  if (path_expired || good_expired) {
    Option expired_path = path_expired ? try_path(true) : Option();
    Option expired_good = good_expired ? try_good(true) : Option();
    const bool path_ok = path_expired && expired_path.attempt.result.ok();
    const bool good_ok = good_expired && expired_good.attempt.result.ok();
    if (path_ok && (!good_ok || expired_path.attempt.result.value()->info().config_version >=
                                    expired_good.attempt.result.value()->info().config_version)) {
      return take(expired_path);
    }
    if (good_ok) return take(expired_good);
  }
  if (from_good.absent) return Refused(refusal);
  return Refused(Status(refusal.code(), refusal.message() + "; and the last good file " +
                                            host->GoodPath() +
                                            " was refused too: " + good_refusal.message()));
}

Result<std::unique_ptr<SnapshotReloader>> SnapshotReloader::Create(std::string path,
                                                                   ReloadOptions options) {
  return internal::CatchOutOfMemory(
      "creating a snapshot reloader", path, [&]() -> Result<std::unique_ptr<SnapshotReloader>> {
        auto impl = std::make_unique<Impl>();
        impl->path = path;  // a copy: `path` still names the file in an error
        impl->options = std::move(options);
        Impl& self = *impl;
        self.policy = internal::PolicyDigest(self.options.load);
        if (self.options.state_dir.empty() && !self.options.name.empty()) {
          return Status(StatusCode::kBadArgument,
                        "a reloader name needs a state directory (" + self.path + ")");
        }
        if (!self.options.name.empty() && !internal::ValidReloaderName(self.options.name)) {
          return Status(StatusCode::kBadArgument, "reloader name '" + self.options.name +
                                                      "': 1..128 characters of A-Z a-z 0-9 . _ -");
        }
        if (self.options.defer_first_load) {
          return std::unique_ptr<SnapshotReloader>(new SnapshotReloader(std::move(impl)));
        }
        if (Status status = self.Initialize(); !status.ok()) return status;
        const ReloadCandidate first = self.FirstCandidate();
        if (first.outcome != ReloadOutcome::kNew) return first.status;
        (void)self.Commit();  // a state write that failed is in the report
        return std::unique_ptr<SnapshotReloader>(new SnapshotReloader(std::move(impl)));
      });
}

std::shared_ptr<const RingSnapshot> SnapshotReloader::current() const { return impl_->Current(); }

ReloadCandidate SnapshotReloader::Impl::CheckLocked() {
  pending = Pending();
  if (!initialized) {
    if (Status status = Initialize(); !status.ok()) {
      NoteRefusal(FileIdentity{}, status, false);
      return Refused(status);
    }
  }
  if (Current() == nullptr) return FirstCandidate();  // deferred, or nothing served yet
  if (host && good_pending.snapshot) NoteStateError(WritePendingGood());
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    const int error = errno;
    FileIdentity missing;  // size -1: every missing state is one identity
    if (IsRefused(missing)) return ReloadCandidate();
    const Status status(StatusCode::kIoError,
                        "io: " + path + ": stat: " + std::strerror(error) +
                            "; still serving the last ring");
    NoteRefusal(missing, status, true);
    return Refused(status);
  }
  const FileIdentity now = internal::IdentityOf(st);
  if (now == current_file || IsRefused(now) || WaitingToRetry(now)) return ReloadCandidate();

  // A writer verifies under the host's lock, so that the others adopt its
  // copy instead of verifying in parallel with a copy of their own.
  HostLock lock = sharing() && writing() ? WriterLock() : HostLock();
  const std::optional<ShareRecord> record = sharing() ? host->ReadShare() : std::nullopt;
  OpenedSnapshot file;
  Attempt attempt;
  if (Status opened = internal::OpenSnapshotPath(path, options.load, file); !opened.ok()) {
    attempt.result = opened;
    attempt.loaded.identity = file.identity;
  } else {
    attempt = LoadPath(file, record, false);
  }
  if (!attempt.result.ok()) {
    const Status& status = attempt.result.status();
    const FileIdentity id = attempt.loaded.identity.size >= 0 ? attempt.loaded.identity : now;
    NoteRefusal(id, status, IsVerdictOnBytes(status, attempt.loaded.changed_while_read));
    return Refused(status);
  }
  io_retry = IoRetry();
  const std::shared_ptr<const RingSnapshot> served = Current();
  const std::shared_ptr<const RingSnapshot>& found = attempt.result.value();
  if (served && found->info().config_version == served->info().config_version &&
      found->info().fingerprint == served->info().fingerprint) {
    // A copy of the ring served (a touch, a cp): verified, remembered, not
    // swapped; the others of the host are pointed at the copy served.
    current_file = attempt.loaded.identity;
    Publish(lock, current_bytes);
    ReloadCandidate candidate;
    candidate.outcome = ReloadOutcome::kSameRing;
    return candidate;
  }
  if (!attempt.adopted) Publish(lock, attempt.loaded);
  return Candidate(found, attempt.loaded.identity, attempt.loaded, attempt.adopted);
}

ReloadCandidate SnapshotReloader::Check() {
  Impl& impl = *impl_;
  std::lock_guard<std::mutex> poll(impl.poll_mutex);
  Impl::Checking checking(impl.checking_since);
  try {
    return impl.CheckLocked();
  } catch (const std::bad_alloc&) {
    impl.pending = Impl::Pending();
    const Status status = internal::OutOfMemory("reloading a snapshot", impl.path);
    impl.NoteRefusal(FileIdentity{}, status, false);
    return Impl::Refused(status);
  }
}

// A process started later (nginx's respawned worker) catching up with its
// siblings: the copy of the path's file another process published, if it
// is newer than the ring served and passes every check; else BASE.good, if
// its version is newer than the ring served and it passes every check.
ReloadCandidate SnapshotReloader::Impl::AdoptSharedLocked() {
  pending = Pending();
  if (!initialized && !Initialize().ok()) return ReloadCandidate();
  if (!host) return ReloadCandidate();
  const std::shared_ptr<const RingSnapshot> served = Current();
  const auto newer = [&](const SnapshotInfo& info) {
    return !served || info.config_version > served->info().config_version;
  };
  const std::optional<ShareRecord> record = sharing() ? host->ReadShare() : std::nullopt;
  if (record && record->policy == policy && record->path == path &&
      (!served || record->config_version > served->info().config_version)) {
    OpenedSnapshot file;
    OpenedSnapshot good;
    SnapshotInfo claim;
    if (internal::OpenSnapshotPath(path, options.load, file).ok()) {
      const bool has_claim = OpenGood(good, claim);
      Attempt attempt = Adopt(file, record, Gate(has_claim ? &claim : nullptr));
      if (attempt.result.ok() && newer(attempt.result.value()->info())) {
        return Candidate(attempt.result.value(), file.identity, attempt.loaded, true);
      }
    }
  }
  if (!options.keep_last_good) return ReloadCandidate();
  OpenedSnapshot good;
  SnapshotInfo claim;
  if (!OpenGood(good, claim) || !newer(claim)) return ReloadCandidate();
  Attempt attempt = ProveGood(good);
  if (!attempt.result.ok() || !newer(attempt.result.value()->info())) return ReloadCandidate();
  ReloadCandidate candidate =
      Candidate(attempt.result.value(), FileIdentity{}, attempt.loaded, false);
  pending.from_last_good = true;
  return candidate;
}

ReloadCandidate SnapshotReloader::AdoptShared() {
  Impl& impl = *impl_;
  std::lock_guard<std::mutex> poll(impl.poll_mutex);
  try {
    return impl.AdoptSharedLocked();
  } catch (const std::bad_alloc&) {
    impl.pending = Impl::Pending();
    return ReloadCandidate();
  }
}

Status SnapshotReloader::Accept(const ReloadCandidate& candidate) {
  Impl& impl = *impl_;
  std::lock_guard<std::mutex> poll(impl.poll_mutex);
  if (candidate.outcome != ReloadOutcome::kNew || candidate.token == 0 ||
      candidate.token != impl.pending.token || !impl.pending.snapshot) {
    return Status(StatusCode::kBadArgument,
                  "not the last new candidate of Check or AdoptShared (" + impl.path + ")");
  }
  return impl.Commit();
}

void SnapshotReloader::Refuse(const ReloadCandidate& candidate, SnapshotCheck check,
                              std::string message) {
  Impl& impl = *impl_;
  std::lock_guard<std::mutex> poll(impl.poll_mutex);
  if (candidate.token == 0 || candidate.token != impl.pending.token) return;
  const FileIdentity file = impl.pending.file;
  impl.pending = Impl::Pending();
  try {
    const Status status(CodeOfSnapshotCheck(check),
                        std::string(SnapshotCheckName(check)) + ": " + message);
    impl.NoteRefusal(file, status, true);
  } catch (const std::bad_alloc&) {
    impl.NoteRefusal(file, internal::OutOfMemory("refusing a snapshot"), true);
  }
}

Status SnapshotReloader::Poll() {
  ReloadCandidate candidate = Check();
  switch (candidate.outcome) {
    case ReloadOutcome::kNew:
      return Accept(candidate);
    case ReloadOutcome::kRefused:
      return candidate.status;
    default:
      return Status();
  }
}

Status SnapshotReloader::StartWatching(std::chrono::milliseconds interval) {
  Impl& impl = *impl_;
  if (impl.watcher.joinable()) return Status();
  try {
    impl.watcher = std::thread([this, interval] {
      Impl& self = *impl_;
      std::unique_lock<std::mutex> lock(self.watch_mutex);
      while (!self.stopping) {
        self.watch_wake.wait_for(lock, interval, [&] { return self.stopping; });
        if (self.stopping) break;
        lock.unlock();
        (void)Poll();
        lock.lock();
      }
    });
  } catch (const std::bad_alloc&) {
    return internal::OutOfMemory("starting the watcher thread", impl.path);
  } catch (const std::system_error& error) {
    // EAGAIN: the process or the system is out of threads.
    return internal::CatchOutOfMemory("starting the watcher thread", impl.path, [&] {
      return Status(StatusCode::kIoError,
                    "cannot start the watcher thread: " + std::string(error.what()) + " (" +
                        impl.path + ")");
    });
  }
  return Status();
}

ReloadReport SnapshotReloader::report() const {
  std::lock_guard<std::mutex> lock(impl_->report_mutex);
  ReloadReport copy = impl_->report;
  copy.checking_since_unix_seconds = impl_->checking_since.load();
  copy.serving_expired =
      copy.served_expires_unix_seconds != 0 && NowSeconds() >= copy.served_expires_unix_seconds;
  return copy;
}

uint64_t SnapshotReloader::reloads() const {
  std::lock_guard<std::mutex> lock(impl_->report_mutex);
  return impl_->report.accepted;
}

uint64_t SnapshotReloader::refusals() const {
  std::lock_guard<std::mutex> lock(impl_->report_mutex);
  return impl_->report.refused;
}

Status SnapshotReloader::last_error() const {
  std::lock_guard<std::mutex> lock(impl_->report_mutex);
  return impl_->last_status;
}

}  // namespace chash
