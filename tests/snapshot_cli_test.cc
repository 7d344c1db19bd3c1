// The snapshot commands: keygen, build, inspect, verify, and route/stats/diff
// --ring, which must print exactly what the --servers forms print.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "cli_run.h"
#include "test_util.h"

namespace chash {
namespace {

using testing::CliRun;
using testing::DataPath;
using testing::ReadAll;
using testing::RunChash;
using testing::TempPath;
using testing::WriteTemp;

struct GoldenSet {
  std::string servers;  // under tests/data
  std::string keys;
  std::string mode_args;  // "--mode pingora-v2 --multiple 16"
};

class SnapshotGoldenCli : public ::testing::TestWithParam<GoldenSet> {};

TEST_P(SnapshotGoldenCli, RouteRingEqualsRouteServers) {
  const GoldenSet& set = GetParam();
  const std::string servers = DataPath(set.servers);
  const std::string keys = DataPath(set.keys);
  const std::string ring = TempPath("golden.chash");
  const CliRun build =
      RunChash("build --servers " + servers + " " + set.mode_args + " --out " + ring);
  ASSERT_EQ(build.status, 0) << build.err;
  const CliRun from_servers =
      RunChash("route --servers " + servers + " " + set.mode_args + " --keys " + keys);
  const CliRun from_ring = RunChash("route --ring " + ring + " --keys " + keys);
  ASSERT_EQ(from_servers.status, 0) << from_servers.err;
  ASSERT_EQ(from_ring.status, 0) << from_ring.err;
  ASSERT_FALSE(from_servers.out.empty());
  EXPECT_EQ(from_ring.out, from_servers.out);
  // The stored index (the default) and none (--no-index): the same routes.
  const std::string bare = TempPath("golden-no-index.chash");
  ASSERT_EQ(RunChash("build --servers " + servers + " " + set.mode_args + " --no-index --out " +
                     bare).status,
            0);
  const CliRun with_index = RunChash("inspect " + ring + " --json");
  const CliRun without_index = RunChash("inspect " + bare + " --json");
  ASSERT_EQ(with_index.status, 0) << with_index.err;
  ASSERT_EQ(without_index.status, 0) << without_index.err;
  EXPECT_EQ(with_index.out.find("\"index_bytes\":0,"), std::string::npos) << with_index.out;
  EXPECT_NE(without_index.out.find("\"index_bytes\":0,"), std::string::npos)
      << without_index.out;
  const CliRun from_bare = RunChash("route --ring " + bare + " --keys " + keys);
  ASSERT_EQ(from_bare.status, 0) << from_bare.err;
  EXPECT_EQ(from_bare.out, from_servers.out);
  std::remove(bare.c_str());
  // stats: the same ring, identity included (build time and memory differ).
  const CliRun stats_servers = RunChash("stats --servers " + servers + " " + set.mode_args);
  ASSERT_EQ(stats_servers.status, 0) << stats_servers.err;
  const CliRun stats_ring = RunChash("stats --ring " + ring);
  ASSERT_EQ(stats_ring.status, 0) << stats_ring.err;
  for (const char* field : {"fingerprint ", "points digest", "backends ", "points kept",
                            "collisions", "CV measured"}) {
    const auto line_of = [&](const std::string& text) {
      const size_t at = text.find(field);
      return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
    };
    EXPECT_FALSE(line_of(stats_servers.out).empty()) << field;
    EXPECT_EQ(line_of(stats_ring.out), line_of(stats_servers.out)) << field;
  }
  std::remove(ring.c_str());
}

INSTANTIATE_TEST_SUITE_P(
    Sets, SnapshotGoldenCli,
    ::testing::Values(GoldenSet{"nginx/a.servers", "nginx/a.keys", ""},
                      GoldenSet{"nginx/b.servers", "nginx/b.keys", ""},
                      GoldenSet{"nginx/c.servers", "nginx/c.keys", ""},
                      GoldenSet{"nginx/d.servers", "nginx/d.keys", ""},
                      GoldenSet{"nginx/f.servers", "nginx/f.keys", ""},
                      GoldenSet{"nginx/g.servers", "nginx/g.keys", ""},
                      GoldenSet{"nginx/h.servers", "nginx/h.keys", ""},
                      GoldenSet{"pingora/servers_50.txt", "pingora/keys_10000.txt",
                                "--mode pingora-v1"},
                      GoldenSet{"pingora/servers_50.txt", "pingora/keys_10000.txt",
                                "--mode pingora-v2 --multiple 16"},
                      GoldenSet{"pingora/servers_50.txt", "pingora/edge_keys_v1_50srv.txt",
                                "--mode pingora-v1"},
                      GoldenSet{"pingora/servers_50.txt", "pingora/edge_keys_v2m16_50srv.txt",
                                "--mode pingora-v2 --multiple 16"},
                      GoldenSet{"pingora/servers_ipv6_3.txt", "pingora/keys_1000.txt",
                                "--mode pingora-v1"},
                      GoldenSet{"pingora/servers_ipv6_format.txt", "pingora/keys_1000.txt",
                                "--mode pingora-v1"},
                      GoldenSet{"pingora/servers_ipv6_format.txt", "pingora/keys_1000.txt",
                                "--mode pingora-v2 --multiple 16"},
                      GoldenSet{"pingora/servers_nginx9.txt", "pingora/keys_1000.txt",
                                "--mode pingora-v1"}));

class SnapshotCli : public ::testing::Test {
 protected:
  void SetUp() override {
    servers_ = DataPath("pingora/servers_50.txt");
    key_ = TempPath("key");
    other_ = TempPath("other");
    for (const std::string& base : {key_, other_}) {
      std::remove(base.c_str());
      std::remove((base + ".pub").c_str());
      const CliRun run = RunChash("keygen --out " + base);
      ASSERT_EQ(run.status, 0) << run.err;
    }
    ring_ = TempPath("ring.chash");
  }
  void TearDown() override {
    for (const std::string& path : {key_, key_ + ".pub", other_, other_ + ".pub", ring_}) {
      std::remove(path.c_str());
    }
  }
  std::string servers_, key_, other_, ring_;
};

TEST_F(SnapshotCli, SignedSnapshotVerifiesTamperedDoesNot) {
  const CliRun build = RunChash("build --servers " + servers_ +
                                " --mode pingora-v2 --multiple 16 --config-version 7 --label "
                                "eu-west --sign " + key_ + " --out " + ring_);
  ASSERT_EQ(build.status, 0) << build.err;
  EXPECT_EQ(RunChash("verify " + ring_).status, 0);
  const CliRun ok = RunChash("verify " + ring_ + " --trusted-key " + key_ + ".pub");
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_EQ(RunChash("verify " + ring_ + " --trusted-key " + other_ + ".pub --trusted-key " +
                     key_ + ".pub")
                .status,
            0);
  const CliRun wrong = RunChash("verify " + ring_ + " --trusted-key " + other_ + ".pub");
  EXPECT_EQ(wrong.status, 2);
  EXPECT_NE(wrong.err.find("signature:"), std::string::npos) << wrong.err;
  const CliRun old = RunChash("verify " + ring_ + " --min-version 8");
  EXPECT_EQ(old.status, 2);
  EXPECT_NE(old.err.find("min_version:"), std::string::npos) << old.err;

  // A flipped byte in the middle: the checksum names it.
  std::string bytes = ReadAll(ring_);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x10);
  const std::string damaged = WriteTemp("damaged.chash", bytes);
  const CliRun bad = RunChash("verify " + damaged + " --trusted-key " + key_ + ".pub");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("checksum:"), std::string::npos) << bad.err;
  const CliRun route_bad = RunChash("route --ring " + damaged, "a\n");
  EXPECT_EQ(route_bad.status, 2);
  EXPECT_TRUE(route_bad.out.empty());
  const CliRun truncated =
      RunChash("verify " + WriteTemp("short.chash", bytes.substr(0, bytes.size() - 7)));
  EXPECT_EQ(truncated.status, 2);
  EXPECT_NE(truncated.err.find("size:"), std::string::npos) << truncated.err;

  // route with a trusted key routes; with the wrong key it refuses.
  EXPECT_EQ(RunChash("route --ring " + ring_ + " --trusted-key " + key_ + ".pub", "k\n").status,
            0);
  EXPECT_EQ(RunChash("route --ring " + ring_ + " --trusted-key " + other_ + ".pub", "k\n").status,
            2);
}

TEST_F(SnapshotCli, InspectJson) {
  const std::string subset = WriteTemp("subset.txt", "[::1]:7777\n[::]:80\n");
  const CliRun build =
      RunChash("build --servers " + servers_ + " --mode pingora-v1 --subset two=" + subset +
               " --config-version 3 --sign " + key_ + " --out " + ring_);
  ASSERT_EQ(build.status, 0) << build.err;
  const CliRun run = RunChash("inspect " + ring_ + " --json --trusted-key " + key_ + ".pub");
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* field :
       {"\"format_version\":\"1.3\"", "\"config_version\":3", "\"mode\":\"pingora-v1\"",
        "\"nodes\":50", "\"subsets\":[{\"name\":\"two\",\"servers\":2}]", "\"signed\":true",
        "\"signature_verified\":true", "\"checks_pass\":true", "\"failed_check\":null"}) {
    EXPECT_NE(run.out.find(field), std::string::npos) << field << " in " << run.out;
  }
  // Subset routing: only the two servers, exactly as their own ring.
  const CliRun routed = RunChash("route --ring " + ring_ + " --subset two --keys " +
                                 DataPath("pingora/keys_1000.txt"));
  ASSERT_EQ(routed.status, 0) << routed.err;
  // The same two servers with their weights, in the servers file's order.
  std::string two_lines;
  for (const std::string& line : testing::ReadLines(servers_)) {
    const std::string address = line.substr(0, line.find(' '));
    if (address == "[::1]:7777" || address == "[::]:80") two_lines += line + "\n";
  }
  const std::string two = WriteTemp("two.txt", two_lines);
  const CliRun own = RunChash("route --mode pingora-v1 --servers " + two + " --keys " +
                              DataPath("pingora/keys_1000.txt"));
  ASSERT_EQ(own.status, 0) << own.err;
  EXPECT_EQ(routed.out, own.out);
  EXPECT_EQ(RunChash("route --ring " + ring_ + " --subset three", "k\n").status, 2);
  // A damaged file: inspect still prints the header, and names the check.
  std::string bytes = ReadAll(ring_);
  bytes[bytes.size() / 2] ^= 1;
  const CliRun bad = RunChash("inspect " + WriteTemp("bad.chash", bytes) + " --json");
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.out.find("\"failed_check\":\"checksum\""), std::string::npos) << bad.out;
}

TEST_F(SnapshotCli, RollbackIsANewerVersionOfTheOldServers) {
  ASSERT_EQ(RunChash("build --servers " + servers_ + " --mode pingora-v1 --config-version 10 --out " +
                     ring_)
                .status,
            0);
  const std::string rolled = TempPath("rolled.chash");
  const CliRun run = RunChash("build --from " + ring_ + " --config-version 12 --out " + rolled);
  ASSERT_EQ(run.status, 0) << run.err;
  const CliRun a = RunChash("route --ring " + ring_ + " --keys " + DataPath("nginx/a.keys"));
  ASSERT_EQ(a.status, 0) << a.err;
  const CliRun b = RunChash("route --ring " + rolled + " --keys " + DataPath("nginx/a.keys"));
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  const CliRun inspected = RunChash("inspect " + rolled);
  ASSERT_EQ(inspected.status, 0) << inspected.err;
  EXPECT_NE(inspected.out.find("config version    12"), std::string::npos) << inspected.out;
  EXPECT_EQ(RunChash("build --from " + ring_ + " --out " + rolled).status, 2)
      << "a rollback needs an explicit version";
  // In one command: one version above the file served now.
  const std::string again = TempPath("rolled-again.chash");
  const CliRun above = RunChash("build --from " + ring_ + " --above " + rolled + " --out " + again);
  ASSERT_EQ(above.status, 0) << above.err;
  const CliRun inspected_above = RunChash("inspect " + again);
  EXPECT_NE(inspected_above.out.find("config version    13"), std::string::npos)
      << inspected_above.out;
  EXPECT_EQ(RunChash("build --from " + ring_ + " --above " + rolled + " --config-version 20 --out " +
                     again)
                .status,
            2)
      << "--above and --config-version together";
  std::remove(rolled.c_str());
  std::remove(again.c_str());
}

// Every version a file can hold is one a build can write and inspect can
// print: 2^64 - 1 included (1.0 stopped at 1844674407370955161, a tenth of
// it), and the next integer refused by name.
TEST_F(SnapshotCli, ConfigVersionsReachTwoToTheSixtyFourMinusOne) {
  const CliRun top = RunChash("build --servers " + servers_ +
                              " --mode pingora-v1 --config-version 18446744073709551615 --out " +
                              ring_);
  ASSERT_EQ(top.status, 0) << top.err;
  const CliRun inspected = RunChash("inspect " + ring_);
  EXPECT_NE(inspected.out.find("config version    18446744073709551615"), std::string::npos)
      << inspected.out;
  for (const char* bad : {"18446744073709551616", "-1", "+5", "1e3", ""}) {
    const CliRun refused = RunChash("build --servers " + servers_ +
                                    " --mode pingora-v1 --config-version '" + bad + "' --out " +
                                    TempPath("unused.chash"));
    EXPECT_EQ(refused.status, 2) << bad;
    EXPECT_NE(refused.err.find("--config-version must be an integer 0..18446744073709551615"),
              std::string::npos)
        << bad << ": " << refused.err;
  }
  const CliRun above = RunChash("build --from " + ring_ + " --above " + ring_ + " --out " +
                                TempPath("unused.chash"));
  EXPECT_EQ(above.status, 2);
  EXPECT_NE(above.err.find("the highest config version there is"), std::string::npos) << above.err;
}

TEST_F(SnapshotCli, SubsetsOnlyOnRingsThatMaskExactly) {
  // A weighted ketama ring's points depend on every server: a subset (a
  // mask) would answer what libmemcached does not, so build refuses it.
  const std::string dir = DataPath("snapshot/");
  const CliRun refused =
      RunChash("build --servers " + dir + "servers-ketama-weighted-v1.4.txt --flavor ketama-md5 " +
               "--variant libmemcached-weighted --subset a=" + dir +
               "subset-ketama-weighted-v1.4.txt --out " + ring_);
  EXPECT_EQ(refused.status, 2) << refused.err;
  EXPECT_NE(refused.err.find("subset 'a': a ketama-md5 ring of these options cannot answer a "
                             "subset exactly"),
            std::string::npos)
      << refused.err;
  // The file chash 1.0.0 wrote so republishes without its subset, saying so.
  const CliRun republished = RunChash("build --from " + dir +
                                      "ketama-weighted-subsets-v1.4.chash --config-version 2 --out " +
                                      ring_);
  ASSERT_EQ(republished.status, 0) << republished.err;
  EXPECT_NE(republished.err.find("1 subset(s) are left out: a ketama-md5 ring"), std::string::npos)
      << republished.err;
  const CliRun inspected = RunChash("inspect " + ring_);
  ASSERT_EQ(inspected.status, 0) << inspected.err;
  EXPECT_EQ(inspected.out.find("subset "), std::string::npos) << inspected.out;
  // The same ring: the fingerprint line of the file it came from.
  const CliRun original = RunChash("inspect " + dir + "ketama-weighted-subsets-v1.4.chash");
  ASSERT_EQ(original.status, 0) << original.err;
  const auto fingerprint = [](const std::string& text) {
    const size_t at = text.find("fingerprint ");
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
  };
  EXPECT_FALSE(fingerprint(original.out).empty()) << original.out;
  EXPECT_EQ(fingerprint(inspected.out), fingerprint(original.out));
  EXPECT_NE(original.out.find("subset            a: 2 servers"), std::string::npos) << original.out;
}

TEST_F(SnapshotCli, ExpiryIsWrittenShownAndEnforced) {
  const CliRun built = RunChash("build --servers " + servers_ + " --mode pingora-v1 --expires 2h --out " +
                                ring_);
  ASSERT_EQ(built.status, 0) << built.err;
  EXPECT_NE(built.out.find(", expires 20"), std::string::npos) << built.out;
  const CliRun json = RunChash("inspect " + ring_ + " --json");
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_NE(json.out.find("\"expires\":\"20"), std::string::npos) << json.out;
  EXPECT_EQ(RunChash("verify " + ring_).status, 0);
  // A time in the past is refused at build; a file already expired at load.
  EXPECT_EQ(RunChash("build --servers " + servers_ + " --mode pingora-v1 --expires @1000 --out " +
                     ring_)
                .status,
            2);
  for (const std::string bad : {"tomorrow", "5x", "-3d", "2026-13-45T00:00:00Z", "@"}) {
    const CliRun run = RunChash("build --servers " + servers_ + " --expires " + bad + " --out " +
                                ring_);
    EXPECT_EQ(run.status, 2) << bad;
    EXPECT_NE(run.err.find("--expires takes"), std::string::npos) << bad << ": " << run.err;
  }
}

TEST_F(SnapshotCli, ARingThatRoutesNothingIsRefused) {
  const std::string drained = WriteTemp("drained.servers", "10.0.0.1:80 0\n10.0.0.2:80 0\n");
  const CliRun refused = RunChash("build --servers " + drained + " --out " + ring_);
  EXPECT_EQ(refused.status, 2);
  EXPECT_NE(refused.err.find("no points"), std::string::npos) << refused.err;
  EXPECT_EQ(RunChash("build --servers " + drained + " --allow-empty --out " + ring_).status, 0);
  for (const std::string command : {"stats", "plan"}) {
    const CliRun run = RunChash(command + " --servers " + drained);
    EXPECT_EQ(run.status, 2) << command << ": " << run.out;
    EXPECT_NE(run.err.find(command == "plan" ? "nothing to plan" : "no points"), std::string::npos)
        << command << ": " << run.err;
  }
  const CliRun stats = RunChash("stats --ring " + ring_);
  EXPECT_EQ(stats.status, 2) << stats.out;
  const CliRun diff =
      RunChash("diff --servers " + servers_ + " --mode pingora-v1 --new-servers " + drained);
  EXPECT_EQ(diff.status, 2) << diff.out;
  EXPECT_NE(diff.err.find("the new ring has no points"), std::string::npos) << diff.err;
  const std::string empty = WriteTemp("empty.servers", "");
  EXPECT_EQ(RunChash("stats --servers " + empty).status, 2);
}

TEST_F(SnapshotCli, ExpiresIsWrittenAndEnforced) {
  const long long now = static_cast<long long>(std::time(nullptr));
  const std::string later = TempPath("later.chash");
  ASSERT_EQ(RunChash("build --servers " + servers_ + " --mode pingora-v1 --config-version 3" +
                     " --expires " + std::to_string(now + 3600) + " --out " + later)
                .status,
            0);
  const CliRun fresh = RunChash("inspect " + later + " --json");
  ASSERT_EQ(fresh.status, 0) << fresh.err;
  EXPECT_NE(fresh.out.find("\"expires\":\"20"), std::string::npos) << fresh.out;
  const std::string stale = TempPath("stale.chash");
  EXPECT_EQ(RunChash("build --from " + later + " --config-version 4 --expires " +
                     std::to_string(now - 60) + " --out " + stale)
                .status,
            2)
      << "an expiry in the past is refused";
  ASSERT_EQ(RunChash("build --from " + later + " --config-version 4 --expires " +
                     std::to_string(now - 60) + " --allow-expired --out " + stale)
                .status,
            0);
  const CliRun expired = RunChash("inspect " + stale + " --json");
  EXPECT_EQ(expired.status, 2);
  EXPECT_NE(expired.out.find("\"failed_check\":\"expired\""), std::string::npos) << expired.out;
  EXPECT_EQ(RunChash("build --servers " + servers_ + " --expires 0 --out " + stale).status, 2);
  std::remove(later.c_str());
  std::remove(stale.c_str());
}

TEST_F(SnapshotCli, MigrationBetweenSnapshotsEqualsMigrationBetweenServers) {
  // what the nginx module's chash_migrate must pick first: the same lines as
  // the --servers form, and with --subset each key's subset in its own ring
  const std::string next = TempPath("next.chash");
  const std::string subset = WriteTemp("subset.txt", "10.0.0.1:80\n10.0.0.7:80\n10.0.0.9:80\n");
  const std::string servers = WriteTemp(
      "mig.servers", "10.0.0.1:80 1\n10.0.0.2:80 2\n10.0.0.7:80 1\n10.0.0.9:80 3\n10.0.0.4:80 1\n");
  ASSERT_EQ(RunChash("build --servers " + servers + " --mode pingora-v1 --subset a=" + subset +
                     " --out " + ring_)
                .status,
            0);
  ASSERT_EQ(RunChash("build --servers " + servers + " --mode pingora-v2 --multiple 16 --subset a=" +
                     subset + " --out " + next)
                .status,
            0);
  const std::string keys = DataPath("nginx/a.keys");
  const CliRun rings = RunChash("route --ring " + ring_ + " --new-ring " + next +
                                " --rollout 30% --seed 5 --keys " + keys);
  const CliRun built = RunChash("route --servers " + servers +
                                " --mode pingora-v1 --new-mode pingora-v2 --new-multiple 16"
                                " --rollout 30% --seed 5 --keys " + keys);
  ASSERT_EQ(rings.status, 0) << rings.err;
  ASSERT_EQ(built.status, 0) << built.err;
  EXPECT_NE(rings.out.find(",new\n"), std::string::npos);
  EXPECT_NE(rings.out.find(",old\n"), std::string::npos);
  EXPECT_EQ(rings.out, built.out);

  const CliRun sub = RunChash("route --ring " + ring_ + " --new-ring " + next +
                              " --rollout 30% --seed 5 --subset a --keys " + keys);
  const CliRun old_sub = RunChash("route --ring " + ring_ + " --subset a --keys " + keys);
  const CliRun new_sub = RunChash("route --ring " + next + " --subset a --keys " + keys);
  ASSERT_EQ(sub.status, 0) << sub.err;
  const auto lines = [](const std::string& text) {
    std::vector<std::string> out;
    for (size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1) {
      out.push_back(text.substr(at, nl - at));
    }
    return out;
  };
  const std::vector<std::string> got = lines(sub.out), sides = lines(rings.out),
                                 olds = lines(old_sub.out), news = lines(new_sub.out);
  ASSERT_EQ(got.size(), sides.size());
  ASSERT_EQ(got.size(), olds.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const bool is_new = sides[i].size() > 4 && sides[i].substr(sides[i].size() - 4) == ",new";
    EXPECT_EQ(got[i], (is_new ? news[i] : olds[i]) + (is_new ? ",new" : ",old")) << i;
  }
  EXPECT_EQ(RunChash("route --ring " + ring_ + " --new-ring " + next +
                     " --rollout 5% --subset nosuch --keys " + keys)
                .status,
            2);
  EXPECT_EQ(RunChash("route --ring " + ring_ + " --new-ring " + next +
                     " --new-mode nginx --rollout 5% --keys " + keys)
                .status,
            2);
  std::remove(next.c_str());
}

TEST_F(SnapshotCli, UsageErrors) {
  EXPECT_EQ(RunChash("route --ring " + ring_ + " --servers " + servers_, "k\n").status, 2);
  EXPECT_EQ(RunChash("route --servers " + servers_ + " --trusted-key x", "k\n").status, 2);
  EXPECT_EQ(RunChash("build --servers " + servers_).status, 2);          // no --out
  EXPECT_EQ(RunChash("build --servers " + servers_ + " --subset x --out " + ring_).status, 2);
  EXPECT_EQ(RunChash("verify").status, 2);
  EXPECT_EQ(RunChash("keygen").status, 2);
  const CliRun missing = RunChash("verify /nonexistent/ring");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("io:"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace chash
