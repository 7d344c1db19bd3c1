// SnapshotReloader: the one reload policy (include/chash/snapshot.h) that
// the C API, the nginx modules, chash.resty and the Rust crate use.
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
#include "out_of_memory.h"
#include "snapshot/host_state.h"
#include "snapshot/loader.h"

namespace chash {
namespace {

using internal::FileIdentity;
using internal::HostLock;
using internal::LoadedFile;
using internal::SealedCopy;
using internal::ShareRecord;

// Refused identities remembered: a flapping file (good, bad, good...) stays
// cheap; an older refusal is forgotten once 16 others came after it.
constexpr size_t kRememberedRefusals = 16;
// How long a process waits for another that verifies a file under the
// host's lock (a 1.23 GB file verifies in about a second) before verifying
// it too.
constexpr std::chrono::milliseconds kLockWait{60000};

int64_t NowSeconds() { return static_cast<int64_t>(std::time(nullptr)); }

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
  std::deque<FileIdentity> refused_files;
  uint64_t highest = 0;        // the highest version served here or persisted
  Fingerprint highest_fingerprint;
  bool has_highest = false;
  uint64_t next_token = 1;
  struct Pending {
    uint64_t token = 0;
    std::shared_ptr<const RingSnapshot> snapshot;
    FileIdentity file;
    SealedCopy sealed;
    bool adopted = false;
    bool from_last_good = false;
  } pending;
  // Create deferred the first load (ReloadOptions::defer_first_load): the
  // state directory is opened and the first ring found by the first Check.
  bool initialized = false;
  // A ring served whose file NAME.good must still receive (its snapshot
  // keeps the sealed copy's descriptor open until then).
  struct GoodPending {
    std::shared_ptr<const RingSnapshot> snapshot;
    SealedCopy sealed;
  } good_pending;

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

  // Counts a refusal, keeps it for the report, and (remember) never loads
  // that identity again.
  void NoteRefusal(const FileIdentity& id, const Status& status, bool remember) {
    if (remember && !IsRefused(id)) {
      refused_files.push_back(id);
      if (refused_files.size() > kRememberedRefusals) refused_files.pop_front();
    }
    std::lock_guard<std::mutex> lock(report_mutex);
    ++report.refused;
    report.last_check = FailedSnapshotCheck(status);
    report.last_message = status.message();
    report.last_refused_unix_seconds = NowSeconds();
    last_status = status;
  }

  void Raise(uint64_t version, const Fingerprint& fingerprint) {
    if (!has_highest || version > highest) {
      highest = version;
      highest_fingerprint = fingerprint;
      has_highest = true;
    }
  }

  // The versions a new file must not go below (with the persisted state,
  // re-read: another process may have served a newer one).
  std::optional<internal::VersionFloor> Floor() {
    if (host) {
      Result<internal::PersistedState> state = host->ReadState();
      if (state.ok() && state.value().present) {
        Raise(state.value().highest_version, state.value().fingerprint);
      }
    }
    if (!has_highest) return std::nullopt;
    internal::VersionFloor floor;
    floor.version = highest;
    floor.fingerprint = highest_fingerprint;
    return floor;
  }

  // The version rules for a snapshot verified elsewhere (adopted).
  Status CheckVersion(const SnapshotInfo& info) const {
    if (!has_highest || info.config_version > highest) return Status();
    if (info.config_version < highest) {
      return Status(StatusCode::kUntrusted,
                    "rollback: config version " + std::to_string(info.config_version) +
                        " is older than " + std::to_string(highest) + ", which was served (" +
                        path + ")");
    }
    if (!(info.fingerprint == highest_fingerprint)) {
      return Status(StatusCode::kUntrusted,
                    "same_version: config version " + std::to_string(info.config_version) +
                        " was served with ring " + highest_fingerprint.Short() +
                        "; this file has that version and ring " + info.fingerprint.Short() +
                        " (" + path + ")");
    }
    return Status();
  }

  ReloadCandidate Candidate(std::shared_ptr<const RingSnapshot> snapshot, const FileIdentity& file,
                            const SealedCopy& sealed, bool adopted) {
    pending.token = next_token++;
    pending.snapshot = snapshot;
    pending.file = file;
    pending.sealed = sealed;
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

  // The sealed copy another process published, if it passes the adoption
  // checks and holds the ring the record says.
  std::optional<std::shared_ptr<const RingSnapshot>> Adopt(const ShareRecord& record,
                                                           SealedCopy& adopted) const {
    Result<std::shared_ptr<const RingSnapshot>> loaded =
        internal::AdoptSealedCopy(record.pid, record.copy, options.load, &adopted);
    if (!loaded.ok()) return std::nullopt;
    const SnapshotInfo& info = loaded.value()->info();
    if (info.config_version != record.config_version ||
        !(info.fingerprint == record.fingerprint)) {
      return std::nullopt;
    }
    return std::move(loaded).value();
  }

  void Publish(const LoadedFile& loaded) {
    if (!sharing() || !writing() || loaded.sealed.fd < 0 || !loaded.snapshot) return;
    ShareRecord record = host->ReadShare();
    if (record.policy != policy) record = ShareRecord();
    record.policy = policy;
    record.has_copy = true;
    record.pid = getpid();
    record.copy = loaded.sealed;
    record.source = loaded.identity;
    record.config_version = loaded.snapshot->info().config_version;
    record.fingerprint = loaded.snapshot->info().fingerprint;
    (void)host->WriteShare(record);  // at worst the others verify for themselves
  }

  void PublishRefusal(const FileIdentity& id, const Status& status) {
    if (!sharing() || !writing()) return;
    ShareRecord record = host->ReadShare();
    if (record.policy != policy) record = ShareRecord();
    record.policy = policy;
    record.has_refusal = true;
    record.refused = id;
    record.check = FailedSnapshotCheck(status);
    record.message = status.message();
    (void)host->WriteShare(record);
  }

  // NAME.good and NAME.state for a ring being served, unless the state
  // already holds it or a newer one. Under the host's lock.
  // NAME.state for a ring being served, unless the state already holds it
  // or a newer one; then NAME.good, written now (good_now: a start, which
  // serves nothing yet) or at the next Check (a reload: the embedder swaps
  // as soon as Accept returns, and a file of a gigabyte written and fsync-ed
  // first would delay every swap by seconds). Under the host's lock.
  Status Persist(std::shared_ptr<const RingSnapshot> snapshot, const SealedCopy& sealed,
                 bool good_now) {
    if (!writing()) return Status();
    HostLock lock = host->Lock(kLockWait);
    Result<internal::PersistedState> state = host->ReadState();
    if (!state.ok()) return state.status();
    const uint64_t version = snapshot->info().config_version;
    if (state.value().present && state.value().highest_version >= version) return Status();
    internal::PersistedState next;
    next.present = true;
    next.highest_version = version;
    next.fingerprint = snapshot->info().fingerprint;
    if (Status status = host->WriteState(next); !status.ok()) return status;
    if (!options.keep_last_good || sealed.fd < 0) return Status();
    good_pending = GoodPending{std::move(snapshot), sealed};
    return good_now ? WritePendingGood(lock) : Status();
  }

  // NAME.good from the copy Persist left pending, unless NAME.good already
  // holds its version (another process wrote it). Kept pending on a failure
  // (the report says so), tried again at the next Check.
  Status WritePendingGood(const HostLock&) {
    if (!good_pending.snapshot) return Status();
    const uint64_t version = good_pending.snapshot->info().config_version;
    Result<SnapshotInfo> there = ReadSnapshotInfo(host->GoodPath());
    if (!there.ok() || there.value().config_version != version) {
      if (Status status = host->WriteGood(good_pending.sealed.fd, good_pending.sealed.size);
          !status.ok()) {
        return status;
      }
    }
    good_pending = GoodPending();
    return Status();
  }
  Status WritePendingGood() {
    if (!good_pending.snapshot || !writing()) return Status();
    HostLock lock = host->Lock(kLockWait);
    return WritePendingGood(lock);
  }

  void NoteStateError(const Status& status) {
    std::lock_guard<std::mutex> lock(report_mutex);
    report.state_error = status;
  }

  void Serve(std::shared_ptr<const RingSnapshot> snapshot, const FileIdentity& file,
             const SealedCopy& sealed) {
    Raise(snapshot->info().config_version, snapshot->info().fingerprint);
    current_file = file;
    current_sealed = sealed;
    const uint64_t version = snapshot->info().config_version;
    {
      std::lock_guard<std::mutex> lock(current_mutex);
      current = std::move(snapshot);
    }
    std::lock_guard<std::mutex> lock(report_mutex);
    report.served_version = version;
    report.highest_version = highest;
  }

  // Marks a Check in flight for the report.
  struct Checking {
    explicit Checking(std::atomic<int64_t>& since) : since_(since) { since_.store(NowSeconds()); }
    ~Checking() { since_.store(0); }
    std::atomic<int64_t>& since_;
  };

  // Serves the pending candidate: persists its version and file (an error
  // is kept in the report and returned; the ring is served all the same),
  // then publishes it. A reload (not the first ring) is counted.
  Status Commit() {
    const bool reload = Current() != nullptr;
    Pending taken = std::move(pending);
    pending = Pending();
    Status persisted;
    try {
      persisted = Persist(taken.snapshot, taken.sealed, !reload);
    } catch (const std::bad_alloc&) {
      persisted = internal::OutOfMemory("writing the reload state", path);
    }
    NoteStateError(persisted);
    Serve(std::move(taken.snapshot), taken.file, taken.sealed);
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
  // A NAME.good still to write is written now: a restart must find the
  // ring this reloader served last.
  std::lock_guard<std::mutex> poll(impl_->poll_mutex);
  try {
    (void)impl_->WritePendingGood();
  } catch (...) {
    // Out of memory while naming a failure: the next start serves the path's file.
  }
}

// Opens the state directory and reads the versions served. Touches the
// file system: Create does it, or the first Check when deferred.
Status SnapshotReloader::Impl::Initialize() {
  if (initialized) return Status();
  if (!options.state_dir.empty()) {
    const std::string name =
        options.name.empty() ? internal::DefaultReloaderName(path) : options.name;
    Result<internal::HostState> opened = internal::HostState::Open(options.state_dir, name);
    if (!opened.ok()) return opened.status();
    host = std::move(opened).value();
    Result<internal::PersistedState> state = host->ReadState();
    if (!state.ok()) return state.status();
    if (state.value().present) Raise(state.value().highest_version, state.value().fingerprint);
  }
  initialized = true;
  return Status();
}

// The newest ring that passes every check, while nothing is served yet: the
// path's file as another process of the host verified it, else the path's
// file with every check, else the last good file (NAME.good). A candidate
// (pending; from_last_good says which), or the refusal naming why the path's
// file (and the last good one) failed.
ReloadCandidate SnapshotReloader::Impl::FirstCandidate() {
  pending = Pending();
  const FileIdentity now = internal::IdentityOfPath(path);
  // A file refused already (the embedder's own checks refused it: the
  // next candidate is the last good file).
  const bool path_refused = now.size >= 0 && IsRefused(now);
  if (sharing() && now.size >= 0 && !path_refused) {
    HostLock lock = host->Lock(kLockWait);
    const ShareRecord record = host->ReadShare();
    if (record.policy == policy && record.has_copy && record.source == now) {
      SealedCopy adopted;
      if (auto snapshot = Adopt(record, adopted);
          snapshot && CheckVersion((*snapshot)->info()).ok()) {
        return Candidate(std::move(*snapshot), now, adopted, true);
      }
    }
  }
  const std::optional<internal::VersionFloor> floor = Floor();
  Status refusal;
  if (path_refused) {
    std::lock_guard<std::mutex> lock(report_mutex);
    refusal = last_status;
  } else {
    LoadedFile loaded;
    Result<std::shared_ptr<const RingSnapshot>> first = internal::LoadSnapshotFile(
        path, options.load, &loaded, floor ? &*floor : nullptr);
    if (first.ok()) {
      Publish(loaded);
      return Candidate(std::move(first).value(), loaded.identity, loaded.sealed, false);
    }
    refusal = first.status();
    if (refusal.code() == StatusCode::kOutOfMemory) return Refused(refusal);
    const bool remember = !loaded.changed_while_read;
    NoteRefusal(loaded.identity, refusal, remember);
    if (remember) PublishRefusal(loaded.identity, refusal);
  }
  if (!host || !options.keep_last_good) return Refused(refusal);
  const std::string good = host->GoodPath();
  struct stat st {};
  if (stat(good.c_str(), &st) != 0) return Refused(refusal);
  // No floor: NAME.good is this name's own verified copy. It is older than
  // the state only if the process stopped between the two writes; it is
  // served then, and the report says so, rather than nothing.
  LoadedFile last;
  Result<std::shared_ptr<const RingSnapshot>> kept =
      internal::LoadSnapshotFile(good, options.load, &last, nullptr);
  if (!kept.ok()) {
    return Refused(Status(refusal.code(), refusal.message() + "; and the last good file " + good +
                                              " was refused too: " + kept.status().message()));
  }
  const uint64_t version = kept.value()->info().config_version;
  if (has_highest && version < highest) {
    NoteRefusal(FileIdentity{},
                Status(StatusCode::kUntrusted,
                       "rollback: " + refusal.message() + "; serving the last good file " + good +
                           ", config version " + std::to_string(version) +
                           ", older than the highest served, " + std::to_string(highest) +
                           " (the process stopped before it rewrote the file)"),
                false);
  } else if (has_highest && version == highest && !(kept.value()->info().fingerprint ==
                                                    highest_fingerprint)) {
    return Refused(Status(refusal.code(), refusal.message() + "; and the last good file " + good +
                                              " holds another ring of version " +
                                              std::to_string(version)));
  }
  Publish(last);
  ReloadCandidate candidate = Candidate(std::move(kept).value(), FileIdentity{}, last.sealed, false);
  pending.from_last_good = true;
  return candidate;
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
  if (host) {
    Status state_error;
    {
      std::lock_guard<std::mutex> lock(report_mutex);
      state_error = report.state_error;
    }
    if (!state_error.ok()) {
      // The last Accept could not persist: try again.
      if (const std::shared_ptr<const RingSnapshot> served = Current()) {
        NoteStateError(Persist(served, current_sealed, true));
      }
    } else if (good_pending.snapshot) {
      NoteStateError(WritePendingGood());
    }
  }
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
  if ((Current() != nullptr && now == current_file) || IsRefused(now)) return ReloadCandidate();

  HostLock lock;
  ShareRecord record;
  if (sharing()) {
    lock = host->Lock(kLockWait);
    record = host->ReadShare();
    if (record.policy == policy) {
      if (record.has_refusal && record.refused == now) {
        const Status status(CodeOfSnapshotCheck(record.check), record.message);
        NoteRefusal(now, status, true);
        return Refused(status);
      }
      if (record.has_copy && record.source == now) {
        const std::shared_ptr<const RingSnapshot> served = Current();
        if (served && served->info().config_version == record.config_version &&
            served->info().fingerprint == record.fingerprint) {
          current_file = now;
          ReloadCandidate same;
          same.outcome = ReloadOutcome::kSameRing;
          return same;
        }
        (void)Floor();
        SealedCopy adopted;
        if (auto snapshot = Adopt(record, adopted)) {
          if (Status status = CheckVersion((*snapshot)->info()); !status.ok()) {
            NoteRefusal(now, status, true);
            return Refused(status);
          }
          return Candidate(std::move(*snapshot), now, adopted, true);
        }
      }
    }
  }
  const std::optional<internal::VersionFloor> floor = Floor();
  LoadedFile loaded;
  Result<std::shared_ptr<const RingSnapshot>> result =
      internal::LoadSnapshotFile(path, options.load, &loaded, floor ? &*floor : nullptr);
  if (!result.ok()) {
    const Status& status = result.status();
    const bool remember =
        status.code() != StatusCode::kOutOfMemory && !loaded.changed_while_read;
    const FileIdentity id = loaded.identity.size >= 0 ? loaded.identity : now;
    NoteRefusal(id, status, remember);
    if (remember) PublishRefusal(id, status);
    return Refused(status);
  }
  const std::shared_ptr<const RingSnapshot> served = Current();
  if (served && result.value()->info().config_version == served->info().config_version &&
      result.value()->info().fingerprint == served->info().fingerprint) {
    // A copy of the ring served (a touch, a cp): verified, remembered, not
    // swapped; the others of the host are pointed at the copy served.
    current_file = loaded.identity;
    LoadedFile same = loaded;
    same.snapshot = served;
    same.sealed = current_sealed;
    Publish(same);
    ReloadCandidate candidate;
    candidate.outcome = ReloadOutcome::kSameRing;
    return candidate;
  }
  Publish(loaded);
  return Candidate(std::move(result).value(), loaded.identity, loaded.sealed, false);
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

ReloadCandidate SnapshotReloader::Impl::AdoptSharedLocked() {
  pending = Pending();
  if (!initialized && !Initialize().ok()) return ReloadCandidate();
  if (!host) return ReloadCandidate();
  HostLock lock = host->Lock(kLockWait);
  const ShareRecord record = sharing() ? host->ReadShare() : ShareRecord();
  const std::shared_ptr<const RingSnapshot> served = Current();
  (void)Floor();
  if (record.policy == policy && record.has_copy &&
      !(served && (record.config_version < served->info().config_version ||
                   (record.config_version == served->info().config_version &&
                    record.fingerprint == served->info().fingerprint)))) {
    SealedCopy adopted;
    if (auto snapshot = Adopt(record, adopted);
        snapshot && CheckVersion((*snapshot)->info()).ok()) {
      return Candidate(std::move(*snapshot), record.source, adopted, true);
    }
  }
  // The host served a newer version than this process, and the process
  // that verified it is gone (its copy cannot be adopted): the last good
  // file, which is that version.
  if (!options.keep_last_good || !has_highest ||
      (served && served->info().config_version >= highest)) {
    return ReloadCandidate();
  }
  const std::optional<internal::VersionFloor> floor = Floor();
  LoadedFile loaded;
  Result<std::shared_ptr<const RingSnapshot>> good = internal::LoadSnapshotFile(
      host->GoodPath(), options.load, &loaded, floor ? &*floor : nullptr);
  if (!good.ok() || good.value()->info().config_version != highest) return ReloadCandidate();
  Publish(loaded);
  return Candidate(std::move(good).value(), FileIdentity{}, loaded.sealed, false);
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
