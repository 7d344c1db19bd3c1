// The chash tool as a user meets it: errors on stderr naming FILE:LINE with
// exit status 2, keys from a file or stdin, the servers file format.
#include <cstdio>
#include <fstream>
#include <regex>
#include <string>
#include <utility>
#include <sstream>
#include <vector>

#include "chash/version.h"
#include "cli_run.h"
#include "test_util.h"

namespace chash {
namespace {

using testing::CliRun;
using testing::JsonField;
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
  // The list is the library's, in table order: a new flavor needs no edit here.
  std::string every_flavor;
  for (uint32_t flavor = 0; flavor < chash::testing::FirstUnknownFlavor(); ++flavor) {
    every_flavor += std::string(flavor == 0 ? "" : ", ") + chash_flavor_name(flavor);
  }
  ASSERT_NE(every_flavor.find("nginx, pingora-v1"), std::string::npos) << every_flavor;
  ExpectUsageError(RunChash("route --servers " + servers + " --mode frobnicate"),
                   "unknown flavor 'frobnicate' (expected " + every_flavor + ")");
  ExpectUsageError(RunChash("route --servers " + servers + " --bogus"), "unknown option '--bogus'");
  ExpectUsageError(RunChash("route --servers /nonexistent/x"), "/nonexistent/x:");
  ExpectUsageError(RunChash("route --servers " + servers + " --keys /nonexistent/k"),
                   "/nonexistent/k:");
  ExpectUsageError(RunChash("frobnicate"), "unknown command 'frobnicate'");
  const std::string drained = WriteTemp("s9", "10.0.0.1:80 0\n");
  ExpectUsageError(RunChash("route --servers " + drained, "a\n"), "the ring has no points");
}

// ---- The other programs' flavors -------------------------------------------------------
// Their answers against every recorded golden set: tests/oracles/cli_golden.py
// (ctest Oracles.CliRoutesAsTheRealPrograms). Here: one set through the
// tool from C++, and what the tool refuses.

// `key,ADDR` rows of a golden answers file, comments left out.
std::vector<std::pair<std::string, std::string>> GoldenRows(const std::string& relative) {
  std::ifstream in(testing::DataPath(relative), std::ios::binary);
  EXPECT_TRUE(in.good()) << relative;
  std::vector<std::pair<std::string, std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t comma = line.rfind(',');
    rows.emplace_back(line.substr(0, comma), line.substr(comma + 1));
  }
  return rows;
}

// A golden answers file as `chash route` is asked it: the keys, one a line,
// and the KEY,ADDR lines it must print.
struct GoldenRoutes {
  size_t rows = 0;
  std::string keys, expected;
};

GoldenRoutes GoldenRoutesOf(const std::string& relative) {
  GoldenRoutes golden;
  for (const auto& [key, addr] : GoldenRows(relative)) {
    ++golden.rows;
    golden.keys += key + "\n";
    golden.expected += key + "," + addr + "\n";
  }
  return golden;
}

// `chash route ARGS` prints the golden answers (`what` names the case).
void ExpectRoutes(const std::string& args, const GoldenRoutes& golden, const std::string& what) {
  const CliRun run = RunChash("route " + args, golden.keys);
  ASSERT_EQ(run.status, 0) << what << ": " << run.err;
  EXPECT_EQ(run.out, golden.expected) << what;
}

// A config's selector (a backend, a pool) and the golden set of the real
// program's answers for it: FOLDER/SET.csv, of `rows` keys.
struct SelectorAnswers {
  std::string selector, set;
  size_t rows;
};

// `chash route FLAGS SELECTOR` prints each selector's golden answers.
void ExpectRoutesOfEach(const std::string& flags, const std::string& folder,
                        const std::vector<SelectorAnswers>& cases) {
  for (const SelectorAnswers& c : cases) {
    const GoldenRoutes golden = GoldenRoutesOf(folder + "/" + c.set + ".csv");
    ASSERT_EQ(golden.rows, c.rows) << c.set;
    ExpectRoutes(flags + c.selector, golden, c.selector);
  }
}

TEST(CliPrograms, HaproxyRoutesAsTheRealHaproxy) {
  // haproxy 2.6's answers (tests/data/haproxy/sets.txt: default_uri_20,
  // `hash-type consistent`, balance uri).
  const GoldenRoutes golden = GoldenRoutesOf("haproxy/default_uri_20.csv");
  ASSERT_GT(golden.rows, 100u);
  ExpectRoutes("--flavor haproxy --balance uri --servers " +
                   testing::DataPath("haproxy/default_uri_20.servers"),
               golden, "balance uri");
  // Without --balance the query string is hashed too: some answers change.
  const CliRun whole = RunChash("route --flavor haproxy --balance uri-whole --servers " +
                                    testing::DataPath("haproxy/default_uri_20.servers"),
                                golden.keys);
  ASSERT_EQ(whole.status, 0) << whole.err;
  EXPECT_NE(whole.out, golden.expected);
}

TEST(CliPrograms, SnapshotsOfProgramRingsRouteAsTheRealPrograms) {
  // The real haproxy 2.6's answers (default_uri_20, balance uri) and the real
  // nutcracker 0.5's (crc32a_20: named servers, whose points come from their
  // names), through a snapshot file built by `chash build` and through its
  // republication by `build --from` (the ids and names travel in the file).
  const std::string dir = ::testing::TempDir();
  struct Case {
    std::string set, servers, build_options, route_options;
  };
  for (const Case& c :
       {Case{"haproxy/default_uri_20", "haproxy/default_uri_20.servers", "--flavor haproxy",
             "--balance uri"},
        Case{"twemproxy/crc32a_20", "twemproxy/named_20.servers",
             "--flavor ketama-md5 --variant twemproxy --key-hash crc32a", ""}}) {
    const GoldenRoutes golden = GoldenRoutesOf(c.set + ".csv");
    ASSERT_GE(golden.rows, 100u) << c.set;
    const std::string first = dir + "/program_v3.chash";
    const std::string second = dir + "/program_v4.chash";
    const CliRun built = RunChash("build " + c.build_options + " --servers " +
                                  testing::DataPath(c.servers) + " --config-version 3 --out " +
                                  first);
    ASSERT_EQ(built.status, 0) << built.err;
    const CliRun republished =
        RunChash("build --from " + first + " --above " + first + " --out " + second);
    ASSERT_EQ(republished.status, 0) << republished.err;
    for (const std::string& ring : {first, second}) {
      ExpectRoutes("--ring " + ring + " " + c.route_options, golden, c.set + " through " + ring);
    }
    const CliRun refused = RunChash("build --from " + first + " --above " + first +
                                    " --hash-function djb2 --out " + second);
    EXPECT_NE(refused.status, 0);
    EXPECT_NE(refused.err.find("cannot be combined"), std::string::npos) << refused.err;
    std::remove(first.c_str());
    std::remove(second.c_str());
  }
}

TEST(CliPrograms, MigrationFromHaproxyStartsOnHaproxysPlacement) {
  // The walkthrough of tools/cli/README.md: a fleet moves from HAProxy's
  // ring to a pingora-v2 ring over the same servers. At rollout 0 every key
  // is where the real haproxy 2.6 sent it (default_uri_20; keys without a
  // query string, which `balance uri` hashes whole); at 100% where the new
  // ring sends it; at 5% the keys that move are the share `diff` expects.
  const std::string servers = testing::DataPath("haproxy/default_uri_20.servers");
  const std::string dir = ::testing::TempDir();
  const std::string plain = dir + "/migration_new.servers";
  {
    std::ifstream in(servers);
    std::ofstream out(plain);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty() && line[0] != '#') out << line.substr(0, line.find(" id=")) << "\n";
    }
  }
  const std::string migrate = "route --flavor haproxy --servers " + servers +
                              " --new-flavor pingora-v2 --new-servers " + plain + " --rollout ";
  std::string keys, expected;
  size_t golden = 0;
  for (const auto& [key, addr] : GoldenRows("haproxy/default_uri_20.csv")) {
    if (key.find('?') != std::string::npos) continue;
    keys += key + "\n";
    expected += key + "," + addr + ",old\n";
    ++golden;
  }
  ASSERT_GT(golden, 50u);
  const CliRun start = RunChash(migrate + "0%", keys);
  ASSERT_EQ(start.status, 0) << start.err;
  EXPECT_EQ(start.out, expected);

  std::string many;
  for (int i = 0; i < 20000; ++i) many += "/objects/" + std::to_string(i) + "\n";
  const CliRun old_ring = RunChash("route --flavor haproxy --servers " + servers, many);
  const CliRun new_ring = RunChash("route --flavor pingora-v2 --servers " + plain, many);
  const CliRun done = RunChash(migrate + "100%", many);
  const CliRun five = RunChash(migrate + "5%", many);
  for (const CliRun* run : {&old_ring, &new_ring, &done, &five}) ASSERT_EQ(run->status, 0) << run->err;
  const auto answers = [](const std::string& out) {
    std::vector<std::string> servers_of;
    std::istringstream lines(out);
    std::string line;
    while (std::getline(lines, line)) {
      const size_t a = line.find(',');
      const size_t b = line.find(',', a + 1);
      servers_of.push_back(line.substr(a + 1, b == std::string::npos ? b : b - a - 1));
    }
    return servers_of;
  };
  EXPECT_EQ(answers(done.out), answers(new_ring.out));
  const std::vector<std::string> before = answers(old_ring.out), during = answers(five.out);
  ASSERT_EQ(before.size(), during.size());
  size_t moved = 0;
  for (size_t i = 0; i < before.size(); ++i) moved += before[i] != during[i];
  const CliRun diff = RunChash("diff --flavor haproxy --servers " + servers +
                               " --new-flavor pingora-v2 --new-servers " + plain +
                               " --rollout 5% --json");
  ASSERT_EQ(diff.status, 0) << diff.err;
  const double expected_share = std::stod(JsonField(diff.out, "moved_fraction_at_rollout"));
  EXPECT_NEAR(static_cast<double>(moved) / 20000.0, expected_share, 0.01)
      << moved << " of 20,000 keys moved";
  std::remove(plain.c_str());
}

TEST(CliPrograms, VarnishPrintsTheAddressAndHashesTheName) {
  // varnishd 7.1's answers for one backend named `only` at 127.0.15.1:80:
  // every key goes to it (url_single), printed as ADDR.
  const auto rows = GoldenRows("varnish/url_single.csv");
  ASSERT_FALSE(rows.empty());
  const CliRun run = RunChash("route --flavor varnish-shard --servers " +
                                  testing::DataPath("varnish/url_single.servers"),
                              rows[0].first + "\n");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, rows[0].first + "," + rows[0].second + "\n");
}

TEST(CliPrograms, HaproxyCfgRoutesAsTheRealHaproxy) {
  // haproxy-cfg/mixed_25.cfg is haproxy/mixed_25.servers as server lines;
  // backend `sdbm` sets `hash-type consistent sdbm`, backend `inherits` takes
  // `hash-type consistent wt6 avalanche` from defaults: the real haproxy's
  // answers for each are sdbm_uri_25 and wt6_avalanche_uri_25.
  const std::string cfg = testing::DataPath("haproxy-cfg/mixed_25.cfg");
  ExpectRoutesOfEach("--haproxy-cfg " + cfg + " --balance uri --backend ", "haproxy",
                     {{"sdbm", "sdbm_uri_25", 300}, {"inherits", "wt6_avalanche_uri_25", 300}});
  const CliRun stats = RunChash("stats --json --haproxy-cfg " + cfg + " --backend sdbm");
  EXPECT_EQ(stats.status, 0) << stats.err;
}

TEST(CliPrograms, DiffReadsAHaproxyCfg) {
  // The backend's ring against the same servers written as a servers file
  // with the same hash-type: nothing moves. The new ring takes the old one's
  // flavor and hash settings unless --new-flavor names another.
  const std::string cfg = testing::DataPath("haproxy-cfg/mixed_25.cfg");
  const std::string servers = testing::DataPath("haproxy/mixed_25.servers");
  const CliRun same =
      RunChash("diff --haproxy-cfg " + cfg + " --backend sdbm --new-servers " + servers);
  ASSERT_EQ(same.status, 0) << same.err;
  EXPECT_NE(same.out.find("old ring  " + cfg + " backend sdbm: haproxy"), std::string::npos)
      << same.out;
  EXPECT_NE(same.out.find("moved     0.000000% of the key space"), std::string::npos) << same.out;

  const std::string plain = ::testing::TempDir() + "/diff_cfg_plain.servers";
  {
    std::ifstream in(servers);
    std::ofstream out(plain);
    std::string line;
    while (std::getline(in, line)) {
      // ADDR WEIGHT, without HAProxy's id= and name=
      std::istringstream fields(line);
      std::string addr, weight;
      if (!line.empty() && line[0] != '#' && fields >> addr >> weight) {
        out << addr << " " << weight << "\n";
      }
    }
  }
  const CliRun v2 = RunChash("diff --haproxy-cfg " + cfg +
                             " --backend sdbm --new-flavor pingora-v2 --new-servers " + plain);
  ASSERT_EQ(v2.status, 0) << v2.err;
  EXPECT_NE(v2.out.find(": pingora-v2, 160 points per weight unit"), std::string::npos) << v2.out;
  EXPECT_EQ(v2.out.find("moved     0.000000% of the key space"), std::string::npos) << v2.out;
}

TEST(CliPrograms, HaproxyCfgErrors) {
  const std::string cfg = testing::DataPath("haproxy-cfg/mixed_25.cfg");
  ExpectUsageError(RunChash("route --haproxy-cfg " + cfg + " --backend nope", "a\n"),
                   cfg + ": no backend or listen section named 'nope'");
  ExpectUsageError(RunChash("route --haproxy-cfg " + cfg, "a\n"), "--haproxy-cfg needs --backend");
  ExpectUsageError(RunChash("route --backend sdbm --servers x", "a\n"),
                   "--backend needs --haproxy-cfg FILE");
  ExpectUsageError(
      RunChash("route --haproxy-cfg " + cfg + " --backend sdbm --hash-function djb2", "a\n"),
      "--haproxy-cfg and --hash-function cannot be combined");
  const std::string map_based = WriteTemp(
      "h1", "backend b\n  balance uri\n  server a 10.0.0.1:80 weight 2\n");
  ExpectUsageError(RunChash("route --haproxy-cfg " + map_based + " --backend b", "a\n"),
                   "uses hash-type map-based (the default): HAProxy keeps no ring for it");
  const std::string bad = WriteTemp(
      "h2", "backend b\n  balance uri\n  hash-type consistent\n  server a 10.0.0.1:80 weight 300\n");
  ExpectUsageError(RunChash("route --haproxy-cfg " + bad + " --backend b", "a\n"),
                   bad + ":4: 'server b/a' : weight of server a is not within 0 and 256 (300).");
  const std::string round_robin =
      WriteTemp("h3", "backend b\n  balance roundrobin\n  hash-type consistent\n  server a x:1\n");
  ExpectUsageError(RunChash("route --haproxy-cfg " + round_robin + " --backend b", "a\n"),
                   round_robin + ":2: balance roundrobin does not hash a key");
  const std::string function = WriteTemp(
      "h4", "backend b\n  balance uri\n  hash-type consistent md5\n  server a x:1\n");
  ExpectUsageError(RunChash("route --haproxy-cfg " + function + " --backend b", "a\n"),
                   function + ":3: 'hash-type' only supports 'sdbm', 'djb2', 'crc32', or 'wt6' "
                              "hash functions");
}

// The servers of a backend as `chash stats --json` reads them from a config
// ("ADDR WEIGHT" each, in order), or the error.
std::string HaproxyServers(const std::string& name, const std::string& cfg) {
  const std::string file = WriteTemp("haproxy_" + name + ".cfg", cfg);
  const CliRun run = testing::RunChashBounded("stats --json --haproxy-cfg " + file + " --backend b");
  if (run.status != 0) return "error: " + run.err;
  std::string servers;
  const std::regex share("\"address\":\"([^\"]*)\",\"weight\":([0-9]+)");
  for (auto it = std::sregex_iterator(run.out.begin(), run.out.end(), share);
       it != std::sregex_iterator(); ++it) {
    servers += (servers.empty() ? "" : ", ") + (*it)[1].str() + " " + (*it)[2].str();
  }
  return servers;
}

// What HAProxy 2.6 makes of each config (haproxy -c and its stats socket,
// recorded in tests/data/haproxy-cfg/edges/): the servers and weights of
// backend b, or a refusal. chash read each differently before.
TEST(CliPrograms, HaproxyCfgReadsLinesAsHaproxy26) {
  const std::string head = "defaults\n  mode http\nbackend b\n  balance uri\n  hash-type consistent\n";
  // default-server applies to the server lines after it, with the settings
  // in effect at each line; disabled and backup servers own no points.
  EXPECT_EQ(HaproxyServers("default_server",
                           head + "  server s1 127.0.0.1:80\n  default-server weight 5\n"
                                  "  server s2 127.0.0.2:80\n  default-server weight 7 backup\n"
                                  "  server s3 127.0.0.3:80 no-backup\n  server s4 127.0.0.4:80\n"
                                  "  default-server disabled\n  server s5 127.0.0.5:80\n"
                                  "  server s6 127.0.0.6:80 enabled\n"),
            "127.0.0.1:80 1, 127.0.0.2:80 5, 127.0.0.3:80 7, 127.0.0.4:80 0, 127.0.0.5:80 0, "
            "127.0.0.6:80 0");  // s6: enabled, but still a backup
  // Quotes and escapes: "weight" 10 is the keyword weight, 'backup' backup.
  EXPECT_EQ(HaproxyServers("quotes", head + "  server s1 127.0.0.1:80 \"weight\" 10\n"
                                            "  server s2 127.0.0.2:80 'backup'\n"
                                            "  server s3 127.0.0.3:80 we\\ight 3\n"),
            "error: chash stats: " + ::testing::TempDir() + testing::TempPrefix() +
                "haproxy_quotes.cfg:8: 'server b/s3' : unknown keyword 'we\\ight'\n");
  EXPECT_EQ(HaproxyServers("quotes_ok", head + "  server s1 127.0.0.1:80 \"weight\" 10\n"
                                               "  server s2 127.0.0.2:80 'backup'\n"
                                               "  server s3 127.0.0.3:80 weig\\x68t 3\n"),
            "127.0.0.1:80 10, 127.0.0.2:80 0, 127.0.0.3:80 3");
  // '#' starts a comment even inside a word.
  EXPECT_EQ(HaproxyServers("sharp", head + "  server s1 127.0.0.1:80#s1 weight 10\n"),
            "127.0.0.1:80 1");
  // .if blocks: HAProxy never declares the servers of a false one.
  EXPECT_EQ(HaproxyServers("if", head + ".if defined(CHASH_TEST_SURELY_UNSET)\n"
                                        "  server s1 127.0.0.1:80\n.elif 1 && !0\n"
                                        "  server s2 127.0.0.2:80 weight 2\n.else\n"
                                        "  server s3 127.0.0.3:80\n.endif\n"),
            "127.0.0.2:80 2");
  // Named defaults: `from` picks the section; the last one is not it.
  EXPECT_EQ(HaproxyServers("from", "defaults d1\n  mode http\n  balance uri\n"
                                   "  hash-type consistent\n  default-server weight 9\n"
                                   "defaults d2\n  mode tcp\nbackend b from d1\n"
                                   "  server s1 127.0.0.1:80\n"),
            "127.0.0.1:80 9");
}

TEST(CliPrograms, HaproxyCfgRefusesWhatHaproxy26Refuses) {
  const std::string head = "defaults\n  mode http\nbackend b\n  balance uri\n  hash-type consistent\n";
  struct Case {
    std::string name, cfg, expected;  // expected: after "FILE:"
  };
  const std::vector<Case> cases = {
      {"misspelled", head + "  server s1 127.0.0.1:80 Weight 10\n",
       "6: 'server b/s1' : unknown keyword 'Weight'"},
      {"same_name", head + "  server s1 127.0.0.1:80\n  server s1 127.0.0.2:80\n",
       "7: backend 'b', another server named 's1' was already defined at line 6"},
      // An L7 hash without mode http: HAProxy falls back to round robin.
      {"tcp_uri", "backend b\n  balance uri\n  hash-type consistent\n  server s1 127.0.0.1:80\n",
       "2: Layer 7 hash not possible for backend 'b' (needs 'mode http')"},
      {"unknown_keyword", head + "  hash-key id\n  server s1 127.0.0.1:80\n",
       "6: unknown keyword 'hash-key' in 'backend' section"},
      {"no_newline", head + "  server s1 127.0.0.1:80", "6: Missing LF on last line"},
      {"from_unknown", "backend b from nope\n  server s1 127.0.0.1:80\n",
       "1: defaults section 'nope' not found for backend 'b'"},
      {"unmatched_quote", head + "  server s1 \"127.0.0.1:80\n", "6: unmatched quote"},
      {"feature", head + ".if feature(OPENSSL)\n.endif\n  server s1 127.0.0.1:80\n",
       "6: '.if' predicate feature() depends on the haproxy binary"},
  };
  for (const Case& c : cases) {
    const std::string file = WriteTemp("haproxy_" + c.name + ".cfg", c.cfg);
    ExpectUsageError(RunChash("stats --haproxy-cfg " + file + " --backend b"),
                     file + ":" + c.expected);
  }
}

TEST(CliPrograms, NutcrackerYmlRoutesAsTheRealNutcracker) {
  // nutcracker-yml/pools.yml holds twemproxy/named_20.servers (pool `named`,
  // hash: crc32a) and weights_100.servers (pool `tagged`, no hash: the
  // default fnv1a_64, hash_tag "{}") as the oracle configured nutcracker 0.5:
  // the real nutcracker's answers are crc32a_20 and fnv1a_64_tag_100.
  const std::string yml = testing::DataPath("nutcracker-yml/pools.yml");
  ExpectRoutesOfEach("--nutcracker-yml " + yml + " --pool ", "twemproxy",
                     {{"named", "crc32a_20", 300}, {"tagged", "fnv1a_64_tag_100", 1000}});
  ExpectUsageError(RunChash("route --nutcracker-yml " + yml + " --pool modula", "a\n"),
                   "distribution modula: twemproxy keeps no ring for it");
  ExpectUsageError(RunChash("route --nutcracker-yml " + yml + " --pool nope", "a\n"),
                   yml + ": no pool named 'nope'");
  ExpectUsageError(RunChash("route --nutcracker-yml " + yml, "a\n"),
                   "--nutcracker-yml needs --pool NAME");
  ExpectUsageError(RunChash("route --nutcracker-yml " + yml + " --pool named --key-hash md5", "a\n"),
                   "--nutcracker-yml and --key-hash cannot be combined");
  const std::string bad = WriteTemp("y1", "a:\n  servers: [\n");
  ExpectUsageError(RunChash("route --nutcracker-yml " + bad + " --pool a", "a\n"), bad + ":");
  const std::string no_weight =
      WriteTemp("y2", "a:\n  distribution: ketama\n  servers:\n   - 127.0.0.1:11211\n");
  ExpectUsageError(RunChash("route --nutcracker-yml " + no_weight + " --pool a", "a\n"),
                   no_weight + ":4: directive \"servers\" has an invalid "
                               "\"hostname:port:weight [name]\"");
}

// Configs nutcracker 0.5.0 refuses (`nutcracker -t`; its reasons as it
// logs them), each read before as a ring: chash refuses each with that
// reason and the line. The differential corpus
// (tests/data/nutcracker-yml/edges/) records the real verdicts.
TEST(CliPrograms, NutcrackerYmlRefusesWhatNutcrackerRefuses) {
  const std::string pool = "a:\n  listen: 127.0.0.1:22121\n";
  const std::string servers = "  servers:\n   - 127.0.0.1:11211:1\n";
  struct Case {
    std::string name, text, expected;  // expected: after "FILE:"
  };
  const std::vector<Case> cases = {
      {"two_lists", pool + servers + "  servers:\n   - 127.0.0.2:11211:1\n",
       "6: has more than one sequence directive"},
      {"twice", pool + "  hash: md5\n  hash: md5\n" + servers, "4: directive \"hash\" is a duplicate"},
      {"two_documents", pool + servers + "---\nb:\n  listen: 127.0.0.1:22122\n" + servers,
       "5: nutcracker takes a file of exactly 1 YAML document; found 2"},
      {"anchor", "a: &base\n  listen: 127.0.0.1:22121\n" + servers, "1: anchor token is disallowed"},
      {"alias", pool + servers + "b: *x\n", "5: alias token is disallowed"},
      {"merge_key", pool + "  <<: x\n" + servers, "3: directive \"<<\" is unknown"},
      {"unknown", pool + "  hash_tagg: \"{}\"\n" + servers, "3: directive \"hash_tagg\" is unknown"},
      {"weight_zero", pool + "  servers:\n   - 127.0.0.1:11211:0\n",
       "4: directive \"servers\" has a zero weight"},
      {"pool_twice", pool + servers + "a:\n  listen: 127.0.0.1:22122\n" + servers,
       "5: has pools with same name 'a'"},
  };
  for (const Case& c : cases) {
    const std::string file = WriteTemp("nutcracker_" + c.name + ".yml", c.text);
    ExpectUsageError(RunChash("route --nutcracker-yml " + file + " --pool a", "a\n"),
                     file + ":" + c.expected);
  }
  // nutcracker's distribution is ketama unless the pool says otherwise.
  const std::string default_distribution = WriteTemp("nutcracker_default.yml", pool + servers);
  const CliRun run = RunChash("route --nutcracker-yml " + default_distribution + " --pool a", "k\n");
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "k,127.0.0.1:11211\n");
}

// A server without a host before its port: nutcracker -t takes it, and on
// port 11211 names it '' (the fuzzer's conf_readers found the reader handing
// back a server of no name); chash refuses it where it is written.
TEST(CliPrograms, NutcrackerYmlRefusesAServerWithoutAHost) {
  const std::string pool = "a:\n  listen: 127.0.0.1:22121\n  servers:\n";
  for (const std::string server : {":11211:1", ":1:1"}) {
    const std::string file = WriteTemp("nutcracker_no_host.yml", pool + "   - " + server + "\n");
    ExpectUsageError(RunChash("route --nutcracker-yml " + file + " --pool a", "a\n"),
                     file + ":4: server '" + server + "': an empty host: chash does not read it");
  }
}

// 200 KB of nested flow sequences cost libyaml time quadratic in the depth
// (27 s here); chash stops at the first level past its bound and names it.
TEST(CliPrograms, NutcrackerYmlBoundsTheNestingBeforeLibyamlsCost) {
  const std::string file = WriteTemp(
      "nutcracker_deep.yml", "a:\n  listen: 127.0.0.1:22121\n  servers: " + std::string(200000, '[') + "\n");
  const CliRun run = testing::RunChashBounded("stats --nutcracker-yml " + file + " --pool a", 10);
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err, "chash stats: " + file + ":3: YAML nested deeper than 64 levels: chash reads "
                     "no deeper\n");
}

TEST(CliPrograms, EnvoyClusterRoutesAsEnvoysTests) {
  // envoy-cluster/clusters.yaml holds the hosts of Envoy's own unit tests
  // ring_basic, ring_hash_key (envoy.lb hash_key metadata) and
  // maglev_weighted as clusters; the expected hosts are those tests'
  // assertions (tests/data/envoy/*.csv: request hash,host).
  const std::string yaml = testing::DataPath("envoy-cluster/clusters.yaml");
  size_t compared = 0;
  for (const std::string cluster : {"ring_basic", "ring_hash_key", "maglev_weighted"}) {
    const GoldenRoutes golden = GoldenRoutesOf("envoy/" + cluster + ".csv");
    ASSERT_GT(golden.rows, 0u) << cluster;
    ExpectRoutes("--by-hash --envoy-cluster " + yaml + " --cluster " + cluster, golden, cluster);
    compared += golden.rows;
  }
  EXPECT_EQ(compared, 60u);
  ExpectUsageError(RunChash("route --envoy-cluster " + yaml, "1\n"),
                   "4 clusters (ring_basic, ring_hash_key, maglev_weighted, round_robin): "
                   "--cluster NAME says which");
  ExpectUsageError(RunChash("route --envoy-cluster " + yaml + " --cluster round_robin", "1\n"),
                   "cluster lb_policy is 'ROUND_ROBIN': chash reads RING_HASH and MAGLEV");
  ExpectUsageError(
      RunChash("route --envoy-cluster " + yaml + " --cluster ring_basic --table-size 7", "1\n"),
      "--envoy-cluster and --table-size cannot be combined");
  ExpectUsageError(RunChash("route --cluster ring_basic --servers x", "1\n"),
                   "--cluster needs --envoy-cluster FILE");
}

TEST(CliPrograms, EnvoyClusterWeighsLocalitiesAndReadsThePriorityThatServes) {
  // envoy-cluster/localities.yaml: the hosts of Envoy's own locality tests
  // (ring and Maglev; a locality of no weight; 1,023 hosts against one of
  // weight 127) as clusters with locality_weighted_lb_config, whose
  // expected hosts are those tests' assertions; and ring_basic with a
  // priority-1 locality, which must not change ring_basic's answers.
  const std::string yaml = testing::DataPath("envoy-cluster/localities.yaml");
  size_t compared = 0;
  for (const auto& [cluster, answers] : std::vector<std::pair<std::string, std::string>>{
           {"ring_locality_tiny", "ring_locality_tiny"},
           {"ring_host_locality_tiny", "ring_host_locality_tiny"},
           {"ring_lopsided", "ring_lopsided"},
           {"maglev_locality_same", "maglev_locality_same"},
           {"maglev_locality_different", "maglev_locality_different"},
           {"ring_basic_failover", "ring_basic"}}) {
    const GoldenRoutes golden = GoldenRoutesOf("envoy/" + answers + ".csv");
    ASSERT_GT(golden.rows, 0u) << cluster;
    ExpectRoutes("--by-hash --envoy-cluster " + yaml + " --cluster " + cluster, golden, cluster);
    compared += golden.rows;
  }
  EXPECT_EQ(compared, 6u + 9u + 8u + 51u + 51u + 5u);

  // Host sums 65,537 and 65,539 (coprime): their least common multiple
  // passes 2^32, so no 32-bit integer weights have Envoy's ratios.
  const auto weighted_host = [](int octet, int weight) {
    return "      lb_endpoints:\n      - endpoint: {address: {socket_address: {address: 10.0.0." +
           std::to_string(octet) + ", port_value: 80}}}\n        load_balancing_weight: " +
           std::to_string(weight) + "\n";
  };
  const std::string wide = WriteTemp(
      "loc3", "clusters:\n- name: c\n  lb_policy: MAGLEV\n"
              "  common_lb_config: {locality_weighted_lb_config: {}}\n"
              "  load_assignment:\n    cluster_name: c\n    endpoints:\n"
              "    - locality: {zone: a}\n      load_balancing_weight: 1\n" +
                  weighted_host(1, 65537) +
                  "    - locality: {zone: b}\n      load_balancing_weight: 1\n" +
                  weighted_host(2, 65539));
  ExpectUsageError(RunChash("route --envoy-cluster " + wide, "k\n"),
                   "these locality weights need integer weights beyond 32 bits");
}

TEST(CliPrograms, EnvoyClusterEdgesRouteAsEnvoy) {
  // envoy-cluster/edges.yaml and edges-bootstrap.yaml: clusters at each
  // edge of Envoy's reading (locality order and the local locality,
  // addresses as Envoy prints them, YAML scalars as Envoy types them,
  // health, priorities, panic, Maglev tables smaller than the host set);
  // the expected hosts are tests/oracles/envoy_cluster_model.py's, an
  // independent model of Envoy's rules (tests/data/PROVENANCE.md).
  const std::string dir = testing::DataPath("envoy-cluster/");
  size_t compared = 0;
  for (const std::string cluster :
       {"ring_locality_order", "ring_locality_tuple_order", "ring_locality_merged",
        "ring_ipv6_canonical", "maglev_ipv6_canonical", "ring_hash_key_types",
        "ring_hostname_yes", "maglev_hostname_quoted_t", "ring_hostname_off", "ring_unhealthy",
        "maglev_panic", "ring_panic_threshold", "ring_failover_priority",
        "ring_priority_overprovisioned", "ring_integer_forms", "maglev_small_table",
        "maglev_small_table_weighted", "maglev_locality_small_table", "ring_local_locality"}) {
    const std::string file =
        dir + (cluster == "ring_local_locality" ? "edges-bootstrap.yaml" : "edges.yaml");
    const GoldenRoutes golden = GoldenRoutesOf("envoy-cluster/edges/" + cluster + ".csv");
    ASSERT_GT(golden.rows, 10u) << cluster;
    ExpectRoutes("--by-hash --envoy-cluster " + file + " --cluster " + cluster, golden, cluster);
    compared += golden.rows;
  }
  EXPECT_GT(compared, 4000u);
  // Zone b listed first, a ring of 5: Envoy's order (a, then b) gives
  // 10.1.0.1 two entries where the listed order gives 10.2.0.1 three.
  const CliRun order = RunChash(
      "route --by-hash --envoy-cluster " + dir + "edges.yaml --cluster ring_locality_order",
      "17000000000000000000\n17800000000000000000\n");
  EXPECT_EQ(order.out, "17000000000000000000,10.1.0.1:80\n17800000000000000000,10.1.0.2:80\n")
      << order.err;
  // What Envoy leaves out or ignores is said, not silent.
  const CliRun keys = RunChash(
      "route --by-hash --envoy-cluster " + dir + "edges.yaml --cluster ring_hash_key_types", "1\n");
  EXPECT_NE(keys.err.find("edges.yaml:117: hash_key '90' is a number to Envoy's YAML reader, not "
                          "a string: Envoy ignores it"),
            std::string::npos)
      << keys.err;
  const CliRun panic = RunChash(
      "route --by-hash --envoy-cluster " + dir + "edges.yaml --cluster maglev_panic", "1\n");
  EXPECT_NE(panic.err.find("priority 0 is in panic"), std::string::npos) << panic.err;
}

TEST(CliPrograms, EnvoyClusterRefusesByFileLineAndReason) {
  // envoy-cluster/refused.yaml: one cluster a refusal, each at its line
  // with Envoy's reason (its validation rule or its error text) or why one
  // ring cannot answer as Envoy does.
  const std::string yaml = testing::DataPath("envoy-cluster/refused.yaml");
  for (const auto& [cluster, fragment] : std::vector<std::pair<std::string, std::string>>{
           {"locality_weight_0",
            ":14: load_balancing_weight 0: Envoy refuses it (LocalityLbEndpoints."
            "load_balancing_weight: gte 1)"},
           {"ipv4_leading_zero", ":23: malformed IP address: '10.0.0.01'"},
           {"ipv6_interface_scope", ":30: malformed IP address: 'fe80::1%eth0'"},
           {"maglev_not_prime_localities",
            ":33: table_size 12: Envoy refuses it (\"The table size of maglev must be prime "
            "number\")"},
           {"port_above_65535", ":49: port_value 65536: Envoy refuses it (port_value: lte 65535)"},
           {"priority_above_128", ":55: priority 129: Envoy refuses it"},
           {"unknown_ring_key",
            ":60: ring_hash_lb_config: 'maxium_ring_size' is not a key chash reads here"},
           {"unknown_endpoint_key", ":73: lb_endpoint: 'load_balancing_wieght' is not a key"},
           {"bounded_loads", ":76: hash_balance_factor: bounded loads"},
           {"strict_dns", ":83: cluster type STRICT_DNS: chash reads STATIC clusters"},
           {"hostname_missing",
            ":98: use_hostname_for_hashing and no hostname: Envoy would hash this host's empty "
            "hostname"},
           {"bool_quoted_on",
            ":101: use_hostname_for_hashing 'on': Envoy's YAML and JSON readers make a string of "
            "it, not a bool"},
           {"zone_y_is_a_bool", ":113: zone 'y': Envoy's YAML reader makes a bool of it"},
           {"keys_split_between_priorities", ":120: Envoy splits the keys between priorities 0, 1"},
           {"draining_decides", ":132: health_status DRAINING"},
           {"no_healthy_host", ":145: priority 0 has no healthy host and is not in panic"},
           {"no_locality_weight", ":154: no ring host is in a locality with a weight"},
           {"same_key_twice",
            ":169: this host is hashed as '[2001:db8::1]:80', as the host on line 168 is"},
           {"no_cluster_name",
            ":173: load_assignment without cluster_name: Envoy refuses it "
            "(ClusterLoadAssignment.cluster_name: min_len 1)"},
           {"ring_sizes_reversed",
            ":178: ring_hash_lb_config: Envoy refuses it (\"ring hash: minimum_ring_size (2048) > "
            "maximum_ring_size (1024)\")"},
           {"table_size_fraction", ":186: table_size '17.5': not an unsigned integer"}}) {
    SCOPED_TRACE(cluster);
    ExpectUsageError(RunChash("route --envoy-cluster " + yaml + " --cluster " + cluster, "1\n"),
                     yaml + fragment);
  }
}

TEST(CliPrograms, EnvoyServersHashAddressesAsEnvoyPrintsThem) {
  // A servers file's ADDR is hashed as Envoy prints the address, as
  // --envoy-cluster hashes it: edges.yaml's maglev_ipv6_canonical written
  // as servers, non-canonical spellings included, answers as that cluster.
  const std::string servers = WriteTemp(
      "env1", "[2001:DB8:0:0:0:0:0:1]:80\n[::FFFF:10.0.0.1]:80\n[2001:db8:0:0:1:0:0:1]:80\n"
              "[fe80::1%3]:80\n127.0.0.1:0\n10.0.0.9:08080\n");
  GoldenRoutes golden = GoldenRoutesOf("envoy-cluster/edges/maglev_ipv6_canonical.csv");
  ASSERT_GT(golden.rows, 10u);
  // route prints ADDR as written in the servers file.
  for (const auto& [printed, written] : std::vector<std::pair<std::string, std::string>>{
           {"[2001:db8::1]:80", "[2001:DB8:0:0:0:0:0:1]:80"},
           {"[::ffff:10.0.0.1]:80", "[::FFFF:10.0.0.1]:80"},
           {"[2001:db8::1:0:0:1]:80", "[2001:db8:0:0:1:0:0:1]:80"},
           {"10.0.0.9:8080", "10.0.0.9:08080"}}) {
    for (size_t at = 0; (at = golden.expected.find("," + printed + "\n", at)) != std::string::npos;) {
      golden.expected.replace(at + 1, printed.size(), written);
      at += written.size() + 2;
    }
  }
  ExpectRoutes("--by-hash --flavor envoy-maglev --table-size 13 --servers " + servers, golden,
               "servers file");
  // --use-hostname-for-hashing, refused where it cannot apply, naming the line.
  const auto refused_with_hostname = [](const std::string& flavor, const std::string& name,
                                        const std::string& lines, const std::string& why) {
    const std::string file = WriteTemp(name, lines);
    ExpectUsageError(
        RunChash("route --flavor " + flavor + " --use-hostname-for-hashing --servers " + file,
                 "k\n"),
        file + why);
  };
  // An Envoy server needs hostname= (or hash_key=) then.
  refused_with_hostname("envoy-ring", "env2", "10.0.0.1:80 hostname=a\n10.0.0.2:80\n",
                        ":2: use_hostname_for_hashing and no hostname: Envoy would hash this "
                        "host's empty hostname");
  // Another flavor has no use_hostname_for_hashing: refused, not ignored.
  refused_with_hostname("haproxy", "env5", "10.0.0.1:80\n",
                        ":1: a hostname (or use_hostname_for_hashing) is for envoy-ring and "
                        "envoy-maglev rings, not haproxy ones");
  // A hash_key= wins over the hostname, as Envoy's hashKey: a ring hashing
  // "a" by hostname and one hashing "a" by hash_key answer alike.
  const std::string by_hostname =
      WriteTemp("env3", "10.0.0.1:80 hostname=a\n10.0.0.2:80 hostname=b\n");
  const std::string by_key =
      WriteTemp("env4", "10.0.0.1:80 hash_key=a hostname=x\n10.0.0.2:80 hash_key=b\n");
  const std::string keys = "k1\nk2\nk3\nk4\nk5\nk6\nk7\nk8\n";
  const CliRun hostname_run = RunChash(
      "route --flavor envoy-ring --use-hostname-for-hashing --servers " + by_hostname, keys);
  const CliRun key_run = RunChash("route --flavor envoy-ring --servers " + by_key, keys);
  ASSERT_EQ(hostname_run.status, 0) << hostname_run.err;
  ASSERT_EQ(key_run.status, 0) << key_run.err;
  EXPECT_EQ(hostname_run.out, key_run.out);
  // Envoy hashes a hash_key as written, even one that reads as an address:
  // only the address itself is printed Envoy's way, so these two rings
  // differ (the tool once resolved the key, then printed it again).
  std::string many_keys;
  for (int k = 0; k < 400; ++k) many_keys += "key" + std::to_string(k) + "\n";
  const auto route_with_key = [&](const std::string& name, const std::string& key) {
    const std::string file =
        WriteTemp(name, "10.0.0.1:80 hash_key=" + key + "\n10.0.0.2:80\n10.0.0.3:80\n");
    const CliRun run = RunChash("route --flavor envoy-ring --servers " + file, many_keys);
    EXPECT_EQ(run.status, 0) << run.err;
    return run.out;
  };
  EXPECT_NE(route_with_key("env6", "[2001:DB8::1]:80"), route_with_key("env7", "[2001:db8::1]:80"));
}

// The program options are the flavor table's: an alias (Envoy's field
// name) builds the ring its name does, and a flavor's default given
// explicitly changes nothing.
TEST(CliPrograms, OptionsAreTheFlavorTablesWithTheirAliases) {
  const std::string servers = WriteTemp("pa", "10.0.0.1:80 1\n10.0.0.2:80 2\n10.0.0.3:80 1\n");
  const std::string keys = "a\nb\nc\nd\ne\nf\ng\nh\n";
  const CliRun named = RunChash(
      "route --flavor envoy-ring --min-ring-size 16 --max-ring-size 64 --servers " + servers, keys);
  const CliRun aliased = RunChash(
      "route --flavor envoy-ring --minimum-ring-size 16 --maximum-ring-size 64 --servers " +
          servers,
      keys);
  const CliRun defaults = RunChash("route --flavor envoy-ring --servers " + servers, keys);
  ASSERT_EQ(named.status, 0) << named.err;
  ASSERT_EQ(aliased.status, 0) << aliased.err;
  EXPECT_EQ(named.out, aliased.out);
  EXPECT_EQ(testing::SplitLines(named.out).size(), 8u);
  const CliRun stats = RunChash(
      "stats --json --flavor envoy-ring --minimum-ring-size 16 --maximum-ring-size 64 "
      "--servers " + servers);
  ASSERT_EQ(stats.status, 0) << stats.err;
  // Envoy's ring has at least minimum_ring_size and at most maximum_ring_size entries.
  const uint64_t points = std::stoull(JsonField(stats.out, "points"));
  EXPECT_GE(points, 16u) << stats.out;
  EXPECT_LE(points, 64u) << stats.out;
  const CliRun explicit_defaults =
      RunChash("route --flavor envoy-ring --hash-function xx_hash --min-ring-size 1024 "
               "--servers " + servers, keys);
  EXPECT_EQ(explicit_defaults.out, defaults.out);
}

TEST(CliPrograms, RefusesWhatTheFlavorDoesNotTake) {
  const std::string servers = WriteTemp("p1", "10.0.0.1:80 1\n10.0.0.2:80 2\n");
  // A weighted ketama ring's points depend on every server: no mask answers
  // what libmemcached answers without one.
  const std::string down = WriteTemp("p9", "10.0.0.1:80\n");
  struct Refusal {
    std::string args, stdin_text, fragment;
  };
  for (const Refusal& c : std::vector<Refusal>{
           {"route --flavor haproxy --replicas 3 --servers " + servers, "a\n",
            "--replicas: 'replicas' is an option of varnish-shard, not of flavor haproxy"},
           {"route --servers " + servers + " --table-size 7", "a\n",
            "--table-size: 'table_size' is an option of envoy-maglev, not of flavor nginx"},
           {"stats --flavor varnish-shard --hash-function djb2 --servers " + servers, "",
            "--hash-function: 'hash_function' is an option of haproxy and envoy-ring, not of "
            "flavor varnish-shard (its options: replicas)"},
           {"route --flavor haproxy --hash-function md5 --servers " + servers, "a\n",
            "--hash-function: haproxy option hash_function must be one of sdbm, djb2, wt6, crc32, "
            "got 'md5'"},
           {"route --flavor ketama-md5 --hash-tag {} --servers " + servers, "a\n",
            "--flavor ketama-md5: only twemproxy has a hash_tag"},
           {"route --flavor envoy-maglev --table-size 10 --servers " + servers, "a\n",
            "--flavor envoy-maglev: "},
           {"route --flavor envoy-ring --min-ring-size 9 --max-ring-size 8 --servers " + servers,
            "a\n", "minimum_ring_size (9) > maximum_ring_size (8)"},
           {"route --flavor nginx --balance uri --servers " + servers, "a\n",
            "--balance needs --flavor haproxy"},
           {"route --flavor haproxy --alt 1 --servers " + servers, "a\n",
            "--alt is Varnish's alt=K: it needs --flavor varnish-shard"},
           {"route --flavor varnish-shard --by-hash --servers " + servers, "4294967296\n12\n",
            "'4294967296' is not a key hash (--by-hash: a decimal integer below 2^32)"},
           {"build --flavor haproxy --table-size 17 --out x.chash --servers " + servers, "",
            "--table-size"},
           {"plan --flavor varnish-shard --rings 2 --servers " + servers, "",
            "--rings plans pingora-v2 multiples"},
           {"route --flavor haproxy --nginx-conf x.conf --upstream u", "a\n",
            "--nginx-conf reads nginx upstreams; the haproxy flavor takes its servers"},
           {"route --ring x.chash --replicas 3", "a\n", "--ring and --replicas cannot be combined"},
           {"route --flavor ketama-md5 --servers " + servers + " --down " + down, "a\n",
            "--down and --subset: the ketama-md5 ring's points depend on every server"},
       }) {
    SCOPED_TRACE(c.args);
    ExpectUsageError(RunChash(c.args, c.stdin_text), c.fragment);
  }
}

TEST(CliPrograms, DownListsNameServersByAddr) {
  // Varnish hashes the backends' names; --down names them by ADDR, as route
  // prints them. With one of two backends down, every key takes the other.
  const std::string servers = WriteTemp("p10", "w1:80 1 name=web1\nw2:80 1 name=web2\n");
  const std::string down = WriteTemp("p11", "w1:80\n");
  const CliRun run = RunChash(
      "route --flavor varnish-shard --servers " + servers + " --down " + down, "a\nb\nc\n");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.out, "a,w2:80\nb,w2:80\nc,w2:80\n");
}

TEST(CliPrograms, ServersFileErrorsNameFileAndLine) {
  const std::string attr = WriteTemp("p2", "10.0.0.1:80 1 id=3\n10.0.0.2:80 1 ident=x\n");
  ExpectUsageError(RunChash("stats --flavor haproxy --servers " + attr),
                   attr + ":2: the haproxy flavor takes no attribute 'ident' (it takes: id, name)");
  ExpectUsageError(RunChash("stats --flavor ketama-md5 --servers " + attr),
                   attr + ":1: the ketama-md5 flavor takes no attribute here (name= is "
                          "twemproxy's: --variant twemproxy)");
  const std::string id = WriteTemp("p3", "10.0.0.1:80 1 id=0\n");
  ExpectUsageError(RunChash("stats --flavor haproxy --servers " + id),
                   id + ":1: id '0' must be an integer 1..2147483647");
  const std::string same_id = WriteTemp("p4", "a 1 id=3\nb 1 id=3\n");
  ExpectUsageError(RunChash("stats --flavor haproxy --servers " + same_id), same_id + ":2: ");
  const std::string real = WriteTemp("p5", "10.0.0.1:80 2.5\n");
  ExpectUsageError(RunChash("stats --flavor haproxy --servers " + real),
                   real +
                       ":1: a real (fractional) weight is for "
                       "varnish-shard rings, not haproxy ones");
  EXPECT_EQ(RunChash("stats --flavor varnish-shard --servers " + real).status, 0);
  // REAL weights are planned like integer ones: the engine counts each
  // backend's trunc(replicas x max(w, 1)) points for every candidate
  // replicas (by hand, for the default 67: 100 + 134 + 67).
  const std::string reals = WriteTemp("p5r", "a 1.5 name=a\nb 2 name=b\nc 0.5 name=c\n");
  const CliRun plan = RunChash("plan --flavor varnish-shard --servers " + reals);
  ASSERT_EQ(plan.status, 0) << plan.err;
  EXPECT_NE(plan.out.find("current   301 points"), std::string::npos) << plan.out;
  const std::string heavy = WriteTemp("p6", "10.0.0.1:80 1\n10.0.0.2:80 300\n");
  ExpectUsageError(RunChash("stats --flavor haproxy --servers " + heavy), heavy + ":2: ");
  const std::string twice = WriteTemp("p7", "a 1 name=x\na 1 name=y\n");
  ExpectUsageError(RunChash("stats --flavor varnish-shard --servers " + twice),
                   twice + ":2: 'a' is listed twice (first on line 1)");
  const std::string not_kv = WriteTemp("p8", "a 1 ident\n");
  ExpectUsageError(RunChash("stats --flavor varnish-shard --servers " + not_kv),
                   not_kv + ":1: 'ident' is not key=value");
}

TEST(Cli, StatsJson) {
  const std::string servers = WriteTemp("s10", "10.0.0.1:80 2\n10.0.0.2:80 1\n");
  const CliRun run = RunChash("stats --json --servers " + servers);
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("\"nodes\":2,\"points_generated\":480,\"points\":480"),
            std::string::npos)
      << run.out;
}

// The other programs' flavors' options (tools/cli/program_flavors.h).
#define PROGRAM_OPTIONS                                                                       \
  "--hash-function", "--avalanche", "--server-key", "--variant", "--key-hash", "--default-port", \
      "--hash-tag", "--replicas", "--min-ring-size", "--max-ring-size", "--table-size",      \
      "--use-hostname-for-hashing"

// Every command with every option its parser takes (tools/cli/cmd_*.cc):
// its help must name each one.
const std::vector<std::pair<std::string, std::vector<std::string>>>& CommandOptions() {
  static const auto* commands = new std::vector<std::pair<std::string, std::vector<std::string>>>{
      {"route",
       {"--servers", "--flavor", "--multiple", "--keys", "--down", "--subset", "--new-servers",
        "--new-flavor", "--new-multiple", "--rollout", "--scope", "--seed", "--nginx-conf",
        "--upstream", "--new-nginx-conf", "--new-upstream", "--ring", "--trusted-key",
        "--min-version", "--allow-mismatch", "--balance", "--alt", "--by-hash", "--haproxy-cfg",
        "--backend", "--nutcracker-yml", "--pool", "--envoy-cluster", "--cluster",
        PROGRAM_OPTIONS}},
      {"stats",
       {"--servers", "--flavor", "--multiple", "--plot", "--nginx-conf", "--upstream", "--ring",
        "--trusted-key", "--min-version", "--json", "--haproxy-cfg", "--backend",
        "--nutcracker-yml", "--pool", "--envoy-cluster", "--cluster", PROGRAM_OPTIONS}},
      {"diff",
       {"--servers", "--flavor", "--multiple", "--new-servers", "--new-flavor", "--new-multiple",
        "--rollout", "--new-ring", "--plot", "--nginx-conf", "--upstream", "--new-nginx-conf",
        "--new-upstream", "--ring", "--trusted-key", "--min-version", "--json", PROGRAM_OPTIONS}},
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
