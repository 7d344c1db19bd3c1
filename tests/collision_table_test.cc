// The collision side table (Ring::collision_losers): at every hash several
// points share, the columns keep the best-ranked contender and the table
// lists the others in tie-break order. Checked against contenders computed
// here from scratch (zlib's CRC32, a plain sort), not through the engine.
#include <zlib.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "test_util.h"

namespace chash {
namespace {

using testing::DataPath;

// hash -> the distinct nodes with a point there, best tie-break rank first.
using Contenders = std::map<uint32_t, std::vector<uint32_t>>;

// Only hashes held by two or more points are listed.
Contenders GroupByHash(std::vector<RawPoint> points, const std::vector<uint32_t>& rank) {
  std::sort(points.begin(), points.end(), [&](const RawPoint& a, const RawPoint& b) {
    return a.hash != b.hash ? a.hash < b.hash : rank[a.node] < rank[b.node];
  });
  Contenders by_hash;
  for (size_t i = 0; i < points.size();) {
    size_t end = i;
    while (end < points.size() && points[end].hash == points[i].hash) ++end;
    if (end - i >= 2) {
      std::vector<uint32_t>& nodes = by_hash[points[i].hash];
      for (size_t j = i; j < end; ++j) {
        if (nodes.empty() || nodes.back() != points[j].node) nodes.push_back(points[j].node);
      }
    }
    i = end;
  }
  return by_hash;
}

// The ketama chain of every server, with zlib's crc32 (tests/reference/COMPATIBILITY.md §1).
std::vector<RawPoint> ChainPoints(const std::vector<ServerEntry>& servers, Flavor flavor,
                                  uint32_t multiple) {
  std::vector<RawPoint> points;
  for (uint32_t id = 0; id < servers.size(); ++id) {
    Result<NodeAddress> address = ParseNodeAddress(flavor, servers[id].address);
    EXPECT_TRUE(address.ok());
    const std::string bytes = address.value().HashedBytes();
    const uLong base =
        crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size()));
    uint32_t prev = 0;
    for (uint64_t j = 0; j < uint64_t{servers[id].weight} * multiple; ++j) {
      const Bytef le[4] = {Bytef(prev), Bytef(prev >> 8), Bytef(prev >> 16), Bytef(prev >> 24)};
      prev = static_cast<uint32_t>(crc32(base, le, 4));
      points.push_back({prev, id});
    }
  }
  return points;
}

// Every loser list equals the contenders after the winner, and the winner is
// what the columns answer at that hash.
void ExpectLosersMatch(const Ring& ring, const Contenders& contenders) {
  const CollisionLosers losers = ring.collision_losers();
  ASSERT_EQ(losers.hashes.size(), losers.nodes.size());
  ASSERT_TRUE(std::is_sorted(losers.hashes.begin(), losers.hashes.end()));
  size_t expected_total = 0;
  size_t at = 0;
  for (const auto& [hash, nodes] : contenders) {
    EXPECT_EQ(ring.FindNodeByHash(hash), nodes[0]) << "winner at " << hash;
    expected_total += nodes.size() - 1;
    for (size_t i = 1; i < nodes.size(); ++i, ++at) {
      ASSERT_LT(at, losers.hashes.size());
      EXPECT_EQ(losers.hashes[at], hash);
      EXPECT_EQ(losers.nodes[at], nodes[i]) << "loser " << i << " at hash " << hash;
    }
  }
  EXPECT_EQ(losers.hashes.size(), expected_total);
  // 6 bytes a loser, reported apart from the columns.
  const MemoryUsage memory = ring.memory_usage();
  EXPECT_GE(memory.collision_table_bytes, 6 * expected_total);
  EXPECT_LE(memory.collision_table_bytes, 6 * expected_total + 64);
}

TEST(CollisionTable, NginxRingsWithRealCollisions) {
  for (const char* set : {"a", "d"}) {
    SCOPED_TRACE(set);
    Result<std::vector<ServerEntry>> servers =
        ReadServersFile(DataPath(std::string("nginx/") + set + ".servers"));
    ASSERT_TRUE(servers.ok());
    const Ring ring = testing::MustBuild(servers.value(), {.flavor = Flavor::kNginx});
    const std::vector<uint32_t> config_rank =
        testing::TieRanks(static_cast<uint32_t>(servers.value().size()));
    const Contenders contenders =
        GroupByHash(ChainPoints(servers.value(), Flavor::kNginx, 160), config_rank);
    ExpectLosersMatch(ring, contenders);
    EXPECT_EQ(ring.collision_losers().hashes.size(), ring.collisions());  // no self-repeats
    EXPECT_GT(ring.collisions(), 0u);
  }
}

TEST(CollisionTable, PingoraV2UsesAddressOrder) {
  Result<std::vector<ServerEntry>> servers = ReadServersFile(DataPath("pingora/servers_50.txt"));
  ASSERT_TRUE(servers.ok());
  const Ring ring =
      testing::MustBuild(servers.value(), {.flavor = Flavor::kPingoraV2, .point_multiple = 160});
  ASSERT_EQ(ring.collisions(), 1u);
  std::vector<uint32_t> by_address(servers.value().size());
  for (uint32_t i = 0; i < by_address.size(); ++i) by_address[i] = i;
  std::sort(by_address.begin(), by_address.end(), [&](uint32_t a, uint32_t b) {
    return ring.node(a).address.order < ring.node(b).address.order;
  });
  std::vector<uint32_t> rank(by_address.size());
  for (uint32_t r = 0; r < rank.size(); ++r) rank[by_address[r]] = r;
  ExpectLosersMatch(ring, GroupByHash(ChainPoints(servers.value(), Flavor::kPingoraV2, 160), rank));
}

// Raw rings: many nodes on few hashes, explicit ranks, a node repeating its
// own hash (it contends once), and a hash only one node holds twice.
TEST(CollisionTable, RawRingsWithForcedCollisions) {
  std::mt19937 rng(7);
  for (size_t round = 0; round < testing::Scaled(40, 10); ++round) {
    const uint32_t num_nodes = 1 + rng() % 12;
    const bool explicit_rank = round % 2 == 1;
    const std::vector<uint32_t> rank = testing::TieRanks(num_nodes, explicit_rank ? &rng : nullptr);
    std::vector<RawPoint> points;
    const uint32_t distinct_hashes = 1 + rng() % 30;
    for (uint32_t i = 0; i < 3 * distinct_hashes; ++i) {
      points.push_back({static_cast<uint32_t>(rng() % distinct_hashes) * 0x01000193u,
                        static_cast<uint32_t>(rng() % num_nodes)});
    }
    Result<Ring> ring = BuildRingFromPoints(
        num_nodes, points,
        explicit_rank ? std::span<const uint32_t>(rank) : std::span<const uint32_t>());
    ASSERT_TRUE(ring.ok()) << ring.status().ToString();
    SCOPED_TRACE("round " + std::to_string(round));
    ExpectLosersMatch(ring.value(), GroupByHash(points, rank));
  }
}

TEST(CollisionTable, EmptyAndCollisionFreeRings) {
  const Ring empty;
  EXPECT_TRUE(empty.collision_losers().hashes.empty());
  EXPECT_EQ(empty.memory_usage().collision_table_bytes, 0u);
  const RawPoint points[] = {{10, 0}, {20, 1}, {30, 0}};
  Result<Ring> ring = BuildRingFromPoints(2, points);
  ASSERT_TRUE(ring.ok());
  EXPECT_TRUE(ring.value().collision_losers().hashes.empty());
  EXPECT_EQ(ring.value().memory_usage().collision_table_bytes, 0u);
  EXPECT_TRUE(ring.value().owns_points(0));
  EXPECT_TRUE(ring.value().owns_points(1));
  EXPECT_FALSE(ring.value().owns_points(2));
}

// A node whose every point loses owns no kept point, but still contends.
TEST(CollisionTable, NodeThatOnlyLoses) {
  const RawPoint points[] = {{10, 0}, {10, 1}, {20, 0}, {20, 1}, {30, 2}};
  Result<Ring> ring = BuildRingFromPoints(3, points);
  ASSERT_TRUE(ring.ok());
  EXPECT_EQ(ring.value().nodes_with_points(), 2u);
  EXPECT_FALSE(ring.value().owns_points(1));
  const CollisionLosers losers = ring.value().collision_losers();
  ASSERT_EQ(losers.hashes.size(), 2u);
  EXPECT_EQ(losers.nodes[0], 1);
  EXPECT_EQ(losers.nodes[1], 1);
}

}  // namespace
}  // namespace chash
