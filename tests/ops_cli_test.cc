// The operations commands through the real `chash` binary: their output
// agrees with the library, and bad input fails with FILE:LINE and status 2.
#include <cmath>
#include <cstdio>
#include <fstream>

#include "cli_run.h"
#include "test_util.h"

namespace chash {
namespace {

using testing::CliRun;
using testing::DataPath;
using testing::LoadServers;
using testing::RunChash;
using testing::JsonField;
using testing::SplitLines;
using testing::WriteTemp;

TEST(DiffCli, JsonAgreesWithTheLibrary) {
  const std::string servers = DataPath("pingora/servers_50.txt");
  const CliRun run = RunChash("diff --servers " + servers +
                            " --mode pingora-v1 --new-mode pingora-v2 --new-multiple 16 "
                            "--rollout 25% --json");
  ASSERT_EQ(run.status, 0) << run.err;
  const std::vector<ServerEntry> list = LoadServers("pingora/servers_50.txt");
  const RingDiff diff =
      DiffRings(testing::MustBuild(list, {.flavor = Flavor::kPingoraV1}),
                testing::MustBuild(list, {.flavor = Flavor::kPingoraV2, .point_multiple = 16})).value();
  EXPECT_EQ(JsonField(run.out, "moved_hashes"), std::to_string(diff.moved_hashes));
  EXPECT_EQ(JsonField(run.out, "key_space"), "4294967296");
  EXPECT_NEAR(std::stod(JsonField(run.out, "moved_fraction")), diff.moved_fraction(), 1e-9);
  EXPECT_NEAR(std::stod(JsonField(run.out, "moved_fraction_at_rollout")),
              0.25 * diff.moved_fraction(), 1e-9);
  EXPECT_EQ(JsonField(run.out, "rollout"), "0.25");
  EXPECT_NE(run.out.find("\"nodes\":[{\"backend\":"), std::string::npos);
  EXPECT_NE(run.out.find("\"in_old\":true"), std::string::npos);
  // `flavor`, with `mode` its alias until 2.0, on both rings.
  EXPECT_NE(run.out.find("\"flavor\":\"pingora-v1\",\"mode\":\"pingora-v1\""), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("\"flavor\":\"pingora-v2\",\"mode\":\"pingora-v2\""), std::string::npos)
      << run.out;
}

TEST(DiffCli, SameRingMovesNothingAndErrorsNameTheFile) {
  const std::string servers = DataPath("nginx/a.servers");
  CliRun run = RunChash("diff --servers " + servers);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("moved     0.000000% of the key space (0 of 4,294,967,296"),
            std::string::npos)
      << run.out;
  const std::string bad = WriteTemp("bad.servers", "10.0.0.1:443 1\n10.0.0.2:99999 1\n");
  run = RunChash("diff --servers " + servers + " --new-servers " + bad);
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find(bad + ":2:"), std::string::npos) << run.err;
  run = RunChash("diff --servers " + servers + " --rollout 1.5");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("--rollout"), std::string::npos);
}

std::string ServersText(const std::vector<ServerEntry>& servers) {
  std::string text;
  for (const ServerEntry& s : servers) text += s.address + " " + std::to_string(s.weight) + "\n";
  return text;
}

// route --down FILE answers exactly as route over the servers file without
// those lines; --subset FILE as route over only those lines.
TEST(RouteCli, DownAndSubsetEqualTheSmallerServersFile) {
  const std::vector<ServerEntry> servers = LoadServers("nginx/a.servers");
  const std::string keys = DataPath("nginx/a.keys");
  const std::string down = WriteTemp("down.txt", "# maintenance\n" + servers[2].address + "\n" +
                                                     servers[6].address + "   # disk\n");
  std::vector<ServerEntry> remaining, subset;
  for (size_t i = 0; i < servers.size(); ++i) {
    if (i != 2 && i != 6) remaining.push_back(servers[i]);
    if (i == 0 || i == 4 || i == 7) subset.push_back(servers[i]);
  }
  const std::string remaining_path = WriteTemp("remaining.servers", ServersText(remaining));
  const std::string subset_list =
      WriteTemp("subset.txt",
                servers[7].address + "\n" + servers[0].address + "\n" + servers[4].address + "\n");
  const std::string subset_path = WriteTemp("subset.servers", ServersText(subset));
  const std::string full = DataPath("nginx/a.servers");

  const CliRun masked = RunChash("route --servers " + full + " --keys " + keys + " --down " + down);
  const CliRun rebuilt = RunChash("route --servers " + remaining_path + " --keys " + keys);
  ASSERT_EQ(masked.status, 0) << masked.err;
  ASSERT_EQ(rebuilt.status, 0) << rebuilt.err;
  EXPECT_EQ(SplitLines(masked.out).size(), 5000u);
  EXPECT_EQ(masked.out, rebuilt.out);
  const CliRun plain = RunChash("route --servers " + full + " --keys " + keys);
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_NE(masked.out, plain.out);  // some keys did fail over

  const CliRun sub =
      RunChash("route --servers " + full + " --keys " + keys + " --subset " + subset_list);
  const CliRun sub_rebuilt = RunChash("route --servers " + subset_path + " --keys " + keys);
  ASSERT_EQ(sub_rebuilt.status, 0) << sub_rebuilt.err;
  ASSERT_EQ(sub.status, 0) << sub.err;
  EXPECT_EQ(sub.out, sub_rebuilt.out);
  // Both: the subset minus the down servers (none of them here): unchanged.
  const CliRun both = RunChash("route --servers " + full + " --keys " + keys + " --subset " +
                             subset_list + " --down " + down);
  ASSERT_EQ(both.status, 0) << both.err;
  EXPECT_EQ(both.out, sub_rebuilt.out);
}

TEST(RouteCli, DownErrors) {
  const std::string full = DataPath("nginx/b.servers");  // 127.0.0.1:7777, :7778
  const std::string all_down = WriteTemp("all_down.txt", "127.0.0.1:7777\n127.0.0.1:7778\n");
  CliRun run = RunChash("route --servers " + full + " --down " + all_down, "/x\n");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("no server is available"), std::string::npos) << run.err;
  const std::string unknown = WriteTemp("unknown.txt", "127.0.0.1:7777\n\n127.0.0.1:9\n");
  run = RunChash("route --servers " + full + " --down " + unknown, "/x\n");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find(unknown + ":3: '127.0.0.1:9' is not a server of"), std::string::npos)
      << run.err;
  run = RunChash("route --servers " + full + " --down /nonexistent/down.txt", "/x\n");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("/nonexistent/down.txt"), std::string::npos);
}

// route --rollout: each line's ADDR is the answer of the ring named in its
// third field, the split follows the rollout, and the controls work.
TEST(RouteCli, Migration) {
  const std::string servers = DataPath("pingora/servers_50.txt");
  const std::string keys = DataPath("pingora/keys_10000.txt");
  // The option names the help gives (--flavor, --new-flavor); the runs below
  // and the diff above use the old spellings (--mode, --new-mode).
  const std::string rings = " --flavor pingora-v1 --new-flavor pingora-v2 --new-multiple 16";
  const CliRun old_run = RunChash("route --servers " + servers + " --mode pingora-v1 --keys " + keys);
  ASSERT_EQ(old_run.status, 0) << old_run.err;
  const CliRun new_run =
      RunChash("route --servers " + servers + " --mode pingora-v2 --multiple 16 --keys " + keys);
  ASSERT_EQ(new_run.status, 0) << new_run.err;
  const CliRun mixed =
      RunChash("route --servers " + servers + rings + " --rollout 30% --keys " + keys);
  ASSERT_EQ(mixed.status, 0) << mixed.err;
  const std::vector<std::string> old_lines = SplitLines(old_run.out), new_lines = SplitLines(new_run.out),
                                 lines = SplitLines(mixed.out);
  ASSERT_EQ(lines.size(), 10000u);
  ASSERT_EQ(old_lines.size(), lines.size());
  size_t on_new = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t comma = lines[i].rfind(',');
    const std::string side = lines[i].substr(comma + 1);
    const std::string line = lines[i].substr(0, comma);
    ASSERT_TRUE(side == "old" || side == "new") << lines[i];
    on_new += side == "new";
    EXPECT_EQ(line, side == "new" ? new_lines[i] : old_lines[i]);
  }
  EXPECT_NEAR(on_new / 10000.0, 0.3, 5 * std::sqrt(0.21 / 10000));
  // Raising the rollout keeps every key already on the new ring there.
  const CliRun more =
      RunChash("route --servers " + servers + rings + " --rollout 0.6 --keys " + keys);
  ASSERT_EQ(more.status, 0) << more.err;
  const std::vector<std::string> more_lines = SplitLines(more.out);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].ends_with(",new")) {
      EXPECT_TRUE(more_lines[i].ends_with(",new")) << i;
    }
  }
  const CliRun out_of_scope =
      RunChash("route --servers " + servers + rings + " --rollout 100% --scope out --keys " + keys);
  ASSERT_EQ(out_of_scope.status, 0) << out_of_scope.err;
  EXPECT_EQ(out_of_scope.out.find(",new\n"), std::string::npos);
  // Another snapshot is refused unless allowed.
  const std::string other = DataPath("pingora/servers_5.txt");
  CliRun run = RunChash(
      "route --servers " + servers + rings + " --new-servers " + other + " --rollout 10%", "/x\n");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("different backend snapshots"), std::string::npos) << run.err;
  run = RunChash("route --servers " + servers + rings + " --new-servers " + other +
                   " --rollout 10% --allow-mismatch",
               "/x\n");
  EXPECT_EQ(run.status, 0) << run.err;
  run = RunChash("route --servers " + servers + " --mode pingora-v1 --new-mode pingora-v2", "/x\n");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("needs --rollout"), std::string::npos);
}

TEST(PlanCli, JsonAgreesWithTheLibrary) {
  const std::string servers = DataPath("pingora/servers_50.txt");
  const CliRun run =
      RunChash("plan --servers " + servers + " --mode pingora-v1 --cv-target 3% --rings 24 --json");
  ASSERT_EQ(run.status, 0) << run.err;
  Result<Plan> plan =
      PlanPointMultiples(LoadServers("pingora/servers_50.txt"), {.flavor = Flavor::kPingoraV1},
                         {.cv_target = 0.03, .rings = 24});
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(plan.value().recommended.has_value());
  EXPECT_EQ(JsonField(run.out, "recommended_multiple"), std::to_string(*plan.value().recommended));
  EXPECT_EQ(JsonField(run.out, "rings"), "24");
  EXPECT_EQ(JsonField(run.out, "cv_target"), "0.03");
  const CliRun text = RunChash("plan --servers " + servers + " --mode pingora-v1 --cv-target 3%");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("recommended: --mode pingora-v2 --multiple " +
                          std::to_string(*plan.value().recommended) + ","),
            std::string::npos)
      << text.out;
  const CliRun bad = RunChash("plan --servers " + servers + " --mode pingora-v1 --cv-target 0");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--cv-target"), std::string::npos);
}

TEST(StatsCli, PrintsTheFingerprints) {
  const CliRun run = RunChash("stats --servers " + DataPath("nginx/a.servers"));
  ASSERT_EQ(run.status, 0) << run.err;
  // tests/data/identity/expected_fingerprints.py
  EXPECT_NE(run.out.find("fingerprint       "
                         "7e7742929309bdce1a3ea066e95231c52fde9cbb109bbe78fe3513e5fff6dff2"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("points digest     "
                         "888d99672476751518b76d32570f81e83422833dc310982180a0ccc93b654eec"),
            std::string::npos);
  EXPECT_NE(run.out.find("collision table   24 bytes"), std::string::npos);
  const CliRun json = RunChash("stats --servers " + DataPath("nginx/a.servers") + " --json");
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_EQ(JsonField(json.out, "fingerprint"),
            "7e7742929309bdce1a3ea066e95231c52fde9cbb109bbe78fe3513e5fff6dff2");
  EXPECT_EQ(JsonField(json.out, "collision_table_bytes"), "24");
  // column_bytes / points, written with the one JSON writer's 10 digits.
  const double columns = std::stod(JsonField(json.out, "column_bytes"));
  const double points = std::stod(JsonField(json.out, "points"));
  char expected[32];
  std::snprintf(expected, sizeof expected, "%.10g", columns / points);
  EXPECT_EQ(JsonField(json.out, "bytes_per_point"), expected);
}

}  // namespace
}  // namespace chash
