// Snapshot files: opening a path without ever blocking, the checks made
// before a byte of the body is read, the body read the options' way (a
// sealed memory file, a private copy or the file's own pages), and the
// adoption of a sealed copy another process of the host has verified.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include "chash/snapshot.h"
#include "layout/aligned_array.h"
#include "util/out_of_memory.h"
#include "snapshot/format.h"
#include "util/os_handles.h"
#include "snapshot/loader.h"

namespace chash {
namespace {

using namespace internal::snapshot;  // NOLINT: the format's names
using internal::FileIdentity;
using internal::LoadedFile;
using internal::SealedCopy;

Status Bad(std::string_view check, const std::string& detail) {
  return Status(StatusCode::kBadSnapshot, std::string(check) + ": " + detail);
}

Status IoError(std::string_view check, const std::string& path, const std::string& what,
               int error) {
  return Status(StatusCode::kIoError, std::string(check) + ": " + path + ": " + what +
                                          (error != 0 ? std::string(": ") + std::strerror(error)
                                                      : std::string()));
}

// A sealed memory file and its read-only mapping: what a kSealed ring's
// columns are. The descriptor stays open as long as the ring, so that the
// host's other processes can map the same pages (/proc/PID/fd/FD).
struct SealedFile {
  internal::UniqueFd fd;
  internal::UniqueMapping map;  // unmapped before the descriptor closes
};

// A kCopy load's private memory: 64-byte aligned, huge pages when large.
struct PrivateCopy {
  internal::AlignedArray<uint8_t> bytes;
};

// What a sealed copy must be sealed against: nothing may change its bytes
// or its size, and nobody may lift the seals.
constexpr int kRequiredSeals = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

uint64_t MaxFileBytes(const SnapshotLoadOptions& options) {
  return options.max_file_bytes != 0 ? options.max_file_bytes : kDefaultMaxSnapshotBytes;
}

// Refuses what is not a regular snapshot-sized file: before the open (a
// FIFO or a device is never opened), and again on the descriptor (the path
// may have been replaced in between). `limits` false: header reads only
// (chash inspect), no size cap and no hole check.
Status CheckKind(const std::string& path, const struct stat& st, const SnapshotLoadOptions& options,
                 bool limits) {
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISFIFO(st.st_mode)   ? "a FIFO"
                       : S_ISDIR(st.st_mode)  ? "a directory"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                   : "not a regular file";
    return IoError("not_regular", path, std::string("is ") + kind + ", not a regular file", 0);
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (limits && size > MaxFileBytes(options)) {
    return Bad("max_size", path + " has " + std::to_string(size) + " bytes, over the cap of " +
                               std::to_string(MaxFileBytes(options)) +
                               " (max_file_bytes; a ring of 204.8M points is 1.23 GB)");
  }
  if (size < kHeaderBytes + kTrailerBytes) {
    return Bad("size", path + " has " + std::to_string(size) +
                           " bytes, less than a header and a trailer (640)");
  }
  return Status();
}

// Holes (SEEK_HOLE before the end): a snapshot is written whole, so a hole
// is a file extended or preallocated by something else, and reading it
// would cost its claimed size for nothing. File systems without hole
// support answer the end of the file.
Status CheckNoHoles(const std::string& path, int fd, uint64_t size) {
  const off_t hole = lseek(fd, 0, SEEK_HOLE);
  if (hole >= 0 && static_cast<uint64_t>(hole) < size) {
    return Bad("sparse", path + " has a hole at byte " + std::to_string(hole) + " of " +
                             std::to_string(size) + ": not a snapshot as written");
  }
  return Status();
}

// Reads [offset, offset + length) with pread, never through a mapping: a
// file truncated meanwhile gives a short read (a size refusal), where a
// mapping would raise SIGBUS.
Status ReadAt(const std::string& path, int fd, uint8_t* out, uint64_t length, uint64_t offset) {
  uint64_t done = 0;
  while (done < length) {
    const auto chunk = static_cast<size_t>(std::min<uint64_t>(length - done, uint64_t{1} << 30));
    const ssize_t got = pread(fd, out + done, chunk, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      return IoError("io", path, "read", errno);
    }
    if (got == 0) {
      return Bad("size", path + " shrank to " + std::to_string(offset + done) +
                             " bytes while it was read");
    }
    done += static_cast<uint64_t>(got);
  }
  return Status();
}

// Checks the descriptor opened for `path` (the path may have been replaced
// since its stat), then reads its header and trailer: two preads, whatever
// its size.
Status FinishOpen(const std::string& path, const SnapshotLoadOptions& options, bool limits,
                  internal::OpenedSnapshot& out) {
  struct stat st {};
  if (fstat(out.fd, &st) != 0) return IoError("io", path, "fstat", errno);
  out.identity = internal::IdentityOf(st);
  if (Status status = CheckKind(path, st, options, limits); !status.ok()) return status;
  out.size = static_cast<uint64_t>(st.st_size);
  if (limits) {
    if (Status status = CheckNoHoles(path, out.fd, out.size); !status.ok()) return status;
  }
  if (Status status = ReadAt(path, out.fd, out.head, kHeaderBytes, 0); !status.ok()) return status;
  return ReadAt(path, out.fd, out.tail, kTrailerBytes, out.size - kTrailerBytes);
}

// OpenSnapshotPath with or without the limits (size cap, holes): without,
// for header reads only (chash inspect).
Status OpenPath(const std::string& path, const SnapshotLoadOptions& options, bool limits,
                internal::OpenedSnapshot& out) {
  out.path = path;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return IoError("io", path, "stat", errno);
  out.identity = internal::IdentityOf(st);
  if (Status status = CheckKind(path, st, options, limits); !status.ok()) return status;
  // Links are followed here on purpose: this is the operator's watched
  // path (a deploy may link it to a release), not a name in the state
  // directory; O_NONBLOCK and the kind checked above keep a FIFO from
  // hanging the open, and FinishOpen checks the opened file again.
  out.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (out.fd < 0) return IoError("io", path, "open", errno);
  return FinishOpen(path, options, limits, out);
}

// The file's bytes in a new sealed memory file, mapped read-only. One read
// of the file (sendfile: no copy through user space where the kernel can),
// then the seals; kOutOfMemory when the memory file cannot grow (ENOMEM,
// ENOSPC of its tmpfs).
Status CopyIntoSealedFile(const std::string& path, int fd, uint64_t size, SealedFile& out) {
  out.fd.Reset(memfd_create("chash-snapshot", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!out.fd.valid()) {
    if (errno == ENOMEM || errno == EMFILE || errno == ENFILE) {
      return internal::OutOfMemory("a sealed copy of a snapshot", path);
    }
    return IoError("io", path, "memfd_create", errno);
  }
  if (ftruncate(out.fd.get(), static_cast<off_t>(size)) != 0) {
    if (errno == ENOMEM || errno == ENOSPC || errno == EFBIG) {
      return internal::OutOfMemory("a sealed copy of a snapshot", path);
    }
    return IoError("io", path, "ftruncate of the sealed copy", errno);
  }
  uint64_t done = 0;
  bool use_sendfile = true;
  std::unique_ptr<uint8_t[]> buffer;
  constexpr size_t kBufferBytes = size_t{1} << 20;
  while (done < size) {
    const auto chunk = static_cast<size_t>(std::min<uint64_t>(size - done, uint64_t{1} << 30));
    ssize_t got;
    if (use_sendfile) {
      off_t offset = static_cast<off_t>(done);
      if (lseek(out.fd.get(), offset, SEEK_SET) < 0) return IoError("io", path, "lseek", errno);
      got = sendfile(out.fd.get(), fd, &offset, chunk);
      if (got < 0 && (errno == EINVAL || errno == ENOSYS)) {
        use_sendfile = false;
        buffer.reset(new (std::nothrow) uint8_t[kBufferBytes]);
        if (!buffer) return internal::OutOfMemory("a sealed copy of a snapshot", path);
        continue;
      }
    } else {
      got = pread(fd, buffer.get(), std::min(chunk, kBufferBytes), static_cast<off_t>(done));
      if (got > 0) {
        ssize_t written = 0;
        while (written < got) {
          const ssize_t w = pwrite(out.fd.get(), buffer.get() + written,
                                   static_cast<size_t>(got - written),
                                   static_cast<off_t>(done + written));
          if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == ENOMEM || errno == ENOSPC) {
              return internal::OutOfMemory("a sealed copy of a snapshot", path);
            }
            return IoError("io", path, "write to the sealed copy", errno);
          }
          written += w;
        }
      }
    }
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOMEM || errno == ENOSPC) {
        return internal::OutOfMemory("a sealed copy of a snapshot", path);
      }
      return IoError("io", path, "read", errno);
    }
    if (got == 0) {
      return Bad("size", path + " shrank to " + std::to_string(done) +
                             " bytes while it was read");
    }
    done += static_cast<uint64_t>(got);
  }
  if (fcntl(out.fd.get(), F_ADD_SEALS, kRequiredSeals) != 0) {
    return IoError("io", path, "sealing the copy", errno);
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED | MAP_POPULATE, out.fd.get(), 0);
  if (map == MAP_FAILED) {
    if (errno == ENOMEM) return internal::OutOfMemory("mapping a sealed snapshot", path);
    return IoError("io", path, "mmap of the sealed copy", errno);
  }
  out.map.Reset(map, size);
  return Status();
}

// A refusal's message names the file it is about.
Status NamingThePath(const Status& status, const std::string& path) {
  if (status.ok() || status.message().find(path) != std::string::npos) return status;
  return Status(status.code(), status.message() + " (" + path + ")");
}
Result<std::shared_ptr<RingSnapshot>> NamingThePath(Result<std::shared_ptr<RingSnapshot>> loaded,
                                                    const std::string& path) {
  if (!loaded.ok()) return NamingThePath(loaded.status(), path);
  return loaded;
}

// An mmap failure: ENOMEM means the address space cannot hold the file
// (ulimit -v, a 32-bit process), which is running out of memory, not a bad
// file.
Status MapFailed(const std::string& path, uint64_t size, int error) {
  if (error == ENOMEM) {
    return Status(StatusCode::kOutOfMemory,
                  "out of memory: cannot map the file's " + std::to_string(size) + " bytes (" +
                      path + ")");
  }
  return IoError("io", path, "mmap", error);
}

// The pre-body checks of an opened file, then its body in the options'
// place and every check.
Result<std::shared_ptr<RingSnapshot>> LoadOpenedMutable(internal::OpenedSnapshot& file,
                                                        const SnapshotLoadOptions& options,
                                                        LoadedFile& out,
                                                        const internal::ReloadGate* gate) {
  const std::string& path = file.path;
  const uint64_t size = file.size;
  out.identity = file.identity;
  internal::Prechecked pre;
  Status prechecked = internal::Precheck(file.head, file.tail, size, options, gate, pre);
  if (!prechecked.ok()) return NamingThePath(prechecked, path);
  // The bytes to check, in the options' place.
  std::shared_ptr<const void> backing;
  const uint8_t* data = nullptr;
  switch (options.mode) {
    case SnapshotLoadMode::kSealed: {
      auto sealed = std::make_shared<SealedFile>();
      if (Status status = CopyIntoSealedFile(path, file.fd, size, *sealed); !status.ok()) {
        return status;
      }
      struct stat st {};
      if (fstat(sealed->fd.get(), &st) != 0) {
        return IoError("io", path, "fstat of the sealed copy", errno);
      }
      out.sealed = SealedCopy{sealed->fd.get(), st.st_dev, st.st_ino, size};
      out.data = static_cast<const uint8_t*>(sealed->map.data());
      out.size = size;
      data = static_cast<const uint8_t*>(sealed->map.data());
      backing = std::move(sealed);
      break;
    }
    case SnapshotLoadMode::kCopy: {
      auto copy = std::make_shared<PrivateCopy>();
      if (!copy->bytes.Allocate(size)) return internal::OutOfMemory("copying a snapshot", path);
      if (Status status = ReadAt(path, file.fd, copy->bytes.data(), size, 0); !status.ok()) {
        return status;
      }
      data = copy->bytes.data();
      out.data = data;
      out.size = size;
      backing = std::move(copy);
      break;
    }
    case SnapshotLoadMode::kMap: {
      // Made before the mapping, so that nothing can throw between mmap and
      // the owner that unmaps it.
      auto mapping = std::make_shared<internal::UniqueMapping>();
      void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED | MAP_POPULATE, file.fd, 0);
      if (map == MAP_FAILED) return MapFailed(path, size, errno);
      mapping->Reset(map, size);
      data = static_cast<const uint8_t*>(map);
      out.data = data;
      out.size = size;
      backing = std::move(mapping);
      break;
    }
  }
  if (options.mode != SnapshotLoadMode::kMap) {
    // A file rewritten while it was read is a torn copy: a refusal of it
    // would say nothing about the file, which the next look reads again.
    struct stat st {};
    if (fstat(file.fd, &st) == 0 && !(internal::IdentityOf(st) == out.identity)) {
      out.changed_while_read = true;
      return IoError("io", path, "the file changed while it was read; it is read again at the "
                                 "next look",
                     0);
    }
    // The copy is the ring now: the file's pages are only cache.
    (void)posix_fadvise(file.fd, 0, 0, POSIX_FADV_DONTNEED);
  }
  return NamingThePath(
      SnapshotLoader::Load(std::move(backing), data, size, options.mode, options, pre), path);
}

Result<std::shared_ptr<RingSnapshot>> LoadFileMutable(const std::string& path,
                                                      const SnapshotLoadOptions& options,
                                                      LoadedFile& out,
                                                      const internal::ReloadGate* gate) {
  internal::OpenedSnapshot file;
  Status opened = internal::OpenSnapshotPath(path, options, file);
  out.identity = file.identity;
  if (!opened.ok()) return opened;
  return LoadOpenedMutable(file, options, out, gate);
}

}  // namespace

namespace internal {

FileIdentity IdentityOf(const struct stat& st) noexcept {
  FileIdentity identity;
  identity.device = st.st_dev;
  identity.inode = st.st_ino;
  identity.size = st.st_size;
  identity.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  return identity;
}

FileIdentity IdentityOfPath(const std::string& path) noexcept {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return FileIdentity();
  return IdentityOf(st);
}

OpenedSnapshot::~OpenedSnapshot() {
  if (fd >= 0) close(fd);
}

Status OpenSnapshotPath(const std::string& path, const SnapshotLoadOptions& options,
                        OpenedSnapshot& out) {
  return OpenPath(path, options, true, out);
}

Status OpenSnapshotAt(int dir_fd, const std::string& name, const std::string& display,
                      const SnapshotLoadOptions& options, OpenedSnapshot& out, bool* absent) {
  out.path = display;
  if (absent != nullptr) *absent = false;
  out.fd = openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
  if (out.fd < 0) {
    const int error = errno;
    if (error == ENOENT && absent != nullptr) {
      *absent = true;
      return Status();
    }
    if (error == ELOOP) {
      return IoError("not_regular", display, "is a symbolic link, which is never followed here",
                     0);
    }
    return IoError("io", display, "open", error);
  }
  return FinishOpen(display, options, true, out);
}

namespace {

// Runs `load` (a load into a LoadedFile) under CatchOutOfMemory and keeps
// the snapshot it returns in `*loaded` too, when the caller asked for it.
template <typename Load>
Result<std::shared_ptr<const RingSnapshot>> LoadKeeping(const std::string& path,
                                                        LoadedFile* loaded, Load load) {
  return CatchOutOfMemory(
      "loading a snapshot", path, [&]() -> Result<std::shared_ptr<const RingSnapshot>> {
        LoadedFile local;
        LoadedFile& out = loaded != nullptr ? *loaded : local;
        Result<std::shared_ptr<RingSnapshot>> result = load(out);
        if (!result.ok()) return result.status();
        std::shared_ptr<const RingSnapshot> snapshot = std::move(result).value();
        out.snapshot = snapshot;
        return snapshot;
      });
}

}  // namespace

Result<std::shared_ptr<const RingSnapshot>> LoadOpened(OpenedSnapshot& file,
                                                       const SnapshotLoadOptions& options,
                                                       const ReloadGate* gate, LoadedFile* loaded) {
  return LoadKeeping(file.path, loaded, [&](LoadedFile& out) {
    return LoadOpenedMutable(file, options, out, gate);
  });
}

Result<std::shared_ptr<const RingSnapshot>> LoadSnapshotFile(const std::string& path,
                                                             const SnapshotLoadOptions& options,
                                                             LoadedFile* loaded,
                                                             const ReloadGate* gate) {
  return LoadKeeping(path, loaded, [&](LoadedFile& out) {
    return LoadFileMutable(path, options, out, gate);
  });
}

Result<std::shared_ptr<const RingSnapshot>> AdoptSealedCopy(pid_t pid, const SealedCopy& copy,
                                                            const OpenedSnapshot& bound,
                                                            const SnapshotLoadOptions& options,
                                                            const ReloadGate* gate,
                                                            LoadedFile& adopted) {
  return CatchOutOfMemory(
      "adopting a sealed snapshot", [&]() -> Result<std::shared_ptr<const RingSnapshot>> {
        const std::string path =
            "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(copy.fd);
        if (copy.size != bound.size || copy.size < kHeaderBytes + kTrailerBytes) {
          return IoError("io", path, "not a copy of " + bound.path + " (another size)", 0);
        }
        // What the descriptor names, before anything opens it: only a
        // regular file (a memory file is one) of the device and inode named
        // is opened, never a FIFO or a device another process holds.
        struct stat st {};
        if (stat(path.c_str(), &st) != 0) return IoError("io", path, "stat", errno);
        const auto is_the_copy = [&](const struct stat& s) {
          return S_ISREG(s.st_mode) && s.st_dev == copy.device && s.st_ino == copy.inode &&
                 static_cast<uint64_t>(s.st_size) == copy.size;
        };
        if (!is_the_copy(st)) {
          return IoError("io", path, "not the sealed copy named (another file at that descriptor)",
                         0);
        }
        auto sealed = std::make_shared<SealedFile>();
        // /proc/PID/fd/N is a magic link: O_NOFOLLOW would refuse it. What
        // it names was checked above and is checked again by fstat below.
        sealed->fd.Reset(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
        if (!sealed->fd.valid()) return IoError("io", path, "open", errno);
        if (fstat(sealed->fd.get(), &st) != 0) return IoError("io", path, "fstat", errno);
        if (!is_the_copy(st)) {
          return IoError("io", path, "not the sealed copy named (another file at that descriptor)",
                         0);
        }
        const int seals = fcntl(sealed->fd.get(), F_GET_SEALS);
        if (seals < 0 || (seals & kRequiredSeals) != kRequiredSeals) {
          return IoError("io", path, "not sealed against writes and resizes", 0);
        }
        void* map =
            mmap(nullptr, copy.size, PROT_READ, MAP_SHARED | MAP_POPULATE, sealed->fd.get(), 0);
        if (map == MAP_FAILED) return MapFailed(path, copy.size, errno);
        sealed->map.Reset(map, copy.size);
        const auto* data = static_cast<const uint8_t*>(map);
        // The copy stands for `bound` only if it holds bound's header and
        // trailer (its version, expiry, checksum and signature): then every
        // check below is the check of the ring bound's file claims to be.
        if (std::memcmp(data, bound.head, kHeaderBytes) != 0 ||
            std::memcmp(data + copy.size - kTrailerBytes, bound.tail, kTrailerBytes) != 0) {
          return IoError("io", path, "not a copy of " + bound.path + " (another header or trailer)",
                         0);
        }
        Prechecked pre;
        if (Status status = Precheck(data, data + copy.size - kTrailerBytes, copy.size, options,
                                     gate, pre);
            !status.ok()) {
          return NamingThePath(status, bound.path);
        }
        const SealedCopy mine{sealed->fd.get(), st.st_dev, st.st_ino, copy.size};
        Result<std::shared_ptr<RingSnapshot>> loaded =
            SnapshotLoader::Load(sealed, data, copy.size, SnapshotLoadMode::kSealed, options, pre);
        if (!loaded.ok()) return NamingThePath(loaded.status(), bound.path);
        std::shared_ptr<const RingSnapshot> snapshot = std::move(loaded).value();
        adopted.snapshot = snapshot;
        adopted.identity = bound.identity;
        adopted.sealed = mine;
        adopted.data = data;
        adopted.size = copy.size;
        return snapshot;
      });
}

}  // namespace internal

Result<std::shared_ptr<const RingSnapshot>> LoadSnapshot(const std::string& path,
                                                         const SnapshotLoadOptions& options) {
  return internal::LoadSnapshotFile(path, options, nullptr);
}

Result<Ring> SnapshotLoader::TakeRing(const std::string& path, const SnapshotLoadOptions& options,
                                      SnapshotInfo* info, std::vector<NamedSubset>* subsets) {
  return internal::CatchOutOfMemory("loading a snapshot", path, [&]() -> Result<Ring> {
    LoadedFile out;
    Result<std::shared_ptr<RingSnapshot>> loaded = LoadFileMutable(path, options, out, nullptr);
    if (!loaded.ok()) return loaded.status();
    RingSnapshot& snapshot = *loaded.value();
    // The copy first, then moves that cannot fail: on an error *info and
    // *subsets are as they were.
    if (info != nullptr) {
      SnapshotInfo copy = snapshot.info_;
      *info = std::move(copy);
    }
    if (subsets != nullptr) *subsets = std::move(snapshot.subsets_);
    return std::move(snapshot.ring_);  // its state keeps the backing alive
  });
}

Result<Ring> LoadSnapshotRing(const std::string& path, const SnapshotLoadOptions& options,
                              SnapshotInfo* info, std::vector<NamedSubset>* subsets) {
  return SnapshotLoader::TakeRing(path, options, info, subsets);
}

Result<SnapshotInfo> ReadSnapshotInfo(const std::string& path) {
  return internal::CatchOutOfMemory("reading a snapshot header", path, [&]() -> Result<SnapshotInfo> {
    // Reads the header, the trailer, the label and the subsets: never the
    // columns, never through a mapping.
    internal::OpenedSnapshot file;
    const SnapshotLoadOptions any;
    if (Status status = OpenPath(path, any, false, file); !status.ok()) return status;
    internal::Prechecked pre;
    if (Status status = internal::Precheck(file.head, file.tail, file.size, any, nullptr, pre);
        !status.ok() && FailedSnapshotCheck(status) != SnapshotCheck::kExpired) {
      return status;
    }
    internal::Header& h = pre.header;
    const uint64_t label_bytes = h.length[kLabel];
    std::string label(label_bytes, '\0');
    if (Status status = ReadAt(path, file.fd, reinterpret_cast<uint8_t*>(label.data()),
                               label_bytes, h.offset[kLabel]);
        !status.ok()) {
      return status;
    }
    h.info.label = std::move(label);
    // The subsets section holds names and masks of at most 8 KiB each.
    constexpr uint64_t kMaxSubsetBytes = uint64_t{64} << 20;
    if (h.length[kSubsets] <= kMaxSubsetBytes) {
      std::vector<uint8_t> section(h.length[kSubsets]);
      internal::Header local = h;  // the section at offset 0 of `section`
      if (ReadAt(path, file.fd, section.data(), section.size(), h.offset[kSubsets]).ok()) {
        local.offset[kSubsets] = 0;
        Result<std::vector<std::string>> names = internal::SubsetNamesOf(section.data(), local);
        if (names.ok()) h.info.subset_names = std::move(names).value();
      }
    }
    return std::move(h.info);
  });
}

}  // namespace chash
