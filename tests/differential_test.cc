// The engine against the reference continuum on thousands of random rings:
// every flavor, several multiples, IPv4/IPv6/names, 1..2,000 nodes, weights
// 1..10. Checked: the whole ring in order, every boundary hash (0, 2^32-1,
// each point and +-1, which decide every answer) on the default target, then
// on every SIMD target, each forced in turn, 512 of those hashes drawn at
// random and 64 keys, single and batch, and walks.
#include <algorithm>
#include <random>

#include "ring_fixtures.h"
#include "test_util.h"

namespace chash {
namespace {

using reference::ReferenceRing;
using testing::BoundaryHashes;
using testing::RingSpec;

// Checks one ring. Every boundary hash on the default target in one batch;
// on each forced target a sample of them, single and batch.
void ExpectSameRing(const RingSpec& spec, std::mt19937_64& rng) {
  const Ring ring = testing::BuildEngine(spec);
  const ReferenceRing ref = testing::BuildReference(spec);
  const auto& points = ref.points();
  ASSERT_EQ(ring.points_generated(), ref.points_generated()) << spec.Describe();
  ASSERT_EQ(ring.num_points(), points.size()) << spec.Describe();
  ASSERT_EQ(ring.num_nodes(), spec.servers.size());

  // The whole ring in order: the layout holds exactly the reference points.
  PointCursor cursor = ring.Begin();
  for (size_t i = 0; i < points.size(); ++i) {
    ASSERT_EQ(cursor.hash(), points[i].hash) << "point " << i << "\n" << spec.Describe();
    ASSERT_EQ(cursor.node(), points[i].node) << "point " << i << "\n" << spec.Describe();
    cursor.Advance();
  }
  EXPECT_TRUE(cursor == ring.Begin()) << "the walk must return to its start";

  const std::vector<uint32_t> hashes = BoundaryHashes(points);
  std::vector<uint32_t> expected(hashes.size());
  for (size_t i = 0; i < hashes.size(); ++i) expected[i] = ref.FindNodeByHash(hashes[i]);
  std::vector<uint32_t> got(hashes.size());
  ring.FindNodesByHash(hashes, got);
  for (size_t i = 0; i < hashes.size(); ++i) {
    ASSERT_EQ(got[i], expected[i]) << "hash " << hashes[i] << "\n" << spec.Describe();
  }

  std::vector<size_t> sample(std::min<size_t>(hashes.size(), 512));
  for (size_t& index : sample) index = rng() % hashes.size();
  std::vector<std::string> keys;
  for (int i = 0; i < 64; ++i) keys.push_back("/k/" + std::to_string(rng()));
  std::vector<std::string_view> key_views(keys.begin(), keys.end());
  testing::ForEachTarget([&](const std::string& target) {
    std::vector<uint32_t> sample_hashes;
    for (const size_t index : sample) sample_hashes.push_back(hashes[index]);
    std::vector<uint32_t> batch(sample_hashes.size());
    ring.FindNodesByHash(sample_hashes, batch);
    for (size_t i = 0; i < sample.size(); ++i) {
      ASSERT_EQ(ring.FindNodeByHash(sample_hashes[i]), expected[sample[i]])
          << target << " hash " << sample_hashes[i] << "\n" << spec.Describe();
      ASSERT_EQ(batch[i], expected[sample[i]]) << target << "\n" << spec.Describe();
    }
    std::vector<uint32_t> key_nodes(keys.size());
    ring.FindNodes(key_views, key_nodes);
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(ring.FindNode(keys[i]), ref.FindNode(keys[i])) << target << " " << keys[i];
      ASSERT_EQ(key_nodes[i], ref.FindNode(keys[i])) << target << " " << keys[i];
    }
  });

  // Walks from a few places, including the wrap-around past the last point.
  bool check_distinct = true;  // the reference's distinct walk scans the whole ring
  for (const uint32_t start : {points.back().hash + 1, points.back().hash,
                               static_cast<uint32_t>(rng()), points.front().hash}) {
    const size_t steps = std::min<size_t>(points.size() + 3, 200);
    const std::vector<uint32_t> expected_walk = ref.Walk(start, steps);
    PointCursor walk = ring.WalkFromHash(start);
    for (size_t i = 0; i < steps; ++i) {
      ASSERT_EQ(walk.Next(), expected_walk[i]) << "step " << i << "\n" << spec.Describe();
    }
    if (!check_distinct) continue;
    check_distinct = false;
    const std::vector<uint32_t> expected_distinct = ref.DistinctWalk(start);
    DistinctNodeWalk distinct = ring.WalkDistinctFromHash(start);
    for (const uint32_t node : expected_distinct) ASSERT_EQ(distinct.Next(), node);
    EXPECT_EQ(distinct.Next(), Ring::kNoNode);
  }
}

// 2,000 rings (scaled by CHASH_TEST_SCALE): most small, some up to 2,000
// nodes; every flavor; v2 multiples from 1 to 160.
TEST(Differential, RandomRingsMatchTheReference) {
  std::mt19937_64 rng(20261130);
  const size_t rings = testing::Scaled(2000, 30);
  const Flavor flavors[] = {Flavor::kNginx, Flavor::kPingoraV1, Flavor::kPingoraV2, Flavor::kResty};
  const uint32_t v2_multiples[] = {1, 2, 3, 7, 16, 40, 160};
  for (size_t i = 0; i < rings; ++i) {
    const Flavor flavor = flavors[i % 4];
    const bool takes_multiple = flavor == Flavor::kPingoraV2 || flavor == Flavor::kResty;
    uint32_t multiple = kDefaultPointMultiple;
    if (takes_multiple) multiple = v2_multiples[rng() % 7];
    uint32_t nodes;
    const uint32_t size_class = static_cast<uint32_t>(rng() % 100);
    if (size_class < 88) {
      nodes = 1 + static_cast<uint32_t>(rng() % 12);
    } else if (size_class < 98) {
      nodes = 13 + static_cast<uint32_t>(rng() % 88);
    } else {
      nodes = 201 + static_cast<uint32_t>(rng() % 1800);
      // Keep the largest rings affordable: v2 with a small multiple, except
      // a few full-size nginx / v1 rings (every 10th).
      if (i % 10 != 0) {
        multiple = v2_multiples[rng() % 4];
        if (!takes_multiple) multiple = kDefaultPointMultiple;
      }
    }
    const uint32_t max_weight = (nodes > 200 && multiple == 160 && i % 10 != 0) ? 1 : 10;
    const testing::RingSpec spec = testing::RandomRingSpec(rng, flavor, multiple, nodes, max_weight);
    SCOPED_TRACE("ring " + std::to_string(i));
    ExpectSameRing(spec, rng);
    if (HasFatalFailure()) return;
  }
}

// Rings dense with collisions: many servers with a tiny multiple on purpose
// is not enough to collide in 2^32, so force them through the raw builder
// (see raw_points_test.cc). Here: the largest nginx-style ring the suite
// builds, 2,000 servers x weights 1..10 (about 1.76M points, ~360 collisions
// expected), checked in full.
TEST(Differential, LargeNginxRingWithCollisions) {
  std::mt19937_64 rng(42);
  const uint32_t nodes = static_cast<uint32_t>(testing::Scaled(2000, 100));
  const testing::RingSpec spec = testing::RandomRingSpec(rng, Flavor::kNginx, 160, nodes, 10);
  ExpectSameRing(spec, rng);
}

}  // namespace
}  // namespace chash
