// `chash ... --nginx-conf FILE --upstream NAME` through the real binary: the
// servers of an nginx config give the same ring as a servers file with the
// same lines (and the real nginx's answers, tests/data/nginx/a.csv), `down`
// is routed around as nginx does, and bad configs fail with FILE:LINE.
// The configs are in tests/data/nginx-conf/ (see its README).
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "cli_run.h"
#include "test_util.h"

namespace chash {
namespace {

using testing::CliRun;
using testing::DataPath;
using testing::ReadLines;
using testing::RunChash;
using testing::SplitLines;
using testing::WriteTemp;

const std::string& Conf() {
  static const std::string* path = new std::string(DataPath("nginx-conf/nginx.conf"));
  return *path;
}

std::string Upstream(const std::string& name) { return "--nginx-conf " + Conf() + " --upstream " + name; }

// JSON output without its "servers":"..." fields (they name the input).
std::string WithoutServersField(const std::string& json) {
  return std::regex_replace(json, std::regex("\"servers\":\"[^\"]*\""), "\"servers\":\"-\"");
}

TEST(NginxConfCli, RoutesAsTheRealNginxDid) {
  const std::string keys = DataPath("nginx/a.keys");
  const CliRun conf = RunChash("route " + Upstream("cache") + " --keys " + keys);
  ASSERT_EQ(conf.status, 0) << conf.err;
  EXPECT_EQ(conf.err, "");
  const CliRun file = RunChash("route --servers " + DataPath("nginx/a.servers") + " --keys " + keys);
  ASSERT_EQ(file.status, 0) << file.err;
  EXPECT_EQ(conf.out, file.out);
  // Key by key against what nginx 1.22.1 logged for the same upstream.
  std::vector<std::string> expected;
  for (const std::string& line : ReadLines(DataPath("nginx/a.csv"))) {
    if (!line.empty() && line[0] != '#') expected.push_back(line);
  }
  const std::vector<std::string> got = SplitLines(conf.out);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], expected[i]) << "line " << i + 1;
}

TEST(NginxConfCli, StatsPlanAndDiffSeeTheRingOfTheSameServers) {
  const std::string fleet = DataPath("nginx-conf/fleet.servers");
  for (const char* command : {"stats --json", "plan --json --rings 4 --multiples 16,160"}) {
    const CliRun conf = RunChash(std::string(command) + " " + Upstream("edge"));
    const CliRun file = RunChash(std::string(command) + " --servers " + fleet);
    ASSERT_EQ(conf.status, 0) << command << ": " << conf.err;
    ASSERT_EQ(file.status, 0) << command << ": " << file.err;
    // build_ms differs from run to run: compare everything else.
    const std::regex build_ms("\"build_ms\":[0-9.e+-]+");
    EXPECT_EQ(std::regex_replace(WithoutServersField(conf.out), build_ms, ""),
              std::regex_replace(WithoutServersField(file.out), build_ms, ""))
        << command;
  }
  // Two upstreams of one config against two servers files.
  const CliRun conf = RunChash("diff --json " + Upstream("edge") + " --new-upstream edge_next");
  const CliRun file = RunChash("diff --json --servers " + fleet + " --new-servers " +
                               DataPath("nginx-conf/fleet_next.servers"));
  ASSERT_EQ(conf.status, 0) << conf.err;
  ASSERT_EQ(file.status, 0) << file.err;
  EXPECT_EQ(WithoutServersField(conf.out), WithoutServersField(file.out));
  EXPECT_NE(conf.out.find("\"servers\":\"" + Conf() + " upstream edge_next\""), std::string::npos)
      << conf.out;
}

// `down` keeps the server's points (stats above saw the whole fleet) and
// route skips it point by point, as nginx's get_chash_peer does. This ring
// has no collisions, so that walk is exactly `route --down`.
TEST(NginxConfCli, RoutesAroundDownServersAsNginxDoes) {
  const std::string fleet = DataPath("nginx-conf/fleet.servers");
  const CliRun stats = RunChash("stats --json --servers " + fleet);
  ASSERT_EQ(stats.status, 0) << stats.err;
  ASSERT_NE(stats.out.find("\"collisions\":0,"), std::string::npos) << stats.out;
  std::string keys;
  for (int i = 0; i < 3000; ++i) keys += "/object/" + std::to_string(i) + "\n";
  const CliRun conf = RunChash("route " + Upstream("edge"), keys);
  ASSERT_EQ(conf.status, 0) << conf.err;
  const std::string down = WriteTemp("down.txt", "10.0.0.4:443\n");
  const CliRun masked = RunChash("route --servers " + fleet + " --down " + down, keys);
  ASSERT_EQ(masked.status, 0) << masked.err;
  EXPECT_EQ(conf.out, masked.out);
  EXPECT_EQ(conf.out.find(",10.0.0.4:443\n"), std::string::npos);
  // ... and without `down`, 10.0.0.4 would own a share of these keys.
  const CliRun all = RunChash("route --servers " + fleet, keys);
  ASSERT_EQ(all.status, 0) << all.err;
  EXPECT_NE(all.out.find(",10.0.0.4:443\n"), std::string::npos);
  // `down` is nginx's failover: not combinable with chash's own masks.
  const CliRun combined = RunChash("route " + Upstream("edge") + " --down " + down, keys);
  EXPECT_EQ(combined.status, 2);
  EXPECT_NE(combined.err.find("marks servers `down`"), std::string::npos) << combined.err;
}

// nginx gives up on the ring after 21 points of down servers in a row and
// picks by round robin: route says how many keys that was.
TEST(NginxConfCli, CountsTheKeysNginxSendsToRoundRobin) {
  const std::string conf = WriteTemp(
      "long_runs.conf",
      "events {}\nhttp {\n  upstream u {\n    hash $request_uri consistent;\n"
      "    server 10.0.0.1:443 weight=200 down;\n    server 10.0.0.2:443;\n  }\n}\n");
  std::string keys;
  std::vector<std::string> key_list;
  for (int i = 0; i < 2000; ++i) {
    key_list.push_back("/k" + std::to_string(i));
    keys += key_list.back() + "\n";
  }
  // Expected from the ring itself: the points from each key's to the first
  // of 10.0.0.2.
  const Ring ring = testing::MustBuild({{"10.0.0.1:443", 200, 1}, {"10.0.0.2:443", 1, 2}}, {});
  uint64_t expected = 0;
  for (const std::string& key : key_list) {
    PointCursor cursor = ring.Walk(key);
    int down_points = 0;
    while (cursor.node() == 0) {
      ++down_points;
      cursor.Advance();
    }
    if (down_points > 20) ++expected;
  }
  ASSERT_GT(expected, 0u);
  const CliRun run = RunChash("route --nginx-conf " + conf + " --upstream u", keys);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out.find("10.0.0.1"), std::string::npos);
  EXPECT_EQ(run.err, "chash route: note: " + std::to_string(expected) +
                         " keys met 21 points of `down` servers in a row: nginx falls back to "
                         "round robin for them; printed is the next server up on the ring\n");
}

TEST(NginxConfCli, BackupBeforeHashIsLeftOffTheRingWithANote) {
  const CliRun run = RunChash("route " + Upstream("with_backup"), "a\nb\nc\nd\n");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.err.find(DataPath("nginx-conf/conf.d/edge.conf") +
                         ":28: backup server \"10.0.0.9:443\" is not on nginx's ring"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(run.out.find("10.0.0.9"), std::string::npos);
}

TEST(NginxConfCli, ReadsStreamUpstreamsAndQuotedServers) {
  const CliRun run = RunChash("stats --json " + Upstream("tcp_backends"));
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("\"nodes\":2,"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("\"points_generated\":480,"), std::string::npos) << run.out;
}

struct ErrorCase {
  std::string file;      // under nginx-conf/errors/
  std::string expected;  // the stderr text after "chash stats: "
};

TEST(NginxConfCli, ErrorsNameTheFileAndLine) {
  const std::string dir = DataPath("nginx-conf/errors/");
  for (const ErrorCase& c : std::vector<ErrorCase>{
           // nginx's own messages (checked with nginx -t, see the README).
           {"backup_after_hash.conf",
            "backup_after_hash.conf:6: balancing method does not support parameter \"backup\""},
           {"weight_zero.conf", "weight_zero.conf:5: invalid parameter \"weight=0\""},
           {"unknown_parameter.conf", "unknown_parameter.conf:5: invalid parameter \"slow_start=10s\""},
           {"no_servers.conf", "no_servers.conf:5: no servers are inside upstream"},
           {"server_arguments.conf",
            "server_arguments.conf:5: invalid number of arguments in \"server\" directive"},
           {"unexpected_brace.conf", "unexpected_brace.conf:8: unexpected \"}\""},
           {"unexpected_eof.conf", "unexpected_eof.conf:7: unexpected end of file, expecting \"}\""},
           {"include_missing.conf", "include_missing.conf:3: open() \"" + dir +
                                        "inc/missing.conf\" failed (2: No such file or directory)"},
           {"in_include.conf", "inc/upstream_bad_weight.inc:4: invalid parameter \"weight=x\""},
           // Where nginx builds no ring, or chash's address check speaks.
           {"not_consistent.conf", "not_consistent.conf:4: \"hash KEY;\" without \"consistent\""},
           {"round_robin.conf", "round_robin.conf:3: upstream \"u\" has no \"hash KEY consistent;\""},
           {"bad_port.conf", "bad_port.conf:6: node 1: address '10.0.0.2:99999': port must be 1..65535"},
       }) {
    const CliRun run = RunChash("stats --nginx-conf " + dir + c.file + " --upstream u");
    EXPECT_EQ(run.status, 2) << c.file;
    EXPECT_EQ(run.out, "") << c.file;
    EXPECT_EQ(run.err.rfind("chash stats: " + dir + c.expected, 0), 0u)
        << c.file << ": " << run.err;
  }
}

// `stats --nginx-conf FILE --upstream u`, bounded in time and memory (a
// reader that loops or reads without end is stopped, and fails the test).
CliRun StatsBounded(const std::string& file) {
  return testing::RunChashBounded("stats --nginx-conf " + file + " --upstream u");
}

std::string Http(const std::string& upstreams) {
  return "events {}\nhttp {\n" + upstreams + "}\n";
}

const char kU[] = "    upstream u {\n        hash $request_uri consistent;\n"
                  "        server 10.0.0.1:80;\n    }\n";

// Each config below is refused by nginx 1.22 (the differential corpus in
// tests/data/nginx-conf/edges/ records its verdicts); chash read them before.
TEST(NginxConfCli, RefusesWhatNginxRefusesInAndAroundUpstreams) {
  struct Case {
    std::string name, text, expected;  // expected: after "FILE:"
  };
  const std::vector<Case> cases = {
      // A typo drops a server: nginx refuses the directive.
      {"typo", Http("    upstream u {\n        hash $request_uri consistent;\n"
                    "        server 10.0.0.1:80;\n        sever 10.0.0.2:80;\n    }\n"),
       "6: unknown directive \"sever\""},
      {"two_http", Http(kU) + "http {\n}\n", "8: \"http\" directive is duplicate"},
      // nginx refuses a second upstream of one name, whichever is asked for.
      {"duplicate_other", Http(kU + std::string("    upstream a { server 10.0.0.2:80; }\n"
                                                "    upstream A { server 10.0.0.3:80; }\n")),
       "8: duplicate upstream \"A\""},
      {"keepalive_in_stream",
       "events {}\nstream {\n    upstream u {\n        hash $remote_addr consistent;\n"
       "        keepalive 2;\n        server 10.0.0.1:80;\n    }\n}\n",
       "5: \"keepalive\" directive is not allowed here"},
  };
  for (const Case& c : cases) {
    const std::string file = WriteTemp("edge_" + c.name + ".conf", c.text);
    const CliRun run = StatsBounded(file);
    EXPECT_EQ(run.status, 2) << c.name << ": " << run.err;
    EXPECT_EQ(run.out, "") << c.name;
    EXPECT_EQ(run.err.rfind("chash stats: " + file + ":" + c.expected, 0), 0u)
        << c.name << ": " << run.err;
  }
}

// nginx's ngx_parse_time skips the spaces after a unit: "1h 30s" is 3,630 s.
TEST(NginxConfCli, ReadsTimesAsNginxParsesThem) {
  for (const char* timeout : {"1h 30s", "1h30m", "10", "30 "}) {
    const std::string file = WriteTemp(
        "fail_timeout.conf",
        Http("    upstream u {\n        hash $request_uri consistent;\n"
             "        server 10.0.0.1:80 \"fail_timeout=" + std::string(timeout) + "\";\n    }\n"));
    const CliRun run = StatsBounded(file);
    EXPECT_EQ(run.status, 0) << timeout << ": " << run.err;
  }
  for (const char* timeout : {"30 s", " 30s", "1ms", "s", "1d1d"}) {
    const std::string file = WriteTemp(
        "fail_timeout.conf",
        Http("    upstream u {\n        hash $request_uri consistent;\n"
             "        server 10.0.0.1:80 \"fail_timeout=" + std::string(timeout) + "\";\n    }\n"));
    const CliRun run = StatsBounded(file);
    EXPECT_EQ(run.status, 2) << timeout;
    EXPECT_NE(run.err.find(file + ":5: invalid parameter \"fail_timeout=" + timeout + "\""),
              std::string::npos)
        << timeout << ": " << run.err;
  }
}

// 400 KB of nested blocks: each level was a recursion; now the depth is
// bounded and named with the line.
TEST(NginxConfCli, RefusesBlocksNestedPastTheLimit) {
  const size_t levels = 100000;
  std::string text = "events {}\nhttp {\n";
  for (size_t i = 0; i < levels; ++i) text += "a{";
  text += "\n";
  for (size_t i = 0; i < levels; ++i) text += "}";
  text += "\n}\n";
  const std::string file = WriteTemp("deep.conf", text);
  const CliRun run = StatsBounded(file);
  EXPECT_EQ(run.status, 2) << run.err.substr(0, 300);
  EXPECT_EQ(run.err.rfind("chash stats: " + file + ":3: blocks nested deeper than 64 levels", 0),
            0u)
      << run.err.substr(0, 300);
}

// An include reads a regular file up to its size: /dev/zero (which nginx
// reads as empty, fstat saying 0 bytes) and a directory are refused by
// name instead of read until memory runs out.
TEST(NginxConfCli, IncludesReadOnlyRegularFiles) {
  for (const std::string& target : {std::string("/dev/zero"), ::testing::TempDir()}) {
    const std::string file =
        WriteTemp("include_special.conf", Http("    include " + target + ";\n" + kU));
    const CliRun run = StatsBounded(file);
    EXPECT_EQ(run.status, 2) << target;
    EXPECT_NE(run.err.find(file + ":3: include \"" + target +
                           "\": not a regular file: chash reads only regular config files"),
              std::string::npos)
        << run.err;
  }
}

TEST(NginxConfCli, OptionErrors) {
  const CliRun unknown = RunChash("stats " + Upstream("nope"));
  EXPECT_EQ(unknown.status, 2);
  EXPECT_EQ(unknown.err, "chash stats: " + Conf() +
                             ": no upstream \"nope\" in http or stream (upstreams: cache, edge, "
                             "edge_next, with_backup, tcp_backends)\n");
  const CliRun no_upstream = RunChash("stats --nginx-conf " + Conf());
  EXPECT_EQ(no_upstream.status, 2);
  EXPECT_NE(no_upstream.err.find("--nginx-conf needs --upstream NAME"), std::string::npos);
  const CliRun no_conf = RunChash("stats --upstream cache");
  EXPECT_EQ(no_conf.status, 2);
  EXPECT_NE(no_conf.err.find("--upstream needs --nginx-conf FILE"), std::string::npos);
  const CliRun both = RunChash("stats --servers " + DataPath("nginx/a.servers") + " " +
                               Upstream("cache"));
  EXPECT_EQ(both.status, 2);
  EXPECT_NE(both.err.find("cannot be combined"), std::string::npos);
  // The upstream name is compared as nginx does, ignoring case.
  EXPECT_EQ(RunChash("stats " + Upstream("CACHE")).status, 0);
}

}  // namespace
}  // namespace chash
