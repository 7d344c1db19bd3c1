// Every golden answer produced by the real nginx 1.22.1 and pingora-ketama
// 0.8.0 (tests/data/PROVENANCE.md), key by key: through the library on every
// SIMD target, single and batch, and through `chash route`.
#include <cctype>
#include <cstdio>
#include <ostream>
#include <map>
#include <string>
#include <vector>

#include "cli_run.h"
#include "test_util.h"

namespace chash {
namespace {

using testing::DataPath;
using testing::LoadServers;
using testing::ForEachTarget;
using testing::ReadLines;

struct Expected {
  std::string key;
  std::string answer;  // the real program's answer, one a key
};

// `key,addr` lines, split at the LAST comma; '#' lines are comments.
std::vector<Expected> ReadAnswers(const std::string& path, size_t answer_column_from_end = 0) {
  std::vector<Expected> answers;
  for (const std::string& line : ReadLines(path)) {
    if (!line.empty() && line[0] == '#') continue;
    std::string rest = line;
    for (size_t i = 0; i < answer_column_from_end; ++i) rest = rest.substr(0, rest.rfind(','));
    const size_t comma = line.rfind(',');
    const size_t key_end = rest.rfind(',');
    answers.push_back({line.substr(0, answer_column_from_end ? key_end : comma),
                       line.substr(comma + 1)});
  }
  return answers;
}

// How nginx logs an upstream: a server written without a port is ADDR:80.
std::string NginxLoggedAddress(const NodeAddress& address) {
  if (address.port.empty() && address.written.rfind("unix:", 0) != 0) {
    return address.written + ":80";
  }
  return address.written;
}

// How Rust prints a SocketAddr.
std::string RustSocketText(const NodeAddress& address) {
  if (address.order.family == 6) return "[" + address.host + "]:" + address.port;
  return address.host + ":" + address.port;
}

// Checks every key through FindNode, FindNodes (one batch) and
// FindNodesByHash, on every target.
void ExpectRingAnswers(const Ring& ring, const std::vector<std::string>& keys,
                       const std::vector<Expected>& expected,
                       std::string (*printed)(const NodeAddress&)) {
  ASSERT_EQ(keys.size(), expected.size());
  ASSERT_FALSE(keys.empty());
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<uint32_t> hashes;
  for (const std::string& key : keys) hashes.push_back(Crc32(key));
  ForEachTarget([&](const std::string&) {
    std::vector<uint32_t> batch(keys.size()), by_hash(keys.size());
    ring.FindNodes(views, batch);
    ring.FindNodesByHash(hashes, by_hash);
    size_t mismatches = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(expected[i].key, keys[i]) << "keys file and answers out of step at " << i;
      const uint32_t single = ring.FindNode(keys[i]);
      ASSERT_NE(single, Ring::kNoNode);
      EXPECT_EQ(batch[i], single) << keys[i];
      EXPECT_EQ(by_hash[i], single) << keys[i];
      const std::string got = printed(ring.node(single).address);
      if (got != expected[i].answer && ++mismatches <= 5) {
        ADD_FAILURE() << "key '" << keys[i] << "' hash " << hashes[i] << ": expected "
                      << expected[i].answer << ", got " << got;
      }
    }
    EXPECT_EQ(mismatches, 0u);
  });
}

class NginxGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(NginxGolden, EveryKeyAgreesWithNginx) {
  const std::string set = GetParam();
  const Ring ring =
      testing::MustBuild(LoadServers("nginx/" + set + ".servers"), {.flavor = Flavor::kNginx});
  ExpectRingAnswers(ring, ReadLines(DataPath("nginx/" + set + ".keys")),
                    ReadAnswers(DataPath("nginx/" + set + ".csv")), NginxLoggedAddress);
}

INSTANTIATE_TEST_SUITE_P(Sets, NginxGolden,
                         ::testing::Values("a", "b", "c", "d", "f", "g", "h"));

struct PingoraSet {
  std::string servers, keys, answers;
  Flavor flavor;
  uint32_t multiple;
  size_t answer_column_from_end;  // edge files: key,crc32hex,addr
};

// Short names for ctest: the answers file without its extension.
void PrintTo(const PingoraSet& set, std::ostream* os) { *os << set.answers; }
std::string AnswersName(const std::string& file) {
  std::string name = file.substr(0, file.rfind('.'));
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class PingoraGolden : public ::testing::TestWithParam<PingoraSet> {};

TEST_P(PingoraGolden, EveryKeyAgreesWithPingora) {
  const PingoraSet& set = GetParam();
  const Ring ring = testing::MustBuild(LoadServers("pingora/" + set.servers),
                                       {.flavor = set.flavor, .point_multiple = set.multiple});
  std::vector<Expected> expected = ReadAnswers(DataPath("pingora/" + set.answers));
  if (set.answer_column_from_end) {
    // key,crc32hex,addr: also check our CRC32 against the recorded one.
    for (Expected& e : expected) {
      const size_t comma = e.key.rfind(',');
      const std::string crc_hex = e.key.substr(comma + 1);
      e.key = e.key.substr(0, comma);
      EXPECT_EQ(Crc32(e.key), std::stoul(crc_hex, nullptr, 16)) << e.key;
    }
  }
  ExpectRingAnswers(ring, ReadLines(DataPath("pingora/" + set.keys)), expected,
                    RustSocketText);
}

INSTANTIATE_TEST_SUITE_P(
    Sets, PingoraGolden,
    ::testing::Values(
        PingoraSet{"servers_50.txt", "keys_10000.txt", "golden_v1_50srv.csv",
                   Flavor::kPingoraV1, 160, 0},
        PingoraSet{"servers_50.txt", "keys_10000.txt", "golden_v2m16_50srv.csv",
                   Flavor::kPingoraV2, 16, 0},
        PingoraSet{"servers_ipv6_3.txt", "keys_1000.txt", "golden_v1_ipv6_3srv.csv",
                   Flavor::kPingoraV1, 160, 0},
        PingoraSet{"servers_ipv6_format.txt", "keys_1000.txt", "golden_v1_ipv6_format.csv",
                   Flavor::kPingoraV1, 160, 0},
        PingoraSet{"servers_ipv6_format.txt", "keys_1000.txt",
                   "golden_v2m16_ipv6_format.csv", Flavor::kPingoraV2, 16, 0},
        PingoraSet{"servers_nginx9.txt", "keys_1000.txt", "golden_v1_nginx9.csv",
                   Flavor::kPingoraV1, 160, 0},
        PingoraSet{"servers_50.txt", "edge_keys_v1_50srv.txt", "golden_edge_v1_50srv.csv",
                   Flavor::kPingoraV1, 160, 1},
        PingoraSet{"servers_50.txt", "edge_keys_v2m16_50srv.txt",
                   "golden_edge_v2m16_50srv.csv", Flavor::kPingoraV2, 16, 1}),
    [](const auto& param_info) { return AnswersName(param_info.param.answers); });

// The exact text pingora hashes for each server, and its first three points.
TEST(PingoraGolden, HashStringsAndFirstPoints) {
  for (const std::string file : {"hash_strings_50srv.csv", "hash_strings_ipv6_format.csv"}) {
    const std::vector<std::string> lines = ReadLines(DataPath("pingora/" + file));
    ASSERT_GT(lines.size(), 1u);
    for (size_t i = 1; i < lines.size(); ++i) {
      std::vector<std::string> f;
      size_t start = 0;
      for (size_t comma; (comma = lines[i].find(',', start)) != std::string::npos;
           start = comma + 1) {
        f.push_back(lines[i].substr(start, comma - start));
      }
      f.push_back(lines[i].substr(start));
      ASSERT_EQ(f.size(), 6u) << lines[i];
      Result<NodeAddress> address = ParsePingoraAddress(f[0]);
      ASSERT_TRUE(address.ok()) << address.status().ToString();
      EXPECT_EQ(address.value().host, f[1]) << f[0];
      EXPECT_EQ(address.value().port, f[2]) << f[0];
      // The chain: crc32(prev_le32) continued from crc32(HOST "\0" PORT).
      const uint32_t base = Crc32(address.value().HashedBytes());
      uint32_t prev = 0;
      for (int p = 0; p < 3; ++p) {
        const uint8_t le[4] = {uint8_t(prev), uint8_t(prev >> 8), uint8_t(prev >> 16),
                               uint8_t(prev >> 24)};
        prev = Crc32Extend(base, le, 4);
        EXPECT_EQ(prev, std::stoul(f[3 + p], nullptr, 16)) << f[0] << " point " << p;
      }
    }
  }
}

// The v1 ring of servers_50 has one duplicated hash; its winners under v1
// (chash: configuration order) and v2 (smallest address) are recorded.
TEST(PingoraGolden, CollisionWinners) {
  const std::vector<std::string> lines =
      ReadLines(DataPath("pingora/collide_50srv_collisions.csv"));
  ASSERT_EQ(lines.size(), 2u);
  // hash,contenders_in_bucket_order,smallest_addr,winner_v1,winner_v2_m160
  std::vector<std::string> f;
  size_t start = 0;
  for (size_t comma; (comma = lines[1].find(',', start)) != std::string::npos;
       start = comma + 1) {
    f.push_back(lines[1].substr(start, comma - start));
  }
  f.push_back(lines[1].substr(start));
  ASSERT_EQ(f.size(), 5u);
  const uint32_t hash = static_cast<uint32_t>(std::stoul(f[0], nullptr, 16));
  const std::vector<ServerEntry> servers = LoadServers("pingora/servers_50.txt");
  const Ring v1 = testing::MustBuild(servers, {.flavor = Flavor::kPingoraV1});
  const Ring v2 = testing::MustBuild(
      servers, {.flavor = Flavor::kPingoraV2, .point_multiple = 160});
  EXPECT_EQ(v1.collisions(), 1u);
  EXPECT_EQ(RustSocketText(v1.node(v1.FindNodeByHash(hash)).address), f[3]);
  EXPECT_EQ(RustSocketText(v2.node(v2.FindNodeByHash(hash)).address), f[4]);
  EXPECT_EQ(f[4], f[2]);  // v2's winner is the smallest address
}

// node_iter: the first 10 nodes of the failover walk, repeats included; and
// the first 5 distinct nodes.
struct IterSet {
  std::string servers, answers;
  Flavor flavor;
  uint32_t multiple;
  bool distinct;
};

void PrintTo(const IterSet& set, std::ostream* os) { *os << set.answers; }

class PingoraIter : public ::testing::TestWithParam<IterSet> {};

TEST_P(PingoraIter, WalkMatchesNodeIter) {
  const IterSet& set = GetParam();
  const Ring ring = testing::MustBuild(LoadServers("pingora/" + set.servers),
                                       {.flavor = set.flavor, .point_multiple = set.multiple});
  const std::vector<std::string> lines = ReadLines(DataPath("pingora/" + set.answers));
  ASSERT_FALSE(lines.empty());
  for (const std::string& line : lines) {
    // key,addr1,...: keys may hold commas; the answers are the last columns.
    const size_t columns = set.distinct ? ring.nodes_with_points() : 10;
    std::vector<std::string> answers;
    std::string rest = line;
    for (size_t i = 0; i < columns; ++i) {
      const size_t comma = rest.rfind(',');
      answers.insert(answers.begin(), rest.substr(comma + 1));
      rest = rest.substr(0, comma);
    }
    const std::string& key = rest;
    if (set.distinct) {
      DistinctNodeWalk walk = ring.WalkDistinct(key);
      for (const std::string& answer : answers) {
        const uint32_t node = walk.Next();
        ASSERT_NE(node, Ring::kNoNode) << key;
        EXPECT_EQ(RustSocketText(ring.node(node).address), answer) << key;
      }
      EXPECT_EQ(walk.Next(), Ring::kNoNode) << key;
    } else {
      PointCursor walk = ring.Walk(key);
      for (const std::string& answer : answers) {
        EXPECT_EQ(RustSocketText(ring.node(walk.Next()).address), answer) << key;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Sets, PingoraIter,
    ::testing::Values(
        IterSet{"servers_5.txt", "golden_iter10_v1_5srv.csv", Flavor::kPingoraV1, 160, false},
        IterSet{"servers_5.txt", "golden_iter10_v2m16_5srv.csv", Flavor::kPingoraV2, 16,
                false},
        IterSet{"servers_ipv6_3.txt", "golden_iter10_v1_ipv6_3srv.csv", Flavor::kPingoraV1,
                160, false},
        IterSet{"servers_5.txt", "golden_iterdistinct_v1_5srv.csv", Flavor::kPingoraV1, 160,
                true}),
    [](const auto& param_info) { return AnswersName(param_info.param.answers); });

// ---- Through the CLI -------------------------------------------------------

class NginxGoldenCli : public ::testing::TestWithParam<std::string> {};

TEST_P(NginxGoldenCli, ChashRouteAgreesWithNginx) {
  const std::string set = GetParam();
  const testing::CliRun run = testing::RunChash("route --servers " +
                                                DataPath("nginx/" + set + ".servers") +
                                                " --keys " + DataPath("nginx/" + set + ".keys"));
  ASSERT_EQ(run.status, 0) << run.err;
  const std::vector<std::string> lines = testing::SplitLines(run.out);
  const std::vector<Expected> expected = ReadAnswers(DataPath("nginx/" + set + ".csv"));
  ASSERT_EQ(lines.size(), expected.size());
  size_t mismatches = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t comma = lines[i].rfind(',');
    std::string address = lines[i].substr(comma + 1);
    EXPECT_EQ(lines[i].substr(0, comma), expected[i].key);
    Result<NodeAddress> parsed = ParseNginxAddress(address);
    ASSERT_TRUE(parsed.ok()) << address;
    if (NginxLoggedAddress(parsed.value()) != expected[i].answer) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0u);
}

INSTANTIATE_TEST_SUITE_P(Sets, NginxGoldenCli,
                         ::testing::Values("a", "b", "c", "d", "f", "g", "h"));

TEST(PingoraGoldenCli, ChashRouteAgreesWithPingoraV2) {
  const testing::CliRun run =
      testing::RunChash("route --mode pingora-v2 --multiple 16 --servers " +
                        DataPath("pingora/servers_ipv6_format.txt") + " --keys " +
                        DataPath("pingora/keys_1000.txt"));
  ASSERT_EQ(run.status, 0) << run.err;
  const std::vector<std::string> lines = testing::SplitLines(run.out);
  const std::vector<Expected> expected =
      ReadAnswers(DataPath("pingora/golden_v2m16_ipv6_format.csv"));
  ASSERT_EQ(lines.size(), expected.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string address = lines[i].substr(lines[i].rfind(',') + 1);
    Result<NodeAddress> parsed = ParsePingoraAddress(address);
    ASSERT_TRUE(parsed.ok()) << address;
    EXPECT_EQ(RustSocketText(parsed.value()), expected[i].answer) << lines[i];
  }
}

}  // namespace
}  // namespace chash
