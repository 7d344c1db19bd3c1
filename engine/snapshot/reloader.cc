// SnapshotReloader: one owner of a path's current snapshot, replaced when
// the file at the path is replaced, published to readers under a mutex.
#include <condition_variable>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>

#include "chash/snapshot.h"
#include "out_of_memory.h"
#include "snapshot/loader.h"

namespace chash {

struct SnapshotReloader::Impl {
  std::string path;
  ReloadOptions options;

  // Readers: a pointer copy under this mutex.
  mutable std::mutex current_mutex;
  std::shared_ptr<const RingSnapshot> current;

  // One Poll at a time; everything below is guarded by poll_mutex.
  mutable std::mutex poll_mutex;
  internal::FileIdentity current_file;
  internal::FileIdentity refused_file;
  bool has_refused = false;
  uint64_t reloads = 0;
  uint64_t refusals = 0;
  Status last_error;

  // The watcher thread.
  std::mutex watch_mutex;
  std::condition_variable watch_wake;
  bool stopping = false;
  std::thread watcher;

  // Records a refused file and returns why. The copy for last_error is made
  // first, so that running out of memory here changes nothing. A file that
  // could not be loaded for lack of memory is not marked refused: the next
  // Poll tries it again.
  Status Refuse(const internal::FileIdentity& file, Status status) {
    Status kept = status;
    if (status.code() != StatusCode::kOutOfMemory) {
      refused_file = file;
      has_refused = true;
    }
    ++refusals;
    last_error = std::move(kept);
    return status;
  }
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
}

Result<std::unique_ptr<SnapshotReloader>> SnapshotReloader::Create(std::string path,
                                                                   ReloadOptions options) {
  return internal::CatchOutOfMemory(
      "creating a snapshot reloader", path, [&]() -> Result<std::unique_ptr<SnapshotReloader>> {
        auto impl = std::make_unique<Impl>();
        impl->path = path;  // a copy: `path` still names the file in an error
        impl->options = std::move(options);
        Result<std::shared_ptr<const RingSnapshot>> first =
            internal::LoadSnapshotFile(impl->path, impl->options.load, &impl->current_file);
        if (!first.ok()) return first.status();
        impl->current = std::move(first).value();
        return std::unique_ptr<SnapshotReloader>(new SnapshotReloader(std::move(impl)));
      });
}

std::shared_ptr<const RingSnapshot> SnapshotReloader::current() const {
  std::lock_guard<std::mutex> lock(impl_->current_mutex);
  return impl_->current;
}

Status SnapshotReloader::Poll() {
  Impl& impl = *impl_;
  std::lock_guard<std::mutex> poll_lock(impl.poll_mutex);
  const uint64_t refusals_before = impl.refusals;
  Status status = internal::CatchOutOfMemory("reloading a snapshot", impl.path, [&]() -> Status {
    const internal::FileIdentity now = internal::IdentityOfPath(impl.path);
    if (now == impl.current_file || (impl.has_refused && now == impl.refused_file)) {
      return Status();
    }
    internal::FileIdentity opened = now;
    Result<std::shared_ptr<const RingSnapshot>> loaded =
        internal::LoadSnapshotFile(impl.path, impl.options.load, &opened);
    if (!loaded.ok()) return impl.Refuse(opened, loaded.status());
    std::shared_ptr<const RingSnapshot> next = std::move(loaded).value();
    const std::shared_ptr<const RingSnapshot> old = current();
    const uint64_t old_version = old->info().config_version;
    const uint64_t new_version = next->info().config_version;
    if (new_version == old_version) {
      if (next->info().checksum == old->info().checksum) {
        impl.current_file = opened;  // the same file again (a copy, a touch)
        return Status();
      }
      return impl.Refuse(opened, Status(StatusCode::kUntrusted,
                                        "rollback: config version " + std::to_string(new_version) +
                                            " reused with different content (" + impl.path + ")"));
    }
    if (new_version < old_version && !impl.options.allow_rollback) {
      return impl.Refuse(opened, Status(StatusCode::kUntrusted,
                                        "rollback: config version " + std::to_string(new_version) +
                                            " is older than the current " +
                                            std::to_string(old_version) +
                                            " (publish the old servers as a new version, or "
                                            "allow_rollback) (" +
                                            impl.path + ")"));
    }
    {
      std::lock_guard<std::mutex> lock(impl.current_mutex);
      impl.current = std::move(next);
    }
    impl.current_file = opened;
    ++impl.reloads;
    return Status();
  });
  if (status.code() == StatusCode::kOutOfMemory && impl.refusals == refusals_before) {
    // Memory ran out outside the load (making a refusal's message): counted
    // as a load that ran out, and the file is tried again at the next Poll.
    ++impl.refusals;
    impl.last_error = internal::OutOfMemory("reloading a snapshot", impl.path);
  }
  return status;
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

uint64_t SnapshotReloader::reloads() const {
  std::lock_guard<std::mutex> lock(impl_->poll_mutex);
  return impl_->reloads;
}
uint64_t SnapshotReloader::refusals() const {
  std::lock_guard<std::mutex> lock(impl_->poll_mutex);
  return impl_->refusals;
}
Status SnapshotReloader::last_error() const {
  std::lock_guard<std::mutex> lock(impl_->poll_mutex);
  return impl_->last_error;
}

}  // namespace chash
