// Helpers shared by the test binaries.
#ifndef CHASH_TESTS_TEST_UTIL_H_
#define CHASH_TESTS_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "chash/chash.h"
#include "chash/chash_c.h"
#include "chash/operators.h"
#include "dispatch_control.h"

namespace chash::testing {

inline std::string DataPath(const std::string& relative) {
  return std::string(CHASH_TEST_DATA_DIR) + "/" + relative;
}

// The first value no flavor has (the flavors are numbered from 0 with no
// gap, chash_c.h): what the tests of an unknown flavor pass, so that a new
// flavor does not turn them into tests of a known one.
inline uint32_t FirstUnknownFlavor() {
  uint32_t flavor = 0;
  while (chash_flavor_name(flavor) != nullptr) ++flavor;
  return flavor;
}

// The file's lines without '\n' (a last line without '\n' included).
std::vector<std::string> ReadLines(const std::string& path);
// The '\n'-terminated lines of `text`, without '\n' (an unterminated last
// line is left out).
std::vector<std::string> SplitLines(const std::string& text);

// Runs `body` once on every SIMD target this machine supports, each forced
// in turn (ForceTarget), and restores the default afterwards. Failures are
// reported with the target's name.
void ForEachTarget(const std::function<void(const std::string& target)>& body);

// Multiplier for the amount of random work in a test (rings, keys): the
// CHASH_TEST_SCALE environment variable, default 1, clamped to [0.01, 100].
// Slow environments (qemu, sanitizers) lower it; no case is skipped, only
// fewer random instances are drawn.
double TestScale();
// max(minimum, round(count * TestScale())).
size_t Scaled(size_t count, size_t minimum = 1);

// The servers file at DataPath(relative); fails the test (and returns no
// server) if it cannot be read or parsed.
std::vector<ServerEntry> LoadServers(const std::string& relative);

// Builds a ring from "ADDR WEIGHT" lines; fails the test on error.
Ring MustBuild(const std::vector<ServerEntry>& servers, const RingOptions& options);

// A fleet of numbered servers: server n is "NET(n / 250).(n % 250 + 1)PORT"
// ({"10.4.", ":8080"} names 10.4.0.1:8080, 10.4.0.2:8080, ...), of weight
// weight(n).
struct NumberedFleet {
  std::string net;
  std::string port;
  std::function<uint32_t(uint32_t n)> weight;
};

// The ring of servers first .. first + count - 1 of `fleet`; fails the test
// (and returns an empty ring) on an error.
Ring BuildNumbered(const RingOptions& options, const NumberedFleet& fleet, uint32_t count,
                   uint32_t first = 0);

// The tie ranks 0 .. count - 1 of a raw ring's nodes, shuffled with
// `shuffle` when one is given.
std::vector<uint32_t> TieRanks(uint32_t count, std::mt19937* shuffle = nullptr);

// Runs `body` in a forked child that exits with what it returns; the
// child's wait status (-1, a test failure, if fork or waitpid failed).
int StatusOfChild(const std::function<int()>& body);

// In a forked child only: enters a new user and mount namespace (this user
// mapped to root in it) and mounts a tmpfs of `size` ("256k") on `dir`, a
// file system that fills up. False if the kernel or the sandbox refuses
// (the caller reports the case as skipped).
bool MountSmallTmpfsInChild(const std::string& dir, const std::string& size);

}  // namespace chash::testing

#endif  // CHASH_TESTS_TEST_UTIL_H_
