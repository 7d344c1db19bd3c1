#include "snapshot/host_state.h"

#include <dirent.h>
#include <fcntl.h>
#include <sodium/randombytes.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <thread>
#include <vector>

#include "identity/hex.h"
#include "identity/sha256.h"

namespace chash::internal {
namespace {

constexpr std::string_view kShareMagic = "chash-reload-share 2";
constexpr std::string_view kTemporaryInfix = ".tmp.";

Status IoFailure(const std::string& path, const std::string& what, int error) {
  return Status(StatusCode::kIoError, "state: " + path + ": " + what +
                                          (error != 0 ? std::string(": ") + std::strerror(error)
                                                      : std::string()));
}

std::string Hex(const uint8_t* bytes, size_t n) { return internal::HexOrThrow(bytes, n); }

// A whole decimal u64 (0 .. 2^64-1): no sign, no spaces, no leading '+'.
bool ParseU64(std::string_view text, uint64_t& out) noexcept {
  if (text.empty()) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

// Reads a record from `dir_fd`: a regular file of at most kMaxRecordBytes,
// opened without following a link or waiting on a FIFO. nullopt if absent,
// unreadable or of another kind.
std::optional<std::string> ReadRecord(int dir_fd, const std::string& name) {
  const UniqueFd file(openat(dir_fd, name.c_str(),
                             O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY));
  if (!file.valid()) return std::nullopt;
  struct stat st {};
  if (fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<uint64_t>(st.st_size) > kMaxRecordBytes) {
    return std::nullopt;
  }
  std::string text(kMaxRecordBytes + 1, '\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t got = read(file.get(), text.data() + done, text.size() - done);
    if (got < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  if (done > kMaxRecordBytes) return std::nullopt;  // grew while read
  text.resize(done);
  return text;
}

// A fresh temporary name for `kind` of `base`: nobody can have planted
// anything at it, and O_EXCL refuses it if somebody did.
std::string TemporaryName(const std::string& base, std::string_view kind) {
  std::array<uint8_t, 12> random{};
  randombytes_buf(random.data(), random.size());
  return base + "." + std::string(kind) + std::string(kTemporaryInfix) +
         Hex(random.data(), random.size());
}

// Writes BASE.kind whole and atomically through the lock's directory
// descriptor: `size` bytes at `data` into a temporary file created there
// (O_CREAT | O_EXCL | O_NOFOLLOW, a random name), renamed over the record;
// with `durable`, fsync of the file before the rename and of the directory
// after it. On a failure the temporary file is removed and the record is
// as it was.
Status ReplaceRecord(const HostLock& lock, const std::string& display, const std::string& base,
                     std::string_view kind, const uint8_t* data, uint64_t size, bool durable) {
  if (!lock.held()) return IoFailure(display, "not written: the lock is not held", 0);
  const int dir = lock.dir_fd();
  std::string temp;
  UniqueFd file;
  for (int attempt = 0; attempt < 4 && !file.valid(); ++attempt) {
    temp = TemporaryName(base, kind);
    file.Reset(
        openat(dir, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (!file.valid() && errno != EEXIST) return IoFailure(display, "create " + temp, errno);
  }
  if (!file.valid()) return IoFailure(display, "create a temporary file", EEXIST);
  Status status;
  for (uint64_t done = 0; done < size && status.ok();) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(size - done, uint64_t{1} << 30));
    const ssize_t wrote = write(file.get(), data + done, chunk);
    if (wrote < 0) {
      if (errno == EINTR) continue;
      status = IoFailure(display, "write", errno);
    } else {
      done += static_cast<uint64_t>(wrote);
    }
  }
  if (status.ok() && durable && fsync(file.get()) != 0) {
    status = IoFailure(display, "fsync", errno);
  }
  if (const int error = file.Close(); error != 0 && status.ok()) {
    status = IoFailure(display, "close", error);
  }
  const std::string final_name = base + "." + std::string(kind);
  if (status.ok() && renameat(dir, temp.c_str(), dir, final_name.c_str()) != 0) {
    status = IoFailure(display, "rename", errno);
  }
  if (!status.ok()) {
    (void)unlinkat(dir, temp.c_str(), 0);
    return status;
  }
  if (durable) (void)fsync(dir);
  return Status();
}

bool ValidNameBytes(std::string_view name) {
  if (name.empty() || name.size() > 128 || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
  });
}

// The directory path without trailing slashes (which would make open follow
// a final symbolic link despite O_NOFOLLOW).
std::string WithoutTrailingSlashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

}  // namespace

std::optional<ShareRecord> ParseShareRecord(std::string_view text) noexcept {
  try {
    if (text.size() > kMaxRecordBytes) return std::nullopt;
    ShareRecord record;
    constexpr std::array<std::string_view, 9> kKeys = {
        "path",     "policy",     "pid",       "fd",          "copy_device",
        "copy_inode", "copy_size", "config_version", "fingerprint"};
    std::array<bool, kKeys.size()> seen{};
    size_t at = 0;
    bool magic = false;
    while (at < text.size()) {
      const size_t end = text.find('\n', at);
      if (end == std::string_view::npos) return std::nullopt;  // every line ends
      const std::string_view line = text.substr(at, end - at);
      at = end + 1;
      if (!magic) {
        if (line != kShareMagic) return std::nullopt;
        magic = true;
        continue;
      }
      const size_t space = line.find(' ');
      if (space == std::string_view::npos) return std::nullopt;
      const std::string_view key = line.substr(0, space);
      const std::string_view value = line.substr(space + 1);
      const auto which = std::find(kKeys.begin(), kKeys.end(), key);
      if (which == kKeys.end()) return std::nullopt;
      const size_t index = static_cast<size_t>(which - kKeys.begin());
      if (seen[index]) return std::nullopt;
      seen[index] = true;
      uint64_t number = 0;
      const bool numeric = key != "path" && key != "policy" && key != "fingerprint";
      if (numeric && !ParseU64(value, number)) return std::nullopt;
      if (key == "path") {
        if (value.empty()) return std::nullopt;
        record.path = std::string(value);
      } else if (key == "policy") {
        if (!ParseHex(value, record.policy.data(), record.policy.size())) return std::nullopt;
      } else if (key == "fingerprint") {
        if (!ParseHex(value, record.fingerprint.bytes.data(), 32)) return std::nullopt;
      } else if (key == "pid") {
        if (number == 0 || number > static_cast<uint64_t>(INT32_MAX)) return std::nullopt;
        record.pid = static_cast<pid_t>(number);
      } else if (key == "fd") {
        if (number > static_cast<uint64_t>(INT32_MAX)) return std::nullopt;
        record.copy.fd = static_cast<int>(number);
      } else if (key == "copy_device") {
        record.copy.device = static_cast<dev_t>(number);
        if (static_cast<uint64_t>(record.copy.device) != number) return std::nullopt;
      } else if (key == "copy_inode") {
        record.copy.inode = static_cast<ino_t>(number);
        if (static_cast<uint64_t>(record.copy.inode) != number) return std::nullopt;
      } else if (key == "copy_size") {
        record.copy.size = number;
      } else {
        record.config_version = number;
      }
    }
    if (!magic || !std::all_of(seen.begin(), seen.end(), [](bool b) { return b; })) {
      return std::nullopt;
    }
    return record;
  } catch (...) {
    return std::nullopt;  // out of memory: no record
  }
}

std::string FormatShareRecord(const ShareRecord& record) {
  std::string text(kShareMagic);
  text += "\npath " + record.path + "\n";
  text += "policy " + Hex(record.policy.data(), 32) + "\n";
  text += "pid " + std::to_string(record.pid) + "\n";
  text += "fd " + std::to_string(record.copy.fd) + "\n";
  text += "copy_device " + std::to_string(static_cast<uint64_t>(record.copy.device)) + "\n";
  text += "copy_inode " + std::to_string(static_cast<uint64_t>(record.copy.inode)) + "\n";
  text += "copy_size " + std::to_string(record.copy.size) + "\n";
  text += "config_version " + std::to_string(record.config_version) + "\n";
  text += "fingerprint " + Hex(record.fingerprint.bytes.data(), 32) + "\n";
  return text;
}

bool ValidReloaderName(std::string_view name) noexcept { return ValidNameBytes(name); }

std::array<uint8_t, 32> PolicyDigest(const SnapshotLoadOptions& options) noexcept {
  std::vector<std::array<uint8_t, 32>> keys;
  try {
    for (const PublicKey& key : options.trusted_keys) keys.push_back(key.bytes);
  } catch (...) {
    return {};  // all zero: matches no record a process wrote
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  Sha256Hasher hasher;
  static constexpr std::string_view kContext = "chash-reload-share-policy-1";
  hasher.Update(kContext.data(), kContext.size());
  hasher.UpdateU32(static_cast<uint32_t>(keys.size()));
  for (const auto& key : keys) hasher.Update(key.data(), key.size());
  const uint8_t flags = static_cast<uint8_t>((options.verify_checksum ? 1 : 0) |
                                             (options.verify_points_digest ? 2 : 0));
  hasher.Update(&flags, 1);
  return hasher.Finish();
}

Result<HostState> HostState::Open(const std::string& dir, const std::string& name,
                                  const std::string& watched_path, bool may_be_absent) {
  if (!name.empty() && !ValidReloaderName(name)) {
    return Status(StatusCode::kBadArgument,
                  "reloader name '" + name + "': 1..128 characters of A-Z a-z 0-9 . _ -");
  }
  HostState state;
  state.dir_ = WithoutTrailingSlashes(dir);
  if (name.empty()) {
    state.base_ = DefaultReloaderName(watched_path);
  } else {
    const Fingerprint digest = Sha256(watched_path);
    state.base_ = name + ".p" + Hex(digest.bytes.data(), 4);
  }
  Result<DirHandle> opened = state.OpenDir();
  if (!opened.ok()) return opened.status();
  if (opened.value().fd() < 0 && !may_be_absent) {
    return IoFailure(state.dir_, "does not exist (the state directory must be made first)",
                     ENOENT);
  }
  return state;
}

std::string HostState::PathOf(std::string_view kind) const {
  return dir_ + "/" + base_ + "." + std::string(kind);
}

Result<DirHandle> HostState::OpenDir() const {
  DirHandle handle;
  handle.fd_.Reset(open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!handle.fd_.valid()) {
    const int error = errno;
    if (error == ENOENT) return handle;
    struct stat st {};
    if (lstat(dir_.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      return IoFailure(dir_, "is a symbolic link: give the state directory's real path", 0);
    }
    return IoFailure(dir_, error == ENOTDIR ? "not a directory" : "open", error);
  }
  struct stat st {};
  if (fstat(handle.fd_.get(), &st) != 0) return IoFailure(dir_, "fstat", errno);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return IoFailure(dir_, std::string("is writable by its group or others (mode ") + mode +
                               "): anyone there could plant records; chmod go-w it",
                     0);
  }
  handle.owner_ = st.st_uid;
  handle.writer_ = st.st_uid == geteuid();
  return handle;
}

HostLock HostState::Lock(std::chrono::milliseconds wait, std::string* why) const {
  HostLock lock;
  const auto say = [&](const std::string& reason) {
    if (why != nullptr) *why = reason;
  };
  try {
    Result<DirHandle> dir = OpenDir();
    if (!dir.ok()) {
      say(dir.status().message());
      return lock;
    }
    if (dir.value().fd() < 0) {
      say("state: " + dir_ + " does not exist");
      return lock;
    }
    if (!dir.value().writer()) {
      say("state: " + dir_ + " belongs to uid " + std::to_string(dir.value().owner()) +
          "; this process (uid " + std::to_string(geteuid()) + ") does not write in it");
      return lock;
    }
    const std::string name = base_ + ".lock";
    // Read-only: flock needs no write access.
    UniqueFd file(openat(dir.value().fd(), name.c_str(),
                         O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
                         0644));
    if (!file.valid()) {
      say("state: " + PathOf("lock") + ": open: " + std::strerror(errno));
      return lock;
    }
    struct stat st {};
    if (fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      say("state: " + PathOf("lock") + " is not a regular file");
      return lock;
    }
    const auto deadline = std::chrono::steady_clock::now() + wait;
    for (;;) {
      if (flock(file.get(), LOCK_EX | LOCK_NB) == 0) {
        lock.fd_ = std::move(file);
        lock.dir_ = std::move(dir).value();
        return lock;
      }
      if (errno != EWOULDBLOCK && errno != EINTR) break;
      if (std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    say("state: " + PathOf("lock") + " was held by another process for " +
        std::to_string(wait.count() / 1000) + " s");
  } catch (...) {
    // out of memory naming why: not held all the same
  }
  return lock;
}

Status HostState::OpenGood(const SnapshotLoadOptions& options, OpenedSnapshot& out,
                           bool& absent) const {
  absent = false;
  Result<DirHandle> dir = OpenDir();
  if (!dir.ok()) return dir.status();
  if (dir.value().fd() < 0) {
    absent = true;
    return Status();
  }
  return OpenSnapshotAt(dir.value().fd(), base_ + ".good", GoodPath(), options, out, &absent);
}

Status HostState::WriteGood(const HostLock& lock, const uint8_t* data, uint64_t size) const {
  return ReplaceRecord(lock, GoodPath(), base_, "good", data, size, true);
}

std::optional<ShareRecord> HostState::ReadShare() const noexcept {
  try {
    Result<DirHandle> dir = OpenDir();
    if (!dir.ok() || dir.value().fd() < 0) return std::nullopt;
    const std::optional<std::string> text = ReadRecord(dir.value().fd(), base_ + ".share");
    if (!text) return std::nullopt;
    return ParseShareRecord(*text);
  } catch (...) {
    return std::nullopt;
  }
}

Status HostState::WriteShare(const HostLock& lock, const ShareRecord& record) const {
  if (record.path.find('\n') != std::string::npos) {
    return IoFailure(PathOf("share"), "not written: the watched path holds a newline", 0);
  }
  const std::string text = FormatShareRecord(record);
  return ReplaceRecord(lock, PathOf("share"), base_, "share",
                       reinterpret_cast<const uint8_t*>(text.data()), text.size(), false);
}

void HostState::RemoveLeftovers(const HostLock& lock) const noexcept {
  if (!lock.held()) return;
  const int dir_copy = dup(lock.dir_fd());
  if (dir_copy < 0) return;
  DIR* listing = fdopendir(dir_copy);
  if (listing == nullptr) {
    close(dir_copy);
    return;
  }
  try {
    const std::string prefix = base_ + ".";
    std::vector<std::string> leftovers;
    while (const dirent* entry = readdir(listing)) {
      const std::string_view name = entry->d_name;
      if (name.substr(0, prefix.size()) == prefix &&
          name.find(kTemporaryInfix, prefix.size()) != std::string_view::npos) {
        leftovers.emplace_back(name);
      }
    }
    for (const std::string& name : leftovers) {
      struct stat st {};
      if (fstatat(lock.dir_fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))) {
        (void)unlinkat(lock.dir_fd(), name.c_str(), 0);
      }
    }
  } catch (...) {
    // out of memory: the leftovers wait for the next writer
  }
  closedir(listing);
}

std::string DefaultReloaderName(const std::string& path) {
  const Fingerprint digest = Sha256(path);
  return "snapshot-" + Hex(digest.bytes.data(), 8);
}

}  // namespace chash::internal
