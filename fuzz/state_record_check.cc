#include "state_record_check.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string_view>

#include "chash/chash.h"
#include "chash/snapshot.h"
#include "fuzz_support.h"
#include "snapshot/host_state.h"

namespace chash::fuzz {
namespace {

// One state directory and watched file a process, reused by every input.
struct Scratch {
  Scratch() {
    root = std::filesystem::temp_directory_path() /
           ("chash-fuzz-state-" + std::to_string(getpid()));
    std::filesystem::create_directories(root);
    path = (root / "ring.chash").string();
    std::ofstream(path, std::ios::binary) << StateSeedSnapshot(5);
  }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(root, ignored);
  }
  std::filesystem::path root;
  std::string path;
};

void Write(const std::filesystem::path& file, std::string_view bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string CheckRecord(std::string_view text) {
  const std::optional<internal::ShareRecord> record = internal::ParseShareRecord(text);
  if (!record) return "refused";
  const std::string again = internal::FormatShareRecord(*record);
  const std::optional<internal::ShareRecord> back = internal::ParseShareRecord(again);
  const std::string description = "share record of " + std::to_string(text.size()) + " bytes";
  if (!back || back->path != record->path || back->policy != record->policy ||
      back->pid != record->pid || back->copy.fd != record->copy.fd ||
      back->copy.device != record->copy.device || back->copy.inode != record->copy.inode ||
      back->copy.size != record->copy.size || back->config_version != record->config_version ||
      !(back->fingerprint == record->fingerprint)) {
    Fail("a parsed record does not survive formatting", description);
  }
  return "parsed";
}

std::string CheckReloader(std::string_view share, std::string_view good) {
  static const Scratch scratch;
  const std::filesystem::path dir = scratch.root / "state";
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  std::filesystem::create_directory(dir);
  ::chmod(dir.c_str(), 0700);
  ReloadOptions options;
  options.state_dir = dir.string();
  options.name = "fuzz";
  const std::string base = internal::HostState::Open(options.state_dir, options.name,
                                                     scratch.path, false)
                               .value()
                               .base();
  Write(dir / (base + ".share"), share);
  Write(dir / (base + ".good"), good);
  const std::string good_copy = (scratch.root / "good.chash").string();
  Write(good_copy, good);
  const std::string description = "state of " + std::to_string(share.size()) + " + " +
                                  std::to_string(good.size()) + " bytes";
  Result<std::unique_ptr<SnapshotReloader>> reloader =
      SnapshotReloader::Create(scratch.path, options);
  if (!reloader.ok()) Fail("a valid watched file did not start: " + reloader.status().ToString(),
                           description);
  const uint64_t version = reloader.value()->current()->info().config_version;
  std::string served = "served path";
  if (version != 5) {
    if (!LoadSnapshot(good_copy).ok()) {
      Fail("served a ring that is neither the watched file's nor a good last good file",
           description);
    }
    served = "served good";
  }
  (void)reloader.value()->Check();
  (void)reloader.value()->AdoptShared();
  return served;
}

}  // namespace

std::string StateSeedSnapshot(uint64_t config_version) {
  RingBuilder builder({.flavor = Flavor::kPingoraV2, .point_multiple = 4});
  for (int i = 0; i < 6; ++i) {
    (void)builder.Add("10.8.0." + std::to_string(i + 1) + ":80", 1 + i % 2);
  }
  SnapshotWriteOptions write;
  write.config_version = config_version;
  write.created_unix_seconds = 0;
  return SerializeSnapshot(std::move(builder).Build().value(), write).value();
}

std::string StateSeedShareRecord() {
  internal::ShareRecord record;
  record.path = "/etc/nginx/ring.chash";
  record.pid = 4242;
  record.copy = internal::SealedCopy{9, 12, 345, 4096};
  record.config_version = 5;
  return internal::FormatShareRecord(record);
}

std::string RunStateRecordCheck(const uint8_t* data, size_t size) {
  if (size == 0) return "refused";
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) return CheckRecord(rest);
  if (rest.size() < 2) return "refused";
  const size_t n = static_cast<uint8_t>(rest[0]) | size_t{static_cast<uint8_t>(rest[1])} << 8;
  const std::string_view body = rest.substr(2);
  const std::string_view share = body.substr(0, std::min(n, body.size()));
  const std::string_view good = body.substr(share.size());
  return CheckReloader(share, good);
}

}  // namespace chash::fuzz
