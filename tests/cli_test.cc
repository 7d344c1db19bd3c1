// The chash tool as a user meets it: errors on stderr naming FILE:LINE with
// exit status 2, keys from a file or stdin, the servers file format.
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "chash/version.h"
#include "cli_run.h"
#include "test_util.h"

namespace chash {
namespace {

using testing::CliRun;
using testing::RunChash;
using testing::WriteTemp;

void ExpectUsageError(const CliRun& run, const std::string& fragment) {
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_TRUE(run.out.empty()) << run.out;
  EXPECT_NE(run.err.find(fragment), std::string::npos)
      << "stderr '" << run.err << "' should contain '" << fragment << "'";
}

TEST(Cli, RoutesKeysFromStdinAndFileAlike) {
  const std::string servers =
      WriteTemp("s1", "# nginx sample\n127.0.0.1:7777\n\n127.0.0.1:7778 1  # weight 1\n");
  const std::string keys = "/some/path\n/some/longer/path\n\n/g";  // empty key; no final \n
  const CliRun from_stdin = RunChash("route --servers " + servers, keys);
  EXPECT_EQ(from_stdin.status, 0) << from_stdin.err;
  const CliRun from_file = RunChash("route --servers " + servers + " --keys " + WriteTemp("k1", keys));
  ASSERT_EQ(from_file.status, 0) << from_file.err;
  EXPECT_EQ(from_file.out, from_stdin.out);
  Result<Ring> ring = BuildRingFromServers(
      {{"127.0.0.1:7777", 1, 2}, {"127.0.0.1:7778", 1, 4}}, {}, "x");
  std::string expected;
  for (const std::string key : {"/some/path", "/some/longer/path", "", "/g"}) {
    expected += key + "," + ring.value().node(ring.value().FindNode(key)).address.written + "\n";
  }
  EXPECT_EQ(from_stdin.out, expected);
  EXPECT_EQ(expected.substr(0, 26), "/some/path,127.0.0.1:7778\n");  // pingora's own answer
}

TEST(Cli, KeepsTheAddressAsWritten) {
  const std::string servers = WriteTemp("s2", "[2001:DB8::1]:80 1\n");
  const CliRun run = RunChash("route --mode pingora-v1 --servers " + servers, "a\n");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "a,[2001:DB8::1]:80\n");
  // --flavor is the option's name; --mode, its old spelling, is the same option.
  const CliRun flavor = RunChash("route --flavor pingora-v1 --servers " + servers, "a\n");
  ASSERT_EQ(flavor.status, 0) << flavor.err;
  EXPECT_EQ(flavor.out, run.out);
  const CliRun inline_value = RunChash("route --flavor=pingora-v1 --servers " + servers, "a\n");
  ASSERT_EQ(inline_value.status, 0) << inline_value.err;
  EXPECT_EQ(inline_value.out, run.out);
  // The flavor is applied: --multiple is taken only with pingora-v2 (or resty).
  EXPECT_EQ(RunChash("route --flavor pingora-v2 --multiple 16 --servers " + servers, "a\n").status,
            0);
  ExpectUsageError(RunChash("route --mode pingora-v1 --flavor nginx --servers " + servers, "a\n"),
                   "--flavor given twice");
}

TEST(Cli, ErrorsNameFileAndLine) {
  const std::string bad_address = WriteTemp("s3", "10.0.0.1:80\n# c\n10.0.0.2:99999 1\n");
  ExpectUsageError(RunChash("route --servers " + bad_address, "a\n"),
                   bad_address + ":3: node 1: address '10.0.0.2:99999'");
  const std::string bad_weight = WriteTemp("s4", "10.0.0.1:80 x1\n");
  ExpectUsageError(RunChash("stats --servers " + bad_weight), bad_weight + ":1: weight 'x1'");
  const std::string extra = WriteTemp("s5", "10.0.0.1:80 1 2\n");
  ExpectUsageError(RunChash("stats --servers " + extra), extra + ":1: expected 'ADDR [WEIGHT]'");
  const std::string dup = WriteTemp("s6", "10.0.0.1:80\n10.0.0.1:80\n");
  ExpectUsageError(RunChash("stats --servers " + dup), dup + ":2: node 1 '10.0.0.1:80'");
  const std::string name = WriteTemp("s7", "localhost:80\n");
  ExpectUsageError(RunChash("stats --mode pingora-v2 --servers " + name), name + ":1:");
}

TEST(Cli, ErrorsInArguments) {
  const std::string servers = WriteTemp("s8", "10.0.0.1:80\n");
  ExpectUsageError(RunChash("route"), "--servers FILE is required");
  ExpectUsageError(RunChash("route --servers " + servers + " --multiple 16"),
                   "--multiple: nginx uses 160 points per weight unit; only pingora-v2 and "
                   "resty take a point multiple (got 16)");
  ExpectUsageError(RunChash("route --servers " + servers + " --mode pingora-v2 --multiple 0"),
                   "--multiple must be an integer 1..");
  ExpectUsageError(RunChash("route --servers " + servers + " --mode haproxy"),
                   "unknown flavor 'haproxy' (expected nginx, pingora-v1, pingora-v2 or resty)");
  ExpectUsageError(RunChash("route --servers " + servers + " --bogus"), "unknown option '--bogus'");
  ExpectUsageError(RunChash("route --servers /nonexistent/x"), "/nonexistent/x:");
  ExpectUsageError(RunChash("route --servers " + servers + " --keys /nonexistent/k"),
                   "/nonexistent/k:");
  ExpectUsageError(RunChash("frobnicate"), "unknown command 'frobnicate'");
  const std::string drained = WriteTemp("s9", "10.0.0.1:80 0\n");
  ExpectUsageError(RunChash("route --servers " + drained, "a\n"), "the ring has no points");
}

TEST(Cli, StatsJson) {
  const std::string servers = WriteTemp("s10", "10.0.0.1:80 2\n10.0.0.2:80 1\n");
  const CliRun run = RunChash("stats --json --servers " + servers);
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("\"nodes\":2,\"points_generated\":480,\"points\":480"),
            std::string::npos)
      << run.out;
}

// Every command with every option its parser takes (tools/cli/cmd_*.cc):
// its help must name each one.
const std::vector<std::pair<std::string, std::vector<std::string>>>& CommandOptions() {
  static const auto* commands = new std::vector<std::pair<std::string, std::vector<std::string>>>{
      {"route",
       {"--servers", "--flavor", "--multiple", "--keys", "--down", "--subset", "--new-servers",
        "--new-flavor", "--new-multiple", "--rollout", "--scope", "--seed", "--nginx-conf",
        "--upstream", "--new-nginx-conf", "--new-upstream", "--ring", "--trusted-key",
        "--min-version", "--allow-mismatch"}},
      {"stats",
       {"--servers", "--flavor", "--multiple", "--plot", "--nginx-conf", "--upstream", "--ring",
        "--trusted-key", "--min-version", "--json"}},
      {"diff",
       {"--servers", "--flavor", "--multiple", "--new-servers", "--new-flavor", "--new-multiple",
        "--rollout", "--new-ring", "--plot", "--nginx-conf", "--upstream", "--new-nginx-conf",
        "--new-upstream", "--ring", "--trusted-key", "--min-version", "--json"}},
      {"plan",
       {"--servers", "--flavor", "--multiple", "--cv-target", "--rings", "--multiples",
        "--max-points", "--plot", "--nginx-conf", "--upstream", "--json"}},
      {"demo", {"--nodes", "--weight", "--multiple"}},
      {"bench", {"--nodes", "--weight", "--multiple", "--target", "--threads", "--json"}},
      {"keygen", {"--out"}},
      {"build",
       {"--servers", "--flavor", "--multiple", "--subset", "--config-version", "--label", "--sign",
        "--out", "--from"}},
      {"inspect", {"--trusted-key", "--min-version", "--json"}},
      {"verify", {"--trusted-key", "--min-version"}},
  };
  return *commands;
}

TEST(CliHelp, OverviewListsEveryCommand) {
  const CliRun help = RunChash("--help");
  ASSERT_EQ(help.status, 0) << help.err;
  EXPECT_TRUE(help.err.empty()) << help.err;
  EXPECT_EQ(RunChash("help").out, help.out);
  EXPECT_EQ(RunChash("-h").out, help.out);
  for (const auto& [command, options] : CommandOptions()) {
    EXPECT_NE(help.out.find("\n  " + command + " "), std::string::npos) << command;
  }
  // No command's options in the overview: those are in its own help.
  EXPECT_EQ(help.out.find("--allow-mismatch"), std::string::npos) << help.out;
  const CliRun bare = RunChash("");
  EXPECT_EQ(bare.status, 2);
  EXPECT_TRUE(bare.out.empty()) << bare.out;
  EXPECT_EQ(bare.err, help.out) << "no command: the overview on stderr, exit status 2";
}

TEST(CliHelp, EachCommandPrintsItsOwnUsageWithEveryOption) {
  for (const auto& [command, options] : CommandOptions()) {
    const CliRun help = RunChash(command + " --help");
    ASSERT_EQ(help.status, 0) << command << ": " << help.err;
    EXPECT_TRUE(help.err.empty()) << command << ": " << help.err;
    EXPECT_EQ(help.out.rfind("usage: chash " + command + " ", 0), 0u) << help.out;
    EXPECT_EQ(RunChash("help " + command).out, help.out) << command;
    EXPECT_EQ(RunChash(command + " -h").out, help.out) << command;
    // --help wins wherever it stands, even after options that would fail.
    EXPECT_EQ(RunChash(command + " --bogus --help").out, help.out) << command;
    for (const std::string& option : options) {
      EXPECT_NE(help.out.find("  " + option + " "), std::string::npos)
          << "chash " << command << " --help does not describe " << option << ":\n"
          << help.out;
    }
    for (const auto& [other, unused] : CommandOptions()) {
      if (other != command) {
        EXPECT_EQ(help.out.find("usage: chash " + other + " "), std::string::npos)
            << command << " --help prints " << other << "'s usage";
      }
    }
  }
}

TEST(CliHelp, AllIsTheOverviewThenEveryCommand) {
  const CliRun all = RunChash("help --all");
  ASSERT_EQ(all.status, 0) << all.err;
  EXPECT_EQ(all.out.rfind(RunChash("--help").out, 0), 0u);
  size_t last = 0;
  for (const auto& [command, options] : CommandOptions()) {
    const size_t at = all.out.find("\nchash " + command + ":\n  chash " + command + " ");
    ASSERT_NE(at, std::string::npos) << command;
    EXPECT_GT(at, last) << command << " out of order";
    last = at;
  }
}

TEST(CliHelp, UnknownCommandsAreUsageErrors) {
  ExpectUsageError(RunChash("help frobnicate"), "no command 'frobnicate'");
  ExpectUsageError(RunChash("frobnicate --help"), "unknown command 'frobnicate'");
  ExpectUsageError(RunChash("help route stats"), "usage: chash help [COMMAND | --all]");
}

TEST(Cli, PrintsTheVersion) {
  const CliRun run = RunChash("--version");
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "chash " CHASH_VERSION_STRING "\n");
  EXPECT_EQ(std::string(CHASH_VERSION_STRING), "1.0.0");
}

TEST(Cli, BenchThreadsJson) {
  const CliRun run = RunChash("bench --nodes 4 --weight 2 --multiple 16 --threads 2 --json");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("\"points_generated\":128,"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("\"threads\":2,"), std::string::npos) << run.out;
  for (const char* field : {"\"mt_single_ns\":", "\"mt_batch_ns\":", "\"batch_baseline_ns\":",
                            "\"line_ns\":", "\"anon_huge_pages_kb\":", "\"single_ns\":"}) {
    EXPECT_NE(run.out.find(field), std::string::npos) << field;
  }
  EXPECT_EQ(RunChash("bench --nodes 4 --threads 0").status, 2);
}

TEST(ServersFile, ParsesCommentsBlankLinesCrlfAndDefaults) {
  Result<std::vector<ServerEntry>> entries =
      ParseServersText("# head\r\n10.0.0.1:80 3\r\n\n  [::1]:7777\t  # tail\nunix:/x 0", "f");
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries.value().size(), 3u);
  EXPECT_EQ(entries.value()[0].address, "10.0.0.1:80");
  EXPECT_EQ(entries.value()[0].weight, 3u);
  EXPECT_EQ(entries.value()[0].line, 2u);
  EXPECT_EQ(entries.value()[1].address, "[::1]:7777");
  EXPECT_EQ(entries.value()[1].weight, 1u);
  EXPECT_EQ(entries.value()[1].line, 4u);
  EXPECT_EQ(entries.value()[2].weight, 0u);
  EXPECT_EQ(ParseServersText("a 4294967296", "f").status().code(), StatusCode::kBadWeight);
  EXPECT_EQ(ParseServersText("a -1", "f").status().code(), StatusCode::kBadWeight);
  EXPECT_TRUE(ParseServersText("a 4294967295", "f").ok());
}

}  // namespace
}  // namespace chash
