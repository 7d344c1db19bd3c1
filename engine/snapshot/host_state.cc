#include "snapshot/host_state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "identity/hex.h"
#include "identity/sha256.h"
#include "read_file.h"

namespace chash::internal {
namespace {

constexpr std::string_view kStateMagic = "chash-reload-state 1";
constexpr std::string_view kShareMagic = "chash-reload-share 1";

Status IoFailure(const std::string& path, const std::string& what, int error) {
  return Status(StatusCode::kIoError, "state: " + path + ": " + what +
                                          (error != 0 ? std::string(": ") + std::strerror(error)
                                                      : std::string()));
}

bool ValidNameBytes(std::string_view name) {
  if (name.empty() || name.size() > 128 || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
  });
}

std::string Hex(const uint8_t* bytes, size_t n) { return internal::HexOrThrow(bytes, n); }

// "key value" lines after a magic line; false if the magic differs.
bool ParseRecord(const std::string& text, std::string_view magic,
                 std::map<std::string, std::string>& fields) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != magic) return false;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    if (space == std::string::npos) return false;
    fields[line.substr(0, space)] = line.substr(space + 1);
  }
  return true;
}

bool ParseU64(const std::map<std::string, std::string>& fields, const std::string& key,
              uint64_t& out) {
  const auto it = fields.find(key);
  if (it == fields.end() || it->second.empty()) return false;
  uint64_t value = 0;
  for (const char c : it->second) {
    if (c < '0' || c > '9') return false;
    if (value > (UINT64_MAX - 9) / 10) return false;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  out = value;
  return true;
}

bool ParseI64(const std::map<std::string, std::string>& fields, const std::string& key,
              int64_t& out) {
  const auto it = fields.find(key);
  if (it == fields.end()) return false;
  const std::string& text = it->second;
  const bool negative = !text.empty() && text[0] == '-';
  std::map<std::string, std::string> digits{{key, negative ? text.substr(1) : text}};
  uint64_t magnitude = 0;
  if (!ParseU64(digits, key, magnitude) || magnitude > uint64_t{INT64_MAX}) return false;
  out = negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
  return true;
}

bool ParseIdentity(const std::map<std::string, std::string>& fields, const std::string& prefix,
                   FileIdentity& out) {
  uint64_t device = 0, inode = 0;
  int64_t size = 0, mtime = 0;
  if (!ParseU64(fields, prefix + "device", device) || !ParseU64(fields, prefix + "inode", inode) ||
      !ParseI64(fields, prefix + "size", size) || !ParseI64(fields, prefix + "mtime_ns", mtime)) {
    return false;
  }
  out.device = static_cast<dev_t>(device);
  out.inode = static_cast<ino_t>(inode);
  out.size = size;
  out.mtime_ns = mtime;
  return true;
}

void PutIdentity(std::string& out, const std::string& prefix, const FileIdentity& id) {
  out += prefix + "device " + std::to_string(static_cast<uint64_t>(id.device)) + "\n";
  out += prefix + "inode " + std::to_string(static_cast<uint64_t>(id.inode)) + "\n";
  out += prefix + "size " + std::to_string(id.size) + "\n";
  out += prefix + "mtime_ns " + std::to_string(id.mtime_ns) + "\n";
}

// Writes `path` whole and atomically: `write` fills a temporary file beside
// it (unique to this process and thread), which is renamed over it; with
// `durable`, fsync of the file before the rename and of the directory
// after it. On a failure the temporary file is removed and `path` is as it
// was.
Status ReplaceFile(const std::string& dir, const std::string& path, bool durable,
                   const std::function<Status(int fd, const std::string& temp)>& write) {
  const std::string temp = path + ".tmp." + std::to_string(getpid()) + "." +
                           std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoFailure(temp, "open", errno);
  Status status = write(fd, temp);
  if (status.ok() && durable && fsync(fd) != 0) status = IoFailure(temp, "fsync", errno);
  if (close(fd) != 0 && status.ok()) status = IoFailure(temp, "close", errno);
  if (status.ok() && rename(temp.c_str(), path.c_str()) != 0) {
    status = IoFailure(path, "rename", errno);
  }
  if (!status.ok()) {
    unlink(temp.c_str());
    return status;
  }
  if (durable) {
    const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
      (void)fsync(dir_fd);
      close(dir_fd);
    }
  }
  return Status();
}

Status ReplaceFileWithText(const std::string& dir, const std::string& path,
                           const std::string& text, bool durable) {
  return ReplaceFile(dir, path, durable, [&](int fd, const std::string& temp) {
    for (size_t done = 0; done < text.size();) {
      const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
      if (w < 0) {
        if (errno == EINTR) continue;
        return IoFailure(temp, "write", errno);
      }
      done += static_cast<size_t>(w);
    }
    return Status();
  });
}

}  // namespace

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

HostLock& HostLock::operator=(HostLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

HostLock::~HostLock() {
  if (fd_ >= 0) close(fd_);  // releases the flock
}

Result<HostState> HostState::Open(const std::string& dir, const std::string& name) {
  if (!ValidReloaderName(name)) {
    return Status(StatusCode::kBadArgument,
                  "reloader name '" + name + "': 1..128 characters of A-Z a-z 0-9 . _ -");
  }
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return IoFailure(dir, "stat", errno);
  if (!S_ISDIR(st.st_mode)) return IoFailure(dir, "not a directory", 0);
  if (access(dir.c_str(), W_OK | X_OK) != 0) return IoFailure(dir, "not writable", errno);
  HostState state;
  state.dir_ = dir;
  state.name_ = name;
  return state;
}

std::string HostState::PathOf(std::string_view suffix) const {
  return dir_ + "/" + name_ + "." + std::string(suffix);
}

HostLock HostState::Lock(std::chrono::milliseconds wait) const {
  HostLock lock;
  const std::string path = PathOf("lock");
  // Read-only: flock needs no write access, so a lock file another user
  // made (nginx's master as root, its workers as www-data) still locks.
  const int fd = open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return lock;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
      lock.fd_ = fd;
      return lock;
    }
    if (errno != EWOULDBLOCK && errno != EINTR) break;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  close(fd);
  return lock;
}

Result<PersistedState> HostState::ReadState() const {
  const std::string path = PathOf("state");
  PersistedState state;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return state;
    return IoFailure(path, "stat", errno);
  }
  Result<std::string> text = ReadFileBytes(path);
  if (!text.ok()) return text.status();
  std::map<std::string, std::string> fields;
  uint64_t version = 0;
  if (!ParseRecord(text.value(), kStateMagic, fields) ||
      !ParseU64(fields, "highest_version", version) || fields.count("fingerprint") == 0 ||
      !internal::ParseHex(fields["fingerprint"], state.fingerprint.bytes.data(), 32)) {
    return IoFailure(path, "damaged (not a chash reload state): remove it to start afresh, "
                           "which also forgets the highest version served",
                     0);
  }
  state.present = true;
  state.highest_version = version;
  return state;
}

Status HostState::WriteState(const PersistedState& state) const {
  std::string text(kStateMagic);
  text += "\nhighest_version " + std::to_string(state.highest_version) + "\n";
  text += "fingerprint " + Hex(state.fingerprint.bytes.data(), 32) + "\n";
  return ReplaceFileWithText(dir_, PathOf("state"), text, true);
}

Status HostState::WriteGood(int sealed_fd, uint64_t size) const {
  return ReplaceFile(dir_, GoodPath(), true, [&](int fd, const std::string& temp) {
    off_t offset = 0;
    while (static_cast<uint64_t>(offset) < size) {
      const ssize_t sent = sendfile(fd, sealed_fd, &offset, size - static_cast<uint64_t>(offset));
      if (sent < 0) {
        if (errno == EINTR) continue;
        return IoFailure(temp, "write", errno);
      }
      if (sent == 0) return IoFailure(temp, "write: the sealed copy ended early", 0);
    }
    return Status();
  });
}

ShareRecord HostState::ReadShare() const noexcept {
  ShareRecord record;
  try {
    Result<std::string> text = ReadFileBytes(PathOf("share"));
    if (!text.ok()) return record;
    std::map<std::string, std::string> fields;
    if (!ParseRecord(text.value(), kShareMagic, fields)) return record;
    if (fields.count("policy") == 0 || !internal::ParseHex(fields["policy"], record.policy.data(), 32)) {
      return record;
    }
    uint64_t pid = 0, fd = 0, device = 0, inode = 0, size = 0, version = 0;
    if (ParseU64(fields, "pid", pid) && ParseU64(fields, "fd", fd) &&
        ParseU64(fields, "copy_device", device) && ParseU64(fields, "copy_inode", inode) &&
        ParseU64(fields, "copy_size", size) && ParseU64(fields, "config_version", version) &&
        ParseIdentity(fields, "source_", record.source) && fields.count("fingerprint") != 0 &&
        internal::ParseHex(fields["fingerprint"], record.fingerprint.bytes.data(), 32) && pid > 0 &&
        fd <= INT32_MAX) {
      record.has_copy = true;
      record.pid = static_cast<pid_t>(pid);
      record.copy = SealedCopy{static_cast<int>(fd), static_cast<dev_t>(device),
                               static_cast<ino_t>(inode), size};
      record.config_version = version;
    }
    uint64_t check = 0;
    if (ParseIdentity(fields, "refused_", record.refused) &&
        ParseU64(fields, "refused_check", check) && check < kSnapshotCheckCount) {
      record.has_refusal = true;
      record.check = static_cast<SnapshotCheck>(check);
      record.message = fields["refused_message"];
    }
  } catch (...) {
    return ShareRecord();
  }
  return record;
}

Status HostState::WriteShare(const ShareRecord& record) const {
  std::string text(kShareMagic);
  text += "\npolicy " + Hex(record.policy.data(), 32) + "\n";
  if (record.has_copy) {
    text += "pid " + std::to_string(record.pid) + "\n";
    text += "fd " + std::to_string(record.copy.fd) + "\n";
    text += "copy_device " + std::to_string(static_cast<uint64_t>(record.copy.device)) + "\n";
    text += "copy_inode " + std::to_string(static_cast<uint64_t>(record.copy.inode)) + "\n";
    text += "copy_size " + std::to_string(record.copy.size) + "\n";
    PutIdentity(text, "source_", record.source);
    text += "config_version " + std::to_string(record.config_version) + "\n";
    text += "fingerprint " + Hex(record.fingerprint.bytes.data(), 32) + "\n";
  }
  if (record.has_refusal) {
    PutIdentity(text, "refused_", record.refused);
    text += "refused_check " + std::to_string(static_cast<unsigned>(record.check)) + "\n";
    std::string message = record.message;
    std::replace(message.begin(), message.end(), '\n', ' ');
    text += "refused_message " + message + "\n";
  }
  return ReplaceFileWithText(dir_, PathOf("share"), text, false);
}

std::string DefaultReloaderName(const std::string& path) {
  const Fingerprint digest = Sha256(path);
  return "snapshot-" + Hex(digest.bytes.data(), 8);
}

}  // namespace chash::internal
