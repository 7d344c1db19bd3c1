// Helpers of the SnapshotReloader tests (snapshot_faults_test,
// snapshot_state_test): the rings they publish, how a served ring is
// compared with the ring it should be, and a reloader's files.
// Header-only.
#ifndef CHASH_TESTS_RELOAD_UTIL_H_
#define CHASH_TESTS_RELOAD_UTIL_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include "chash/chash.h"
#include "cli_run.h"
#include "snapshot_util.h"
#include "test_util.h"

namespace chash::testing {

// A Pingora v2 ring of servers first .. first + nodes - 1 of NET, PORT
// (NumberedFleet), of weights 1 to 3.
inline Ring PingoraFleet(const std::string& net, const std::string& port, uint32_t nodes,
                         uint32_t first, uint32_t multiple) {
  return BuildNumbered({.flavor = Flavor::kPingoraV2, .point_multiple = multiple},
                       {net, port, [](uint32_t n) { return 1 + n % 3; }}, nodes, first);
}

// Random probe hashes: `count` of them, drawn by std::mt19937(seed).
struct Probes {
  int count = 4096;
  uint32_t seed = 7;
};

// Every probe answers on `ring` as on `expected`.
inline void ExpectAnswersOf(const Ring& expected, const Ring& ring, const std::string& when,
                            Probes probes = {}) {
  std::mt19937 rng(probes.seed);
  for (int i = 0; i < probes.count; ++i) {
    const uint32_t hash = static_cast<uint32_t>(rng());
    ASSERT_EQ(ring.FindNodeByHash(hash), expected.FindNodeByHash(hash))
        << when << ", hash " << hash;
  }
}

// `bytes` published at `path` as a control plane publishes: written beside
// it, then renamed over it.
inline void Publish(const std::string& bytes, const std::string& path) {
  const std::string temp = path + ".new";
  std::ofstream(temp, std::ios::binary) << bytes;
  ASSERT_EQ(std::rename(temp.c_str(), path.c_str()), 0);
}

// A fresh directory for a reloader's state.
inline std::string StateDir(const std::string& name) {
  const std::string dir = TempPath(name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// A reloader's files: its snapshot at TempPath(CASE.chash) and a fresh state
// directory TempPath(CASE_state), named `name` in it; both removed when the
// test ends.
struct ReloadFiles {
  explicit ReloadFiles(const std::string& test_case, const std::string& name = "")
      : dir(StateDir(test_case + "_state")), path(TempPath(test_case + ".chash")) {
    options.state_dir = dir;
    options.name = name;
  }
  ~ReloadFiles() {
    std::filesystem::remove_all(dir);
    std::remove(path.c_str());
  }
  Result<std::unique_ptr<SnapshotReloader>> Create() const {
    return SnapshotReloader::Create(path, options);
  }
  // The first file, `ring` as `version`, and a reloader of it.
  Result<std::unique_ptr<SnapshotReloader>> Start(const Ring& ring, uint64_t version) const {
    const Status written = WriteSnapshotFile(ring, Versioned(version), path);
    if (!written.ok()) return written;
    return Create();
  }
  const std::string dir;
  const std::string path;
  ReloadOptions options;
};

}  // namespace chash::testing

#endif  // CHASH_TESTS_RELOAD_UTIL_H_
