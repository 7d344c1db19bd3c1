// The operations commands through the real `chash` binary: their output
// agrees with the library, and bad input fails with FILE:LINE and status 2.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "test_util.h"

namespace chash {
namespace {

using testing::DataPath;

struct CliRun {
  int status = -1;  // exit status
  std::string out;  // stdout
  std::string err;  // stderr
};

CliRun RunCli(const std::string& args, const std::string& stdin_text = "") {
  // Per process: ctest runs the tests of this binary in parallel.
  const std::string base =
      ::testing::TempDir() + "chash_ops_cli_" + std::to_string(getpid());
  {
    std::ofstream in(base + ".in", std::ios::binary);
    in << stdin_text;
  }
  const std::string command = std::string(CHASH_CLI_PATH) + " " + args + " <" + base +
                              ".in >" + base + ".out 2>" + base + ".err";
  CliRun run;
  const int raw = std::system(command.c_str());
  run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  auto slurp = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  run.out = slurp(base + ".out");
  run.err = slurp(base + ".err");
  return run;
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + std::to_string(getpid()) + "_" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::vector<ServerEntry> LoadServers(const std::string& relative) {
  Result<std::vector<ServerEntry>> servers = ReadServersFile(DataPath(relative));
  EXPECT_TRUE(servers.ok());
  return servers.ok() ? servers.value() : std::vector<ServerEntry>{};
}

// The value of "key": in a one-line JSON object (numbers and strings only).
std::string JsonField(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return "";
  size_t start = at + key.size() + 3;
  if (json[start] == '"') return json.substr(start + 1, json.find('"', start + 1) - start - 1);
  return json.substr(start, json.find_first_of(",}", start) - start);
}

TEST(DiffCli, JsonAgreesWithTheLibrary) {
  const std::string servers = DataPath("pingora/servers_50.txt");
  const CliRun run = RunCli("diff --servers " + servers +
                         " --mode pingora-v1 --new-mode pingora-v2 --new-multiple 16 "
                         "--rollout 25% --json");
  ASSERT_EQ(run.status, 0) << run.err;
  const std::vector<ServerEntry> list = LoadServers("pingora/servers_50.txt");
  const RingDiff diff =
      DiffRings(testing::MustBuild(list, {.flavor = Flavor::kPingoraV1}),
                testing::MustBuild(list, {.flavor = Flavor::kPingoraV2, .point_multiple = 16}));
  EXPECT_EQ(JsonField(run.out, "moved_hashes"), std::to_string(diff.moved_hashes));
  EXPECT_EQ(JsonField(run.out, "key_space"), "4294967296");
  EXPECT_NEAR(std::stod(JsonField(run.out, "moved_fraction")), diff.moved_fraction(), 1e-9);
  EXPECT_NEAR(std::stod(JsonField(run.out, "moved_fraction_at_rollout")),
              0.25 * diff.moved_fraction(), 1e-9);
  EXPECT_EQ(JsonField(run.out, "rollout"), "0.25");
  EXPECT_NE(run.out.find("\"nodes\":[{\"backend\":"), std::string::npos);
  EXPECT_NE(run.out.find("\"in_old\":true"), std::string::npos);
}

TEST(DiffCli, SameRingMovesNothingAndErrorsNameTheFile) {
  const std::string servers = DataPath("nginx/a.servers");
  CliRun run = RunCli("diff --servers " + servers);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("moved     0.000000% of the key space (0 of 4,294,967,296"),
            std::string::npos)
      << run.out;
  const std::string bad = WriteTemp("bad.servers", "10.0.0.1:443 1\n10.0.0.2:99999 1\n");
  run = RunCli("diff --servers " + servers + " --new-servers " + bad);
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find(bad + ":2:"), std::string::npos) << run.err;
  run = RunCli("diff --servers " + servers + " --rollout 1.5");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("--rollout"), std::string::npos);
}

}  // namespace
}  // namespace chash
