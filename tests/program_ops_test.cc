// Stats, diffs, plans and migrations of the other programs' rings
// (haproxy .. envoy-maglev). The exact shares and diffs are held to a brute
// force over the reference models (tests/reference/reference_programs.h):
// the hash space is cut at every point value and its neighbours and around
// the middle of every gap (where a nearest-point answer may change), the
// model is asked at the start of each piece, and the piece's length counts
// for that answer. Between two cuts no rule's answer changes, so the sums
// are exact without knowing the rule; a sampled check inside the pieces
// keeps that assumption honest.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "chash/chash.h"
#include "chash/diff.h"
#include "chash/migration.h"
#include "chash/plan.h"
#include "chash/stats.h"
#include "reference/reference_programs.h"
#include "test_util.h"

namespace chash {
namespace {

using Wide = unsigned __int128;
using reference::ProgramRing;
using reference::ProgramServer;

struct Pair {
  Ring ring;
  ProgramRing model;
};

std::vector<ProgramServer> Servers(size_t count, std::mt19937_64& rng, uint32_t max_weight) {
  std::vector<ProgramServer> servers;
  for (size_t i = 0; i < count; ++i) {
    ProgramServer server;
    server.address = "10.1." + std::to_string(i / 200) + "." + std::to_string(i % 200) + ":8" +
                     std::to_string(i % 10);
    server.weight = 1 + static_cast<uint32_t>(rng() % max_weight);
    servers.push_back(server);
  }
  return servers;
}

Pair Build(const RingOptions& options, const std::vector<ProgramServer>& servers) {
  RingBuilder builder(options);
  for (const ProgramServer& server : servers) {
    EXPECT_TRUE(builder.Add(server.address, server.weight).ok());
  }
  Result<Ring> ring = std::move(builder).Build();
  Result<ProgramRing> model = ProgramRing::Build(options, servers);
  EXPECT_TRUE(ring.ok()) << ring.status().ToString();
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return {ring.ok() ? std::move(ring).value() : Ring(),
          model.ok() ? std::move(model).value() : ProgramRing()};
}

// The cuts of a ring model's space (2^bits hashes): 0, each point value
// and the next hash, and the hashes around the middle of each gap.
std::set<Wide> Cuts(const ProgramRing& model, uint32_t bits) {
  const Wide space = Wide{1} << bits;
  std::set<Wide> cuts = {0};
  const auto& points = model.points();
  for (size_t i = 0; i < points.size(); ++i) {
    const Wide v = points[i].hash;
    const Wide next = i + 1 < points.size() ? Wide{points[i + 1].hash} : points[0].hash + space;
    for (Wide c : {v, v + 1}) cuts.insert(c % space);
    const Wide middle = v + (next - v) / 2;
    for (int delta = -2; delta <= 2; ++delta) cuts.insert((middle + delta) % space);
  }
  return cuts;
}

// Each node's exact share of the space, from the model alone.
std::vector<Wide> BruteShares(const ProgramRing& model, uint32_t nodes, uint32_t bits,
                              std::mt19937_64& rng) {
  std::vector<Wide> shares(nodes, 0);
  const Wide space = Wide{1} << bits;
  const std::set<Wide> cuts = Cuts(model, bits);
  for (auto it = cuts.begin(); it != cuts.end(); ++it) {
    const Wide start = *it;
    const Wide end = std::next(it) == cuts.end() ? space : *std::next(it);
    const uint32_t node = model.Lookup(static_cast<uint64_t>(start));
    shares[node] += end - start;
    if (end - start > 2 && rng() % 8 == 0) {  // the piece really is one answer
      const Wide inside = start + 1 + static_cast<Wide>(rng()) % (end - start - 1);
      EXPECT_EQ(model.Lookup(static_cast<uint64_t>(inside)), node);
    }
  }
  return shares;
}

// Maglev: entry e owns the hashes h < 2^64 with h mod M = e.
std::vector<Wide> TableShares(const ProgramRing& model, uint32_t nodes) {
  std::vector<Wide> shares(nodes, 0);
  const Wide space = Wide{1} << 64;
  const uint64_t m = model.size();
  for (uint64_t e = 0; e < m; ++e) {
    shares[model.points()[e].node] += space / m + (e < space % m ? 1 : 0);
  }
  return shares;
}

uint32_t Bits(const RingOptions& options) {
  return options.flavor == Flavor::kEnvoyRing || options.flavor == Flavor::kEnvoyMaglev ? 64 : 32;
}

std::vector<Wide> ModelShares(const Pair& pair, const RingOptions& options, std::mt19937_64& rng) {
  return options.flavor == Flavor::kEnvoyMaglev
             ? TableShares(pair.model, pair.ring.num_nodes())
             : BruteShares(pair.model, pair.ring.num_nodes(), Bits(options), rng);
}

void ExpectSharesMatch(const std::vector<uint64_t>& got, const std::vector<Wide>& exact,
                       uint32_t bits, const std::string& what) {
  ASSERT_EQ(got.size(), exact.size()) << what;
  uint64_t sum = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    sum += got[i];
    if (bits == 32) {
      EXPECT_EQ(got[i], static_cast<uint64_t>(exact[i])) << what << " node " << i;
    } else {
      const Wide scaled = exact[i] >> 32;  // within one unit of 2^32 hashes
      EXPECT_LE(Wide{got[i]}, scaled + 1) << what << " node " << i;
      EXPECT_GE(Wide{got[i]} + 1, scaled) << what << " node " << i;
    }
  }
  EXPECT_EQ(sum, uint64_t{1} << 32) << what;
}

std::vector<RingOptions> Flavors() {
  return {
      {.flavor = Flavor::kHaproxy},
      {.flavor = Flavor::kHaproxy,
       .haproxy = {.hash_function = HaproxyHash::kCrc32, .avalanche = false}},
      {.flavor = Flavor::kKetamaMd5},
      {.flavor = Flavor::kKetamaMd5, .ketama = {.variant = KetamaVariant::kTwemproxy}},
      {.flavor = Flavor::kKetamaMd5, .ketama = {.variant = KetamaVariant::kLibketama}},
      {.flavor = Flavor::kVarnishShard, .varnish = {.replicas = 3}},
      {.flavor = Flavor::kVarnishShard},
      {.flavor = Flavor::kEnvoyRing, .envoy_ring = {.minimum_ring_size = 64}},
      {.flavor = Flavor::kEnvoyRing},
      {.flavor = Flavor::kEnvoyMaglev, .maglev = {.table_size = 251}},
  };
}

std::string Name(const RingOptions& options) {
  return std::string(FlavorName(options.flavor)) + " " +
         std::to_string(static_cast<int>(options.ketama.variant)) + " " +
         std::to_string(static_cast<int>(options.haproxy.hash_function));
}

TEST(ProgramOps, SharesAreExactUnderEachRule) {
  std::mt19937_64 rng(7);
  for (const RingOptions& options : Flavors()) {
    for (const size_t count : {1, 2, 3, 17}) {
      const std::vector<ProgramServer> servers = Servers(count, rng, 4);
      const Pair pair = Build(options, servers);
      const std::string what = Name(options) + " x" + std::to_string(count);
      ExpectSharesMatch(NodeHashShares(pair.ring), ModelShares(pair, options, rng), Bits(options),
                        what);
    }
  }
}

// Varnish's circle of two points answers its second point for every hash;
// shared points answer as its bisection lands.
TEST(ProgramOps, SharesFollowVarnishBisection) {
  std::mt19937_64 rng(8);
  const RingOptions two = {.flavor = Flavor::kVarnishShard, .varnish = {.replicas = 1}};
  const Pair pair = Build(two, {{"a", 1, 0, ""}, {"b", 1, 0, ""}});
  const std::vector<uint64_t> shares = NodeHashShares(pair.ring);
  EXPECT_EQ(shares[pair.ring.At(1).node()], uint64_t{1} << 32);
  // web1 .. web20: web1 + "10" = web11 + "0", and so on.
  std::vector<ProgramServer> webs;
  for (int i = 1; i <= 20; ++i) webs.push_back({"web" + std::to_string(i), 1, 0, ""});
  const RingOptions shard = {.flavor = Flavor::kVarnishShard};
  const Pair shared = Build(shard, webs);
  size_t equal_neighbours = 0;
  for (uint64_t i = 1; i < shared.ring.num_points(); ++i) {
    equal_neighbours += shared.ring.At(i).hash() == shared.ring.At(i - 1).hash() ? 1 : 0;
  }
  EXPECT_GT(equal_neighbours, 0u);
  ExpectSharesMatch(NodeHashShares(shared.ring), ModelShares(shared, shard, rng), 32,
                    "varnish web1..web20");
}

// HAProxy ids congruent mod 2^20 share every point: the point's successor
// side goes to the older server, its predecessor side to the newer.
TEST(ProgramOps, SharesFollowHaproxyTies) {
  std::mt19937_64 rng(9);
  const RingOptions options = {.flavor = Flavor::kHaproxy};
  RingBuilder builder(options);
  ASSERT_TRUE(builder.Add("a", 1, {.server_id = 1}).ok());
  ASSERT_TRUE(builder.Add("b", 1, {.server_id = 1 + (1u << 20)}).ok());
  ASSERT_TRUE(builder.Add("c", 2, {.server_id = 5}).ok());
  Result<Ring> ring = std::move(builder).Build();
  ASSERT_TRUE(ring.ok());
  Result<ProgramRing> model =
      ProgramRing::Build(options, {{"a", 1, 1, ""}, {"b", 1, 1 + (1u << 20), ""}, {"c", 2, 5, ""}});
  ASSERT_TRUE(model.ok());
  const std::vector<Wide> exact = BruteShares(model.value(), ring.value().num_nodes(), 32, rng);
  ExpectSharesMatch(NodeHashShares(ring.value()), exact, 32, "haproxy shared ids");
  EXPECT_GT(exact[0], 0u);
  EXPECT_GT(exact[1], 0u);
}

// Two rings that hash keys alike: the diff is the brute force's, cut at both
// rings' cuts.
Wide BruteMoved(const ProgramRing& a, const ProgramRing& b, uint32_t bits) {
  std::set<Wide> cuts = Cuts(a, bits);
  const std::set<Wide> more = Cuts(b, bits);
  cuts.insert(more.begin(), more.end());
  const Wide space = Wide{1} << bits;
  Wide moved = 0;
  for (auto it = cuts.begin(); it != cuts.end(); ++it) {
    const Wide end = std::next(it) == cuts.end() ? space : *std::next(it);
    const uint64_t h = static_cast<uint64_t>(*it);
    // Both rings name servers by the same addresses (ids are indexes).
    const uint32_t from = a.Lookup(h), to = b.Lookup(h);
    const std::string& x = a.servers()[from].address;
    const std::string& y = b.servers()[to].address;
    if (x != y) moved += end - *it;
  }
  return moved;
}

TEST(ProgramOps, DiffIsExactForOneKeyHash) {
  std::mt19937_64 rng(10);
  for (const RingOptions& options : Flavors()) {
    if (options.flavor == Flavor::kEnvoyMaglev) continue;  // below
    std::vector<ProgramServer> servers = Servers(12, rng, 3);
    const Pair before = Build(options, servers);
    servers.erase(servers.begin() + 5);
    servers.push_back({"10.9.9.9:80", 2, 0, ""});
    const Pair after = Build(options, servers);
    Result<RingDiff> diff = DiffRings(before.ring, after.ring);
    ASSERT_TRUE(diff.ok());
    EXPECT_TRUE(diff.value().exact) << Name(options);
    const Wide moved = BruteMoved(before.model, after.model, Bits(options));
    if (Bits(options) == 32) {
      EXPECT_EQ(diff.value().moved_hashes, static_cast<uint64_t>(moved)) << Name(options);
    } else {
      EXPECT_EQ(diff.value().moved_hashes, static_cast<uint64_t>(moved >> 32)) << Name(options);
    }
    uint64_t out = 0, in = 0;
    for (const NodeDiff& node : diff.value().nodes) {
      out += node.moved_out;
      in += node.moved_in;
    }
    EXPECT_NEAR(static_cast<double>(out), static_cast<double>(diff.value().moved_hashes),
                diff.value().nodes.size());
    EXPECT_NEAR(static_cast<double>(in), static_cast<double>(diff.value().moved_hashes),
                diff.value().nodes.size());
    Result<RingDiff> same = DiffRings(before.ring, before.ring);
    ASSERT_TRUE(same.ok());
    EXPECT_EQ(same.value().moved_hashes, 0u) << Name(options);
  }
}

TEST(ProgramOps, MaglevTablesDiffEntryByEntry) {
  std::mt19937_64 rng(11);
  const RingOptions options = {.flavor = Flavor::kEnvoyMaglev, .maglev = {.table_size = 251}};
  std::vector<ProgramServer> servers = Servers(9, rng, 2);
  const Pair before = Build(options, servers);
  servers.pop_back();
  const Pair after = Build(options, servers);
  Result<RingDiff> diff = DiffRings(before.ring, after.ring);
  ASSERT_TRUE(diff.ok());
  EXPECT_TRUE(diff.value().exact);
  Wide moved = 0;
  const Wide space = Wide{1} << 64;
  for (uint64_t e = 0; e < 251; ++e) {
    const std::string& x = before.model.servers()[before.model.points()[e].node].address;
    const std::string& y = after.model.servers()[after.model.points()[e].node].address;
    if (x != y) moved += space / 251 + (e < space % 251 ? 1 : 0);
  }
  EXPECT_EQ(diff.value().moved_hashes, static_cast<uint64_t>(moved >> 32));
}

// nginx hashes keys with CRC-32, HAProxy's crc32 without avalanche too: an
// exact diff across the two rules; with sdbm, an estimate.
TEST(ProgramOps, DiffAcrossFlavors) {
  std::vector<ServerEntry> servers;
  for (int i = 0; i < 10; ++i) servers.push_back({"10.2.0." + std::to_string(i) + ":80", 1, 0});
  const Ring nginx = testing::MustBuild(servers, {.flavor = Flavor::kNginx});
  const Ring crc = testing::MustBuild(
      servers, {.flavor = Flavor::kHaproxy,
                .haproxy = {.hash_function = HaproxyHash::kCrc32, .avalanche = false}});
  const Ring sdbm = testing::MustBuild(servers, {.flavor = Flavor::kHaproxy});
  Result<RingDiff> exact = DiffRings(nginx, crc);
  ASSERT_TRUE(exact.ok());
  EXPECT_TRUE(exact.value().exact);
  // The same by sampling: every 4096th hash, both rings asked.
  uint64_t moved = 0;
  for (uint64_t h = 0; h < (uint64_t{1} << 32); h += 4096) {
    const uint32_t a = nginx.FindNodeByHash(static_cast<uint32_t>(h));
    const uint32_t b = crc.FindNodeByHash(static_cast<uint32_t>(h));
    moved += nginx.node(a).address.written != crc.node(b).address.written ? 1 : 0;
  }
  EXPECT_NEAR(exact.value().moved_fraction(), moved / 1048576.0, 0.01);

  Result<RingDiff> estimate = DiffRings(nginx, sdbm);
  ASSERT_TRUE(estimate.ok());
  EXPECT_FALSE(estimate.value().exact);
  const std::vector<uint64_t> p = NodeHashShares(nginx), q = NodeHashShares(sdbm);
  double same = 0;
  for (size_t i = 0; i < p.size(); ++i) same += (p[i] / 4294967296.0) * (q[i] / 4294967296.0);
  EXPECT_NEAR(estimate.value().moved_fraction(), 1 - same, 1e-9);
  // Keys: about that many move.
  size_t keys_moved = 0;
  for (int k = 0; k < 20000; ++k) {
    const std::string key = "/object/" + std::to_string(k);
    keys_moved += nginx.node(nginx.FindNode(key)).address.written !=
                          sdbm.node(sdbm.FindNode(key)).address.written
                      ? 1
                      : 0;
  }
  EXPECT_NEAR(keys_moved / 20000.0, 1 - same, 0.02);
}

TEST(ProgramOps, StatsNameTheProgramsCost) {
  std::mt19937_64 rng(12);
  const std::vector<ProgramServer> servers = Servers(20, rng, 1);
  for (const RingOptions& options : Flavors()) {
    const Pair pair = Build(options, servers);
    const RingStats stats = ComputeRingStats(pair.ring);
    const uint64_t points = pair.ring.num_points();
    uint64_t expected = 0;
    switch (options.flavor) {
      case Flavor::kHaproxy:
        expected = 48 * points;
        break;
      case Flavor::kKetamaMd5:
        expected =
            options.ketama.variant == KetamaVariant::kLibketama ? 28 * points : 8 * (20 + 10) * 160;
        break;
      case Flavor::kVarnishShard:
        expected = 8 * points;
        break;
      case Flavor::kEnvoyRing:
        expected = 24 * points;
        break;
      default:  // 20 hosts: 5 bits an entry (compact) against 16 bytes
        expected = std::min<uint64_t>(16 * points, 16 * 20 + 5 * points / 8);
        break;
    }
    EXPECT_EQ(stats.program_bytes, expected) << Name(options);
    EXPECT_DOUBLE_EQ(stats.program_bytes_per_point, static_cast<double>(expected) / points);
    // chash's columns: 6 bytes a point, 10 on envoy-ring (two u32 halves
    // and the node), 2 an entry on envoy-maglev; plus the columns' padding.
    const uint64_t base = options.flavor == Flavor::kEnvoyRing     ? 10
                          : options.flavor == Flavor::kEnvoyMaglev ? 2
                                                                   : 6;
    EXPECT_GE(stats.column_bytes, base * points) << Name(options);
    EXPECT_LE(stats.column_bytes, base * points + 3 * 4096) << Name(options);
    EXPECT_GE(stats.cv_measured, 0);
    Result<std::string> json = RingStatsJson(stats);
    ASSERT_TRUE(json.ok());
    EXPECT_NE(json.value().find("\"program_bytes\":" + std::to_string(expected)), std::string::npos)
        << json.value();
  }
  const Ring nginx = testing::MustBuild({{"10.0.0.1:80", 1, 0}, {"10.0.0.2:80", 1, 0}},
                                        {.flavor = Flavor::kNginx});
  const RingStats stats = ComputeRingStats(nginx);
  EXPECT_EQ(stats.program_bytes, 0u);
  EXPECT_EQ(RingStatsJson(stats).value().find("program_bytes"), std::string::npos);
}

// A migration between two programs' rings of the same servers: each side
// hashes the key its own way.
TEST(ProgramOps, MigrationBetweenPrograms) {
  std::vector<ServerEntry> servers;
  for (int i = 0; i < 8; ++i) servers.push_back({"10.3.0." + std::to_string(i) + ":11211", 1, 0});
  auto old_ring =
      std::make_shared<const Ring>(testing::MustBuild(servers, {.flavor = Flavor::kHaproxy}));
  auto new_ring =
      std::make_shared<const Ring>(testing::MustBuild(servers, {.flavor = Flavor::kKetamaMd5}));
  auto migration = RingMigration::Create(old_ring, new_ring);
  ASSERT_TRUE(migration.ok()) << migration.status().ToString();
  RingMigration& m = *migration.value();
  EXPECT_TRUE(m.backends_match());
  m.SetInScope(true);
  ASSERT_TRUE(m.SetRollout(0.5).ok());
  size_t on_new = 0;
  std::vector<std::string> keys;
  for (int k = 0; k < 2000; ++k) keys.push_back("user:" + std::to_string(k));
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<uint32_t> nodes(keys.size());
  std::vector<RingSide> sides(keys.size());
  ASSERT_EQ(m.FindNodes(views, nodes, sides), keys.size());
  for (size_t k = 0; k < keys.size(); ++k) {
    const MigrationAnswer answer = m.Find(keys[k]);
    EXPECT_EQ(answer.node, m.ring(answer.side).FindNode(keys[k]));
    EXPECT_EQ(nodes[k], answer.node);
    EXPECT_EQ(sides[k], answer.side);
    on_new += answer.side == RingSide::kNew ? 1 : 0;
  }
  EXPECT_NEAR(on_new / 2000.0, 0.5, 0.05);
  // The expected fraction that changes backend at 50%: half the estimate.
  Result<RingDiff> diff = DiffRings(*old_ring, *new_ring);
  ASSERT_TRUE(diff.ok());
  EXPECT_FALSE(diff.value().exact);
}

TEST(ProgramOps, PlanFromAnotherProgram) {
  std::vector<ServerEntry> servers;
  for (int i = 0; i < 12; ++i)
    servers.push_back({"10.4.0." + std::to_string(i) + ":80", 1 + static_cast<uint32_t>(i % 3), 0});
  Result<Plan> plan = PlanPointMultiples(servers, {.flavor = Flavor::kHaproxy},
                                         {.multiples = {16, 160}, .cv_target = 0.05});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan.value().current.program_bytes, 48 * plan.value().current.points);
  for (const PlanRow& row : plan.value().rows) {
    EXPECT_FALSE(row.moved_exact);
    EXPECT_GT(row.moved_fraction, 0);
  }
  Result<Plan> crc =
      PlanPointMultiples(servers,
                         {.flavor = Flavor::kHaproxy,
                          .haproxy = {.hash_function = HaproxyHash::kCrc32, .avalanche = false}},
                         {.multiples = {16}});
  ASSERT_TRUE(crc.ok());
  EXPECT_TRUE(crc.value().rows[0].moved_exact);
}

}  // namespace
}  // namespace chash
