#include "test_util.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace chash::testing {

std::vector<std::string> ReadLines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
    lines.push_back(text.substr(start, nl - start));
  }
  return lines;
}

void ForEachTarget(const std::function<void(const std::string& target)>& body) {
  const std::vector<std::string> targets = SupportedTargetNames();
  ASSERT_FALSE(targets.empty());
  for (const std::string& target : targets) {
    ASSERT_TRUE(ForceTarget(target).ok()) << target;
    ASSERT_EQ(ActiveTargetName(), target) << "forced target did not run";
    SCOPED_TRACE("target " + target);
    body(target);
  }
  ASSERT_TRUE(ForceTarget("").ok());
}

double TestScale() {
  const char* text = std::getenv("CHASH_TEST_SCALE");
  if (text == nullptr || *text == '\0') return 1.0;
  const double scale = std::strtod(text, nullptr);
  return std::clamp(scale > 0 ? scale : 1.0, 0.01, 100.0);
}

size_t Scaled(size_t count, size_t minimum) {
  return std::max(minimum, static_cast<size_t>(static_cast<double>(count) * TestScale() + 0.5));
}

std::vector<ServerEntry> LoadServers(const std::string& relative) {
  Result<std::vector<ServerEntry>> servers = ReadServersFile(DataPath(relative));
  EXPECT_TRUE(servers.ok()) << servers.status().ToString();
  return servers.ok() ? servers.value() : std::vector<ServerEntry>{};
}

Ring MustBuild(const std::vector<ServerEntry>& servers, const RingOptions& options) {
  Result<Ring> ring = BuildRingFromServers(servers, options, "test");
  EXPECT_TRUE(ring.ok()) << ring.status().ToString();
  if (!ring.ok()) return Ring();
  return std::move(ring).value();
}

Ring BuildNumbered(const RingOptions& options, const NumberedFleet& fleet, uint32_t count,
                   uint32_t first) {
  RingBuilder builder(options);
  for (uint32_t n = first; n < first + count; ++n) {
    const std::string address =
        fleet.net + std::to_string(n / 250) + "." + std::to_string(n % 250 + 1) + fleet.port;
    const Status added = builder.Add(address, fleet.weight(n));
    EXPECT_TRUE(added.ok()) << address << ": " << added.ToString();
  }
  Result<Ring> ring = std::move(builder).Build();
  EXPECT_TRUE(ring.ok()) << ring.status().ToString();
  return ring.ok() ? std::move(ring).value() : Ring();
}

std::vector<uint32_t> TieRanks(uint32_t count, std::mt19937* shuffle) {
  std::vector<uint32_t> rank(count);
  for (uint32_t i = 0; i < count; ++i) rank[i] = i;
  if (shuffle != nullptr) std::shuffle(rank.begin(), rank.end(), *shuffle);
  return rank;
}

int StatusOfChild(const std::function<int()>& body) {
  const pid_t child = fork();
  EXPECT_GE(child, 0) << "fork failed";
  if (child < 0) return -1;
  if (child == 0) _exit(body());
  int wstatus = 0;
  const pid_t waited = waitpid(child, &wstatus, 0);
  EXPECT_EQ(waited, child) << "waitpid failed";
  return waited == child ? wstatus : -1;
}

bool MountSmallTmpfsInChild(const std::string& dir, const std::string& size) {
  const std::string uid = std::to_string(getuid()), gid = std::to_string(getgid());
  const auto put = [](const char* path, const std::string& text) {
    const int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    close(fd);
    return ok;
  };
  return unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0 && put("/proc/self/setgroups", "deny") &&
         put("/proc/self/uid_map", "0 " + uid + " 1") &&
         put("/proc/self/gid_map", "0 " + gid + " 1") &&
         mount("none", dir.c_str(), "tmpfs", 0, ("mode=0755,size=" + size).c_str()) == 0;
}

}  // namespace chash::testing
