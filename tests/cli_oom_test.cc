// The `chash` tool under a memory limit (ulimit -v) that cannot hold the
// ring: one line on stderr naming what it was building, exit status 2; no
// signal, no std::terminate.
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

TEST(CliOomTest, StatsOverTheLimitSaysWhatItWasBuilding) {
  if (!LimitsApply()) GTEST_SKIP() << "no address-space limit under sanitizers or qemu";
  std::string servers;
  for (int i = 0; i < 2048; ++i) {
    servers += "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ":443 625\n";
  }
  const std::string path = testing::WriteTemp("oom_servers.txt", servers);
  // 204,800,000 points need about 2 GB to build; 300 MB of address space
  // holds the program, not the ring.
  const testing::CliRun run = RunUnderLimit("stats --servers " + path + " --mode pingora-v1",
                                            300 * 1024);
  EXPECT_EQ(run.status, 2) << run.err;
  ASSERT_FALSE(run.err.empty());
  EXPECT_EQ(run.err.find('\n'), run.err.size() - 1) << "one line: " << run.err;
  EXPECT_EQ(run.err.rfind("chash stats: " + path + ": building the pingora-v1 ring", 0), 0u)
      << run.err;
  EXPECT_NE(run.err.find("out of memory: cannot hold 204800000 ring points"), std::string::npos)
      << run.err;
  EXPECT_TRUE(run.out.empty()) << run.out;
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

}  // namespace
}  // namespace chash
