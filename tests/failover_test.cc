// Masked lookups answer exactly as the ring of the available nodes, built on
// its own (through RingBuilder AND the reference oracle), for every key hash:
// answers are piecewise constant between points, so probing every point
// hash of both rings, +-1, 0 and 2^32-1 covers every interval. Rings with
// real collisions (nginx a: 4, d: 88) and forced ones (raw points) make the
// collided hashes decide. Also: AvailabilityMask under concurrent Publish,
// and bounded loads.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <random>
#include <set>
#include <thread>

#include "reference/reference_ring.h"
#include "test_util.h"

namespace chash {
namespace {

using reference::ReferenceRing;
using testing::LoadServers;

// Every hash at which an answer can change, and its neighbours.
std::vector<uint32_t> ProbeHashes(const std::vector<const Ring*>& rings) {
  std::vector<uint32_t> probes = {0, 1, 0xFFFFFFFEu, 0xFFFFFFFFu};
  for (const Ring* ring : rings) {
    PointCursor cursor = ring->Begin();
    for (uint64_t i = 0; i < ring->num_points(); ++i, cursor.Advance()) {
      probes.push_back(cursor.hash() - 1);
      probes.push_back(cursor.hash());
      probes.push_back(cursor.hash() + 1);
    }
  }
  std::sort(probes.begin(), probes.end());
  probes.erase(std::unique(probes.begin(), probes.end()), probes.end());
  return probes;
}

NodeMask RandomMask(uint32_t nodes, double up_fraction, std::mt19937& rng) {
  NodeMask mask(nodes, false);
  std::bernoulli_distribution up(up_fraction);
  for (uint32_t node = 0; node < nodes; ++node) mask.Set(node, up(rng));
  return mask;
}

struct FlavorCase {
  std::string servers;
  Flavor flavor;
  uint32_t multiple;
  std::vector<double> up_fractions;  // one random mask each; 0: one node up
};

void PrintTo(const FlavorCase& c, std::ostream* out) {
  *out << c.servers << " " << FlavorName(c.flavor) << " x" << c.multiple;
}

class MaskedEqualsSubsetRing : public ::testing::TestWithParam<FlavorCase> {};

TEST_P(MaskedEqualsSubsetRing, ForRandomMasks) {
  const FlavorCase& c = GetParam();
  const std::vector<ServerEntry> servers = LoadServers(c.servers);
  const RingOptions options{.flavor = c.flavor, .point_multiple = c.multiple};
  const Ring ring = testing::MustBuild(servers, options);
  ASSERT_GT(ring.collisions(), 0u) << "the case must exercise collided hashes";
  std::mt19937 rng(12345);
  for (size_t m = 0; m < c.up_fractions.size(); ++m) {
    NodeMask mask = RandomMask(ring.num_nodes(), c.up_fractions[m], rng);
    if (c.up_fractions[m] == 0) {  // one node up: every key goes to it
      mask = NodeMask(ring.num_nodes(), false);
      mask.Set(static_cast<uint32_t>(rng() % ring.num_nodes()), true);
    }
    SCOPED_TRACE("mask " + std::to_string(m) + ", " + std::to_string(mask.count_available()) +
                 " of " + std::to_string(ring.num_nodes()) + " nodes up");
    // The subset's servers file: the available lines, in the same order.
    std::vector<ServerEntry> subset;
    std::vector<reference::Server> subset_ref;
    for (uint32_t id = 0; id < servers.size(); ++id) {
      if (!mask.available(id)) continue;
      subset.push_back(servers[id]);
      subset_ref.push_back({servers[id].address, servers[id].weight});
    }
    const Ring subset_ring = testing::MustBuild(subset, options);
    Result<ReferenceRing> oracle = ReferenceRing::Build(c.flavor, c.multiple, subset_ref);
    ASSERT_TRUE(oracle.ok());
    AvailabilityMask published(ring.num_nodes());
    ASSERT_TRUE(published.Publish(mask).ok());

    const std::vector<uint32_t> probes = ProbeHashes({&ring, &subset_ring});
    std::vector<uint32_t> batch(probes.size());
    FindAvailableNodesByHash(ring, mask, probes, batch);
    size_t mismatches = 0;
    for (size_t i = 0; i < probes.size(); ++i) {
      const uint32_t hash = probes[i];
      const uint32_t masked = FindAvailableNodeByHash(ring, mask, hash);
      const uint32_t expected_id = subset_ring.FindNodeByHash(hash);
      const uint32_t oracle_id = oracle.value().FindNodeByHash(hash);
      ASSERT_EQ(expected_id, oracle_id) << "engine and oracle subset rings disagree";
      if (expected_id == Ring::kNoNode) {
        if (masked != Ring::kNoNode && ++mismatches <= 5) {
          ADD_FAILURE() << "hash " << hash << ": no node is up, masked answered " << masked;
        }
      } else if (masked == Ring::kNoNode || ring.node(masked).address.written !=
                                                subset_ring.node(expected_id).address.written) {
        if (++mismatches <= 5) {
          ADD_FAILURE() << "hash " << hash << ": subset ring answers "
                        << subset_ring.node(expected_id).address.written << ", masked "
                        << (masked == Ring::kNoNode ? "none" : ring.node(masked).address.written);
        }
      }
      EXPECT_EQ(batch[i], masked);
      EXPECT_EQ(published.FindNodeByHash(ring, hash), masked);
    }
    EXPECT_EQ(mismatches, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rings, MaskedEqualsSubsetRing,
    ::testing::Values(
        FlavorCase{"nginx/a.servers", Flavor::kNginx, 160, {0.9, 0.7, 0.5, 0.3, 0.2, 0.0}},
        FlavorCase{"nginx/d.servers", Flavor::kNginx, 160, {0.8, 0.3}},
        FlavorCase{"pingora/servers_50.txt", Flavor::kPingoraV1, 160, {0.9, 0.5, 0.2, 0.0}},
        FlavorCase{"pingora/servers_50.txt", Flavor::kPingoraV2, 160, {0.9, 0.5, 0.2, 0.0}}),
    [](const ::testing::TestParamInfo<FlavorCase>& param) {
      // "nginx_a_servers_nginx", "pingora_servers_50_txt_pingora_v1", ...
      std::string name = param.param.servers + "_" + std::string(FlavorName(param.param.flavor));
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

// Every node of nginx a is down except the loser of a collided hash: masked
// lookups at that hash must answer the loser, as the subset ring does.
TEST(MaskedLookup, CollidedHashGoesToTheAvailableLoser) {
  const std::vector<ServerEntry> servers = LoadServers("nginx/a.servers");
  const Ring ring = testing::MustBuild(servers, {});
  const CollisionLosers losers = ring.collision_losers();
  ASSERT_FALSE(losers.hashes.empty());
  for (size_t i = 0; i < losers.hashes.size(); ++i) {
    const uint32_t hash = losers.hashes[i];
    const uint32_t winner = ring.FindNodeByHash(hash);
    NodeMask mask(ring.num_nodes(), true);
    mask.Set(winner, false);
    // The best-ranked available contender: the first loser listed.
    size_t first = i;
    while (first > 0 && losers.hashes[first - 1] == hash) --first;
    EXPECT_EQ(FindAvailableNodeByHash(ring, mask, hash), losers.nodes[first]);
  }
}

// A hand-made ring: hash 100 is held by nodes 2, 0 and 1, tie ranks 1 < 2 < 0
// (so node 1 wins, then 2, then 0); node 3 owns hash 200; node 0 owns 300.
TEST(MaskedLookup, HandMadeCollision) {
  const RawPoint points[] = {{100, 2}, {100, 0}, {300, 0}, {100, 1}, {200, 3}};
  const uint32_t rank[] = {2, 0, 1, 3};
  Result<Ring> built = BuildRingFromPoints(4, points, rank);
  ASSERT_TRUE(built.ok());
  const Ring& ring = built.value();
  auto answer = [&](std::initializer_list<uint32_t> down, uint32_t hash) {
    NodeMask mask(4, true);
    for (uint32_t node : down) mask.Set(node, false);
    return FindAvailableNodeByHash(ring, mask, hash);
  };
  EXPECT_EQ(answer({}, 50), 1u);
  EXPECT_EQ(answer({1}, 50), 2u);
  EXPECT_EQ(answer({1, 2}, 50), 0u);
  EXPECT_EQ(answer({0, 1, 2}, 50), 3u);
  EXPECT_EQ(answer({0, 1, 2}, 250), 3u);  // past 200, wraps round to 200
  EXPECT_EQ(answer({1, 2}, 301), 0u);     // wraps to hash 100: node 0
  EXPECT_EQ(answer({1, 2, 3}, 150), 0u);  // 200 down, 300 is node 0
  EXPECT_EQ(answer({0, 1, 2, 3}, 150), Ring::kNoNode);
  EXPECT_EQ(answer({}, 100), 1u);
  EXPECT_EQ(answer({1}, 101), 3u);
}

// Raw rings with few distinct hashes (so most points collide), random tie
// ranks and random masks: the subset ring is the same points minus the
// unavailable nodes', the same node ids and ranks.
TEST(MaskedLookup, RawRingsWithForcedCollisions) {
  std::mt19937 rng(99);
  for (size_t round = 0; round < testing::Scaled(300, 40); ++round) {
    const uint32_t num_nodes = 1 + rng() % 20;
    const std::vector<uint32_t> rank = testing::TieRanks(num_nodes, &rng);
    const uint32_t hashes = 1 + rng() % 40;
    std::vector<RawPoint> points;
    for (uint32_t i = 0, n = rng() % 120; i < n; ++i) {
      // Spread over the whole space, and hit 0 and 2^32-1 now and then.
      const uint32_t slot = rng() % hashes;
      const uint32_t hash = slot == 0 ? 0 : slot == 1 ? 0xFFFFFFFFu : slot * 0x0A3D70A3u;
      points.push_back({hash, static_cast<uint32_t>(rng() % num_nodes)});
    }
    Result<Ring> ring = BuildRingFromPoints(num_nodes, points, rank);
    ASSERT_TRUE(ring.ok());
    for (int m = 0; m < 4; ++m) {
      const NodeMask mask = RandomMask(num_nodes, 0.2 + 0.2 * m, rng);
      std::vector<RawPoint> subset_points;
      for (const RawPoint& p : points) {
        if (mask.available(p.node)) subset_points.push_back(p);
      }
      Result<Ring> subset = BuildRingFromPoints(num_nodes, subset_points, rank);
      ASSERT_TRUE(subset.ok());
      Result<ReferenceRing> oracle = ReferenceRing::FromPoints(
          num_nodes, subset_points, std::vector<uint32_t>(rank.begin(), rank.end()));
      ASSERT_TRUE(oracle.ok());
      for (const uint32_t hash : ProbeHashes({&ring.value(), &subset.value()})) {
        const uint32_t expected = subset.value().FindNodeByHash(hash);
        ASSERT_EQ(expected, oracle.value().FindNodeByHash(hash));
        ASSERT_EQ(FindAvailableNodeByHash(ring.value(), mask, hash), expected)
            << "round " << round << " mask " << m << " hash " << hash;
      }
    }
  }
}

TEST(MaskedLookup, NoNodeAvailableAndEdgeCases) {
  const Ring empty;
  EXPECT_EQ(FindAvailableNodeByHash(empty, NodeMask(4, true), 7), Ring::kNoNode);
  const Ring ring = testing::MustBuild(LoadServers("nginx/a.servers"), {});
  const NodeMask none(ring.num_nodes(), false);
  EXPECT_EQ(none.count_available(), 0u);
  for (uint32_t hash : {0u, 12345u, 0xFFFFFFFFu}) {
    EXPECT_EQ(FindAvailableNodeByHash(ring, none, hash), Ring::kNoNode);
    // A mask covering fewer nodes than the ring: the others count as down.
    EXPECT_EQ(FindAvailableNodeByHash(ring, NodeMask(0), hash), Ring::kNoNode);
    EXPECT_EQ(FindAvailableNodeByHash(ring, NodeMask(3, true), hash),
              FindAvailableNodeByHash(
                  ring,
                  [&] {
                    NodeMask first3(ring.num_nodes(), false);
                    for (uint32_t i = 0; i < 3; ++i) first3.Set(i, true);
                    return first3;
                  }(),
                  hash));
  }
  // All up: the plain answer.
  const NodeMask all(ring.num_nodes(), true);
  for (uint32_t hash = 0; hash < 4000000000u; hash += 39916801u) {
    EXPECT_EQ(FindAvailableNodeByHash(ring, all, hash), ring.FindNodeByHash(hash));
  }
  std::vector<std::string_view> keys = {"/a", "/b", "", "/index.html"};
  std::vector<uint32_t> out(keys.size());
  FindAvailableNodes(ring, none, keys, out);
  for (uint32_t node : out) EXPECT_EQ(node, Ring::kNoNode);
  FindAvailableNodes(ring, all, keys, out);
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(out[i], ring.FindNode(keys[i]));
}

TEST(NodeMaskTest, CountFollowsSet) {
  std::mt19937 rng(3);
  NodeMask mask(1000, false);
  std::vector<bool> model(1000, false);
  for (int i = 0; i < 5000; ++i) {
    const uint32_t node = rng() % 1000;
    const bool up = rng() % 2;
    mask.Set(node, up);
    model[node] = up;
    ASSERT_EQ(mask.count_available(),
              static_cast<uint32_t>(std::count(model.begin(), model.end(), true)));
  }
}

TEST(NodeMaskTest, Bits) {
  NodeMask mask(70, true);
  EXPECT_EQ(mask.size(), 70u);
  EXPECT_EQ(mask.count_available(), 70u);
  EXPECT_EQ(mask.words().size(), 2u);
  EXPECT_EQ(mask.words()[1], (uint64_t{1} << 6) - 1);  // no bits past size()
  EXPECT_TRUE(mask.Set(69, false));
  EXPECT_FALSE(mask.Set(70, true));
  EXPECT_FALSE(mask.available(69));
  EXPECT_FALSE(mask.available(70));
  EXPECT_FALSE(mask.available(Ring::kNoNode));
  EXPECT_EQ(mask.count_available(), 69u);
  EXPECT_EQ(NodeMask(kMaxNodes + 5).size(), kMaxNodes);
}

TEST(AvailabilityMaskTest, PublishSnapshotVersion) {
  AvailabilityMask published(130);
  EXPECT_EQ(published.version(), 0u);
  EXPECT_EQ(published.Snapshot(), NodeMask(130, true));
  NodeMask mask(130, true);
  mask.Set(129, false);
  mask.Set(3, false);
  ASSERT_TRUE(published.Publish(mask).ok());
  uint64_t version = 0;
  EXPECT_EQ(published.Snapshot(&version), mask);
  EXPECT_EQ(version, 1u);
  const Status wrong = published.Publish(NodeMask(129));
  EXPECT_EQ(wrong.code(), StatusCode::kBadArgument);
  EXPECT_EQ(published.version(), 1u);
  ASSERT_TRUE(published.Publish(NodeMask(130, false)).ok());
  EXPECT_EQ(published.version(), 2u);
}

// Readers look up while a writer flips between two masks that share no
// available node. Each answer must be the answer under one of them: a torn
// mask (some words of each) would answer otherwise (often kNoNode, or a
// node of the wrong half).
TEST(AvailabilityMaskTest, ReadersNeverSeeATornMask) {
  std::vector<RawPoint> points;
  std::mt19937 rng(5);
  constexpr uint32_t kNodes = 1024;  // 16 mask words
  for (uint32_t node = 0; node < kNodes; ++node) {
    for (int i = 0; i < 8; ++i) points.push_back({static_cast<uint32_t>(rng()), node});
  }
  Result<Ring> built = BuildRingFromPoints(kNodes, points);
  ASSERT_TRUE(built.ok());
  const Ring& ring = built.value();
  // Mask A: even words up; mask B: odd words up.
  NodeMask a(kNodes, false), b(kNodes, false);
  for (uint32_t node = 0; node < kNodes; ++node) (node / 64 % 2 == 0 ? a : b).Set(node, true);
  std::vector<uint32_t> probes(4096);
  for (uint32_t& probe : probes) probe = static_cast<uint32_t>(rng());
  std::vector<uint32_t> under_a(probes.size()), under_b(probes.size());
  for (size_t i = 0; i < probes.size(); ++i) {
    under_a[i] = FindAvailableNodeByHash(ring, a, probes[i]);
    under_b[i] = FindAvailableNodeByHash(ring, b, probes[i]);
  }
  AvailabilityMask published(kNodes);
  ASSERT_TRUE(published.Publish(a).ok());
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0}, lookups{0};
  // The writer publishes once per completed lookup (any reader's): Publish
  // overlaps lookups all the time, but cannot starve them (see failover.h).
  std::thread writer([&] {
    uint64_t seen = 0;
    for (int i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      (void)published.Publish(i % 2 ? a : b);
      while (lookups.load(std::memory_order_relaxed) == seen &&
             !stop.load(std::memory_order_relaxed)) {
        std::this_thread::yield();
      }
      seen = lookups.load(std::memory_order_relaxed);
    }
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      for (size_t round = 0; round < testing::Scaled(100, 25); ++round) {
        for (size_t i = 0; i < probes.size(); ++i) {
          const uint32_t node = published.FindNodeByHash(ring, probes[i]);
          if (node != under_a[i] && node != under_b[i]) bad.fetch_add(1);
          lookups.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  for (std::thread& reader : readers) reader.join();
  stop = true;
  writer.join();
  EXPECT_EQ(bad.load(), 0u) << "of " << lookups.load() << " lookups";
  EXPECT_GT(published.version(), 1u);
}

// ---- Bounded loads ---------------------------------------------------------------

// The capacity rule, computed here in integers for c = num/den:
// ceil(num * (total + 1) / (den * nodes)).
uint64_t ExpectedCapacity(uint64_t total, uint64_t nodes, uint64_t num, uint64_t den) {
  return (num * (total + 1) + den * nodes - 1) / (den * nodes);
}

TEST(BoundedLoad, CapacityRule) {
  EXPECT_EQ(BoundedLoadCapacity(0, 4, 1.25), 1u);
  EXPECT_EQ(BoundedLoadCapacity(99, 10, 1.25), 13u);  // 1.25 * 100 / 10 = 12.5
  EXPECT_EQ(BoundedLoadCapacity(99, 10, 1.5), 15u);   // exactly 15
  EXPECT_EQ(BoundedLoadCapacity(5, 0, 1.25), 0u);
  EXPECT_EQ(BoundedLoadCapacity(5, 3, 1.0), 0u);
  EXPECT_EQ(BoundedLoadCapacity(5, 3, std::nan("")), 0u);
  EXPECT_EQ(BoundedLoadCapacity(UINT64_MAX, 1, 4.0), UINT64_MAX);
  for (uint64_t total = 0; total < 5000; total += 7) {
    for (uint64_t nodes = 1; nodes < 40; nodes += 3) {
      ASSERT_EQ(BoundedLoadCapacity(total, nodes, 1.25), ExpectedCapacity(total, nodes, 5, 4));
      ASSERT_EQ(BoundedLoadCapacity(total, nodes, 2.0), ExpectedCapacity(total, nodes, 2, 1));
    }
  }
}

// Found by fuzz_ring_diff: a factor over 1e9 gave 2^64 - 1 whatever the
// loads, although the formula's capacity is finite and reachable by u64 loads.
TEST(BoundedLoad, CapacityRuleForHugeFactors) {
  EXPECT_EQ(BoundedLoadCapacity(0, 1, 1e12), 1000000000000u);
  EXPECT_EQ(BoundedLoadCapacity(0, 1, 2e9), 2000000000u);
  EXPECT_EQ(BoundedLoadCapacity(9, 4, 1e12), 2500000000000u);  // 1e12 * 10 / 4
  EXPECT_EQ(BoundedLoadCapacity(0, 65536, 1e15), 15258789063u);  // ceil(1e15 / 65536)
  EXPECT_EQ(BoundedLoadCapacity(1ull << 40, 1, 1e12), UINT64_MAX);  // 1.1e24: saturated
  EXPECT_EQ(BoundedLoadCapacity(0, 1, 1e300), UINT64_MAX);
  EXPECT_EQ(BoundedLoadCapacity(UINT64_MAX, 1, 1e30), UINT64_MAX);
  EXPECT_EQ(BoundedLoadCapacity(UINT64_MAX - 1, 65536, 1.000001), 281475258185633u);
}

// Found by the fuzzer's own derivation of the capacity (fuzz/capacity_model.cc,
// exact integers from the factor's IEEE bits): the engine rounded the double
// product c * 1e6, a second rounding, and saturated every factor from 2^80
// on, assuming at most 2^16 nodes although `nodes` is any u32.
TEST(BoundedLoad, CapacityRuleRoundsTheFactorsExactValueOnce) {
  // 1.0000015 is stored as 1.00000149999999998...: 1000001 parts per million.
  EXPECT_EQ(BoundedLoadCapacity(999999, 1, 1.0000015), 1000001u);
  // 1.0000005 is stored as 1.00000050000000006...: 1000001 too.
  EXPECT_EQ(BoundedLoadCapacity(999999, 1, 1.0000005), 1000001u);
  EXPECT_EQ(BoundedLoadCapacity(999999, 1, 1.000001), 1000001u);
  // ceil(2^81 / (2^32 - 1)), far below 2^64.
  EXPECT_EQ(BoundedLoadCapacity(0, UINT32_MAX, 0x1p81), 562949953552385u);
  EXPECT_EQ(BoundedLoadCapacity(0, UINT32_MAX, 0x1p95), 9223372039002259457u);
  EXPECT_EQ(BoundedLoadCapacity(0, UINT32_MAX, 0x1p97), UINT64_MAX);
}

TEST(BoundedLoad, RejectsBadInput) {
  const Ring ring = testing::MustBuild(LoadServers("nginx/a.servers"), {});
  std::vector<uint64_t> loads(ring.num_nodes(), 0);
  for (double c : {1.0, 0.5, -2.0, std::nan(""), double{INFINITY}}) {
    EXPECT_EQ(FindNodeBoundedLoad(ring, 5, loads, c).status().code(), StatusCode::kBadArgument)
        << c;
  }
  std::vector<uint64_t> short_loads(ring.num_nodes() - 1, 0);
  EXPECT_EQ(FindNodeBoundedLoad(ring, 5, short_loads, 1.25).status().code(),
            StatusCode::kBadArgument);
  const Ring empty;
  Result<uint32_t> none = FindNodeBoundedLoad(empty, 5, std::span<const uint64_t>(), 1.25);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none.value(), Ring::kNoNode);
}

// With no load anywhere every node is below capacity: the plain answer.
TEST(BoundedLoad, IdleFleetGivesThePlainAnswer) {
  const Ring ring = testing::MustBuild(LoadServers("nginx/d.servers"), {});
  std::vector<uint32_t> loads(ring.num_nodes(), 0);
  for (uint32_t hash = 0; hash < 4000000000u; hash += 7654321u) {
    Result<uint32_t> node = FindNodeBoundedLoad(ring, hash, loads, 1.1);
    ASSERT_TRUE(node.ok());
    EXPECT_EQ(node.value(), ring.FindNodeByHash(hash));
  }
}

// Keys arrive (and some leave) on a skewed stream; every assignment must
// stay within capacity, and must be the first node of the subset ring's
// distinct walk (the oracle) that is below capacity.
TEST(BoundedLoad, CapacityIsNeverExceeded) {
  const std::vector<ServerEntry> servers = LoadServers("nginx/a.servers");
  const Ring ring = testing::MustBuild(servers, {});
  std::mt19937 rng(2024);
  for (const auto& [num, den] : {std::pair<uint64_t, uint64_t>{5, 4}, {11, 10}, {2, 1}}) {
    for (bool masked : {false, true}) {
      const double c = static_cast<double>(num) / static_cast<double>(den);
      SCOPED_TRACE("c " + std::to_string(c) + (masked ? ", masked" : ""));
      NodeMask mask(ring.num_nodes(), true);
      std::vector<reference::Server> up_servers;
      std::vector<uint32_t> subset_to_full;
      if (masked) {
        mask.Set(2, false);
        mask.Set(5, false);
      }
      for (uint32_t id = 0; id < servers.size(); ++id) {
        if (!mask.available(id)) continue;
        up_servers.push_back({servers[id].address, servers[id].weight});
        subset_to_full.push_back(id);
      }
      Result<ReferenceRing> oracle = ReferenceRing::Build(Flavor::kNginx, 160, up_servers);
      ASSERT_TRUE(oracle.ok());
      std::vector<uint64_t> loads(ring.num_nodes(), 0);
      std::vector<std::pair<uint32_t, uint32_t>> active;  // (hash, node)
      const uint64_t up = mask.count_available();
      // Hot keys: a few hashes repeat often, so plain hashing would pile up.
      std::vector<uint32_t> hot(5);
      for (uint32_t& h : hot) h = static_cast<uint32_t>(rng());
      for (size_t step = 0; step < testing::Scaled(20000, 4000); ++step) {
        if (!active.empty() && rng() % 3 == 0) {  // a key leaves
          const size_t victim = rng() % active.size();
          --loads[active[victim].second];
          active[victim] = active.back();
          active.pop_back();
          continue;
        }
        const uint32_t hash = rng() % 2 ? hot[rng() % hot.size()] : static_cast<uint32_t>(rng());
        uint64_t total = 0;
        for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
          if (mask.available(id)) total += loads[id];
        }
        const uint64_t capacity = ExpectedCapacity(total, up, num, den);
        Result<uint32_t> node = FindNodeBoundedLoad(ring, hash, loads, c, masked ? &mask : nullptr);
        ASSERT_TRUE(node.ok());
        ASSERT_NE(node.value(), Ring::kNoNode);
        ASSERT_TRUE(mask.available(node.value()));
        ASSERT_LT(loads[node.value()], capacity) << "step " << step;
        // The oracle: the subset ring's points from the key's, in order.
        uint32_t expected = Ring::kNoNode;
        const std::vector<reference::Point>& sub_points = oracle.value().points();
        const size_t start = oracle.value().FindPoint(hash);
        for (size_t i = 0; i < sub_points.size(); ++i) {
          const uint32_t full = subset_to_full[sub_points[(start + i) % sub_points.size()].node];
          if (loads[full] < capacity) {
            expected = full;
            break;
          }
        }
        ASSERT_EQ(node.value(), expected) << "step " << step;
        ++loads[node.value()];
        ASSERT_LE(loads[node.value()], capacity);
        active.emplace_back(hash, node.value());
      }
    }
  }
}

// FindNodeUnderCapacity with a capacity no node is below: kNoNode after one
// turn, not a loop.
TEST(BoundedLoad, FullFleetEndsTheWalk) {
  const Ring ring = testing::MustBuild(LoadServers("nginx/a.servers"), {});
  std::vector<uint64_t> loads(ring.num_nodes(), 10);
  EXPECT_EQ(FindNodeUnderCapacity(ring, 77, loads, 10), Ring::kNoNode);
  loads[4] = 9;
  EXPECT_EQ(FindNodeUnderCapacity(ring, 77, loads, 10), 4u);
  NodeMask mask(ring.num_nodes(), true);
  mask.Set(4, false);
  EXPECT_EQ(FindNodeUnderCapacity(ring, 77, loads, 10, &mask), Ring::kNoNode);
}

// A walk that cannot succeed stops after a scan of the nodes rather than a
// turn of the ring (masked_walk.h), and a long walk that can succeed still
// does. Node 2's only point loses a collision to node 0: it is in no column
// slot, yet with node 0 down it answers every key, so the scan must count
// points in the collision table (has_points), not only kept ones.
TEST(MaskedLookup, FruitlessWalksStopAndLongWalksStillFind) {
  constexpr uint32_t kNodes = 4;
  std::vector<RawPoint> points;
  for (uint32_t i = 0; i < 500; ++i) points.push_back({i * 8589934u + 17, 0});
  points.push_back({points[250].hash, 2});
  Result<Ring> built = BuildRingFromPoints(kNodes, points);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const Ring& ring = built.value();
  ASSERT_EQ(ring.num_points(), 500u);
  EXPECT_TRUE(ring.owns_points(0) && ring.has_points(0));
  EXPECT_TRUE(!ring.owns_points(2) && ring.has_points(2));
  EXPECT_TRUE(!ring.has_points(1) && !ring.has_points(3) && !ring.has_points(kNodes));

  auto only = [](uint32_t size, uint32_t id) {
    NodeMask mask(size, false);
    mask.Set(id, true);
    return mask;
  };
  const NodeMask node2_up = only(kNodes, 2);
  AvailabilityMask health(kNodes);
  ASSERT_TRUE(health.Publish(node2_up).ok());
  std::vector<uint64_t> loads(kNodes, 5);
  const std::vector<uint32_t> probes = ProbeHashes({&ring});
  for (const uint32_t hash : probes) {
    // Up to 500 points from the key's point to node 2's: past the scan.
    EXPECT_EQ(FindAvailableNodeByHash(ring, node2_up, hash), 2u) << hash;
    EXPECT_EQ(health.FindNodeByHash(ring, hash), 2u) << hash;
    // Up, but without points, or outside the ring: no node can answer.
    EXPECT_EQ(FindAvailableNodeByHash(ring, only(kNodes, 1), hash), Ring::kNoNode) << hash;
    EXPECT_EQ(FindAvailableNodeByHash(ring, only(100, 77), hash), Ring::kNoNode) << hash;
    // Every node at capacity, then (below) only node 2 below it.
    EXPECT_EQ(FindNodeUnderCapacity(ring, hash, loads, 5), Ring::kNoNode) << hash;
    EXPECT_EQ(FindNodeUnderCapacity(ring, hash, loads, 5, &node2_up), Ring::kNoNode) << hash;
  }
  loads[2] = 4;
  for (const uint32_t hash : probes) {
    EXPECT_EQ(FindNodeUnderCapacity(ring, hash, loads, 5, &node2_up), 2u) << hash;
    // Unmasked, node 0 wins node 2's only hash: node 2 is on no walk.
    EXPECT_EQ(FindNodeUnderCapacity(ring, hash, loads, 5), Ring::kNoNode) << hash;
  }
}

}  // namespace
}  // namespace chash
