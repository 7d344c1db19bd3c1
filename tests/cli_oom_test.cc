// The `chash` tool under a memory limit (ulimit -v) that cannot hold the
// ring: one line on stderr naming what it was building, exit status 2; no
// signal, no std::terminate.
#include <dirent.h>

#include <cstdio>
#include <string>

#include "cli_run.h"
#include "test_util.h"

namespace chash {
namespace {

bool LimitsApply() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return false;  // sanitizers reserve terabytes of shadow address space
#else
  // Under qemu the limit would apply to the emulator's own reservations.
  return std::string(CHASH_CLI_PATH).find("qemu") == std::string::npos;
#endif
}

testing::CliRun RunUnderLimit(const std::string& args, long kib) {
  const std::string out = testing::TempPath("oom_stdout"), err = testing::TempPath("oom_stderr");
  const std::string command = "ulimit -v " + std::to_string(kib) + "; exec " +
                              std::string(CHASH_CLI_PATH) + " " + args + " </dev/null >" + out +
                              " 2>" + err;
  const std::string shell = "sh -c '" + command + "'";
  testing::CliRun run;
  const int raw = std::system(shell.c_str());
  run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  run.out = testing::ReadAll(out);
  run.err = testing::ReadAll(err);
  return run;
}

// A servers file of `count` servers NET(i / 256).(i % 256)SUFFIX.
std::string ServersText(const std::string& net, int count, const std::string& suffix) {
  std::string servers;
  for (int i = 0; i < count; ++i) {
    servers += net + std::to_string(i / 256) + "." + std::to_string(i % 256) + suffix + "\n";
  }
  return servers;
}

// 2,048 servers of weight 625: 204,800,000 points of pingora-v1, which need
// about 2 GB to build.
std::string BigFleet() { return ServersText("10.0.", 2048, ":443 625"); }

// The run failed as out of memory: exit status 2, no signal, one line on
// stderr starting with `prefix`, nothing on stdout.
void ExpectOneLineFailure(const testing::CliRun& run, const std::string& prefix) {
  EXPECT_EQ(run.status, 2) << "exit status 2, no signal: " << run.err;
  ASSERT_FALSE(run.err.empty());
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << "one line: " << run.err;
  EXPECT_EQ(run.err.rfind(prefix, 0), 0u) << run.err;
  EXPECT_NE(run.err.find("out of memory"), std::string::npos) << run.err;
  EXPECT_TRUE(run.out.empty()) << run.out;
}

TEST(CliOomTest, StatsOverTheLimitSaysWhatItWasBuilding) {
  if (!LimitsApply()) GTEST_SKIP() << "no address-space limit under sanitizers or qemu";
  const std::string path = testing::WriteTemp("oom_servers.txt", BigFleet());
  // 300 MB of address space holds the program, not the ring.
  const testing::CliRun run = RunUnderLimit("stats --servers " + path + " --mode pingora-v1",
                                            300 * 1024);
  ExpectOneLineFailure(run, "chash stats: " + path + ": building the pingora-v1 ring");
  EXPECT_NE(run.err.find("out of memory: cannot hold 204800000 ring points"), std::string::npos)
      << run.err;
}

TEST(CliOomTest, DemoOverTheLimitSaysWhatItWasBuilding) {
  if (!LimitsApply()) GTEST_SKIP() << "no address-space limit under sanitizers or qemu";
  const testing::CliRun run = RunUnderLimit("demo", 300 * 1024);
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << "one line: " << run.err;
  EXPECT_NE(run.err.find("chash demo: the built-in fleet (2048 x 625): building the "),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("out of memory"), std::string::npos) << run.err;
}

// Files named PATH.tmp.* beside PATH: what an interrupted snapshot writer
// would leave.
int TempFilesBeside(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string prefix = path.substr(slash + 1) + ".tmp.";
  int count = 0;
  if (DIR* dir = opendir(path.substr(0, slash).c_str())) {
    while (const dirent* entry = readdir(dir)) {
      count += std::string(entry->d_name).rfind(prefix, 0) == 0;
    }
    closedir(dir);
  }
  return count;
}

TEST(CliOomTest, BuildOverTheLimitLeavesTheDestinationAlone) {
  if (!LimitsApply()) GTEST_SKIP() << "no address-space limit under sanitizers or qemu";
  const std::string servers = testing::WriteTemp("oom_build_servers.txt", BigFleet());
  // The snapshot an earlier build published: a failed build must neither
  // truncate nor replace it, nor leave a temporary file beside it.
  const std::string previous = "the snapshot readers map now";
  const std::string out = testing::WriteTemp("oom_build.ring", previous);
  const testing::CliRun run = RunUnderLimit(
      "build --servers " + servers + " --mode pingora-v1 --out " + out, 300 * 1024);
  ExpectOneLineFailure(run, "chash build: " + servers + ": building the pingora-v1 ring");
  EXPECT_EQ(testing::ReadAll(out), previous) << "the destination was changed";
  EXPECT_EQ(TempFilesBeside(out), 0) << "a temporary file was left beside " << out;
}

TEST(CliOomTest, RouteOverTheLimitSaysWhatItWasLoading) {
  if (!LimitsApply()) GTEST_SKIP() << "no address-space limit under sanitizers or qemu";
  const std::string servers_path =
      testing::WriteTemp("oom_route_servers.txt", ServersText("10.1.", 1000, ":443"));
  const std::string ring = testing::TempPath("oom_route.ring");
  // About 10M points: a 60 MB snapshot, built without a limit.
  const testing::CliRun built = testing::RunChash("build --servers " + servers_path +
                                                  " --mode pingora-v2 --multiple 10000 --out " +
                                                  ring);
  ASSERT_EQ(built.status, 0) << built.err;
  // 64 MiB of address space holds the program (about 45 MB here), not the
  // 60 MB mapping as well.
  const testing::CliRun run = RunUnderLimit("route --ring " + ring, 64 * 1024);
  ExpectOneLineFailure(run, "chash route: loading the ring snapshot: out of memory: ");
  EXPECT_NE(run.err.find(ring), std::string::npos) << "names the file: " << run.err;
  // The same command without the limit routes: the limit was the cause.
  const testing::CliRun free_run = testing::RunChash("route --ring " + ring);
  EXPECT_EQ(free_run.status, 0) << free_run.err;
  std::remove(ring.c_str());
  std::remove(servers_path.c_str());
}

}  // namespace
}  // namespace chash
