// Consistency properties, checked exhaustively: answers only change at point
// hashes, so comparing two rings at every boundary hash of both (0, 2^32-1,
// each point and +-1) compares them on all 2^32 keys.
#include <random>
#include <set>

#include "ring_fixtures.h"
#include "test_util.h"

namespace chash {
namespace {

std::vector<uint32_t> BoundariesOfBoth(const Ring& a, const Ring& b) {
  std::vector<uint32_t> hashes = {0, 0xFFFFFFFFu};
  for (const Ring* ring : {&a, &b}) {
    PointCursor cursor = ring->Begin();
    for (uint64_t i = 0; i < ring->num_points(); ++i, cursor.Advance()) {
      for (const uint32_t h : {cursor.hash() - 1, cursor.hash(), cursor.hash() + 1}) {
        hashes.push_back(h);
      }
    }
  }
  return hashes;
}

// A random ring of the round's flavor (rounds cycle through the three).
testing::RingSpec RoundSpec(std::mt19937_64& rng, size_t round, uint32_t min_nodes) {
  const Flavor flavor = static_cast<Flavor>(round % 3);
  const uint32_t multiple = flavor == Flavor::kPingoraV2 ? 1 + rng() % 40 : 160;
  return testing::RandomRingSpec(rng, flavor, multiple, min_nodes + rng() % 30, 10);
}

TEST(Properties, AddingANodeMovesKeysOnlyToThatNode) {
  std::mt19937_64 rng(5);
  for (size_t round = 0; round < testing::Scaled(60, 6); ++round) {
    testing::RingSpec spec = RoundSpec(rng, round, 2);
    const Ring before = testing::BuildEngine(spec);
    // The new node goes anywhere in the configuration order.
    const size_t position = rng() % (spec.servers.size() + 1);
    const std::string added = testing::RandomAddress(rng, spec.flavor, 60000 + round);
    spec.servers.insert(spec.servers.begin() + position, {added, 1 + uint32_t(rng() % 10)});
    const Ring after = testing::BuildEngine(spec);
    size_t moved = 0;
    for (const uint32_t h : BoundariesOfBoth(before, after)) {
      const std::string& old_node = before.node(before.FindNodeByHash(h)).address.written;
      const std::string& new_node = after.node(after.FindNodeByHash(h)).address.written;
      if (old_node != new_node) {
        ++moved;
        ASSERT_EQ(new_node, added) << "hash " << h << " moved from " << old_node
                                   << " to a node that was already there\n"
                                   << spec.Describe();
      }
    }
    EXPECT_GT(moved, 0u) << "the new node took no key at all";
  }
}

TEST(Properties, RemovingANodeMovesOnlyItsKeys) {
  std::mt19937_64 rng(6);
  for (size_t round = 0; round < testing::Scaled(60, 6); ++round) {
    testing::RingSpec spec = RoundSpec(rng, round, 3);
    const Ring before = testing::BuildEngine(spec);
    const size_t removed_index = rng() % spec.servers.size();
    const std::string removed = spec.servers[removed_index].address;
    spec.servers.erase(spec.servers.begin() + removed_index);
    const Ring after = testing::BuildEngine(spec);
    for (const uint32_t h : BoundariesOfBoth(before, after)) {
      const std::string& old_node = before.node(before.FindNodeByHash(h)).address.written;
      const std::string& new_node = after.node(after.FindNodeByHash(h)).address.written;
      if (old_node != new_node) {
        ASSERT_EQ(old_node, removed) << "hash " << h;
      }
    }
  }
}

TEST(Properties, AWalkReturnsToItsStartAfterAllPoints) {
  std::mt19937_64 rng(8);
  for (size_t round = 0; round < testing::Scaled(40, 4); ++round) {
    const testing::RingSpec spec =
        testing::RandomRingSpec(rng, Flavor::kPingoraV2, 1 + rng() % 20, 1 + rng() % 20, 5);
    const Ring ring = testing::BuildEngine(spec);
    const PointCursor start = ring.WalkFromHash(static_cast<uint32_t>(rng()));
    PointCursor walk = start;
    std::set<uint32_t> hashes_seen;
    for (uint64_t i = 0; i < ring.num_points(); ++i) {
      EXPECT_TRUE(hashes_seen.insert(walk.hash()).second) << "a point visited twice";
      walk.Advance();
      if (i + 1 < ring.num_points()) {
        EXPECT_FALSE(walk == start) << "back too early";
      }
    }
    EXPECT_TRUE(walk == start);
    EXPECT_EQ(hashes_seen.size(), ring.num_points());
  }
}

TEST(Properties, DistinctWalkVisitsEveryNodeWithPointsOnce) {
  std::mt19937_64 rng(9);
  for (size_t round = 0; round < testing::Scaled(40, 4); ++round) {
    const testing::RingSpec spec =
        testing::RandomRingSpec(rng, Flavor::kNginx, 160, 1 + rng() % 40, 3);
    const Ring ring = testing::BuildEngine(spec);
    const uint32_t start_hash = static_cast<uint32_t>(rng());
    DistinctNodeWalk walk = ring.WalkDistinctFromHash(start_hash);
    std::set<uint32_t> seen;
    const uint32_t first = walk.Next();
    EXPECT_EQ(first, ring.FindNodeByHash(start_hash)) << "the walk starts at the key's node";
    for (uint32_t node = first; node != Ring::kNoNode; node = walk.Next()) {
      EXPECT_TRUE(seen.insert(node).second) << "node " << node << " twice";
    }
    EXPECT_EQ(seen.size(), ring.nodes_with_points());
    EXPECT_EQ(walk.Next(), Ring::kNoNode);
  }
}

}  // namespace
}  // namespace chash
