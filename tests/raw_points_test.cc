// Rings built from raw (hash, node) points: forced collisions under both
// tie-breaks, the edges (empty, one point, one node, 65,536 nodes) and the
// refusals (65,537 nodes, node ids out of range, caps).
#include <numeric>
#include <random>

#include "reference/reference_ring.h"
#include "test_util.h"

namespace chash {
namespace {

using reference::ReferenceRing;

// Engine and reference agree at 0, 2^32-1, every point hash and +-1, on every
// target; and the ring-order scan equals the reference's sorted points.
void ExpectSameAsReference(uint32_t num_nodes, const std::vector<RawPoint>& points,
                           const std::vector<uint32_t>& tie_rank) {
  Result<Ring> ring = BuildRingFromPoints(num_nodes, points, tie_rank);
  ASSERT_TRUE(ring.ok()) << ring.status().ToString();
  Result<ReferenceRing> ref = ReferenceRing::FromPoints(num_nodes, points, tie_rank);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  const auto& sorted = ref.value().points();
  ASSERT_EQ(ring.value().num_points(), sorted.size());
  ASSERT_EQ(ring.value().points_generated(), points.size());
  PointCursor cursor = ring.value().Begin();
  for (const reference::Point& point : sorted) {
    ASSERT_EQ(cursor.hash(), point.hash);
    ASSERT_EQ(cursor.node(), point.node) << "hash " << point.hash;
    cursor.Advance();
  }
  std::vector<uint32_t> hashes = {0, 0xFFFFFFFFu};
  for (const RawPoint& p : points) {
    for (const uint32_t h : {p.hash - 1, p.hash, p.hash + 1}) hashes.push_back(h);
  }
  testing::ForEachTarget([&](const std::string&) {
    std::vector<uint32_t> batch(hashes.size());
    ring.value().FindNodesByHash(hashes, batch);
    for (size_t i = 0; i < hashes.size(); ++i) {
      const uint32_t expected = ref.value().FindNodeByHash(hashes[i]);
      ASSERT_EQ(ring.value().FindNodeByHash(hashes[i]), expected) << "hash " << hashes[i];
      ASSERT_EQ(batch[i], expected) << "hash " << hashes[i];
    }
  });
}

TEST(RawPoints, TwoWayCollisionGoesToTheLowerNodeIdByDefault) {
  const std::vector<RawPoint> points = {{100, 1}, {100, 0}, {200, 1}};
  Result<Ring> ring = BuildRingFromPoints(2, points);
  ASSERT_TRUE(ring.ok());
  EXPECT_EQ(ring.value().num_points(), 2u);
  EXPECT_EQ(ring.value().collisions(), 1u);
  EXPECT_EQ(ring.value().FindNodeByHash(50), 0u);
  EXPECT_EQ(ring.value().FindNodeByHash(100), 0u);
  EXPECT_EQ(ring.value().FindNodeByHash(101), 1u);
  EXPECT_EQ(ring.value().FindNodeByHash(201), 0u);  // wraps to the first point
  ExpectSameAsReference(2, points, {});
}

TEST(RawPoints, ExplicitRankDecidesTheCollision) {
  const std::vector<RawPoint> points = {{100, 0}, {100, 1}, {100, 2}, {7, 2}};
  for (const std::vector<uint32_t>& rank :
       {std::vector<uint32_t>{2, 1, 0}, {0, 1, 2}, {1, 0, 2}}) {
    Result<Ring> ring = BuildRingFromPoints(3, points, rank);
    ASSERT_TRUE(ring.ok());
    const uint32_t winner = static_cast<uint32_t>(
        std::min_element(rank.begin(), rank.end()) - rank.begin());
    EXPECT_EQ(ring.value().FindNodeByHash(100), winner);
    EXPECT_EQ(ring.value().collisions(), 2u);
    ExpectSameAsReference(3, points, rank);
  }
}

TEST(RawPoints, AllPointsEqual) {
  std::vector<RawPoint> points;
  for (uint32_t node = 0; node < 50; ++node) points.push_back({0xDEADBEEF, 49 - node});
  Result<Ring> ring = BuildRingFromPoints(50, points);
  ASSERT_TRUE(ring.ok());
  EXPECT_EQ(ring.value().num_points(), 1u);
  EXPECT_EQ(ring.value().collisions(), 49u);
  for (const uint32_t h : {0u, 0xDEADBEEFu, 0xDEADBEF0u, 0xFFFFFFFFu}) {
    EXPECT_EQ(ring.value().FindNodeByHash(h), 0u);
  }
  ExpectSameAsReference(50, points, {});
}

TEST(RawPoints, RandomRingsDenseWithCollisionsUnderBothTieBreaks) {
  std::mt19937_64 rng(3);
  for (size_t round = 0; round < testing::Scaled(300, 20); ++round) {
    const uint32_t nodes = 1 + static_cast<uint32_t>(rng() % 40);
    std::vector<RawPoint> points(1 + rng() % 600);
    // Hashes from a tiny pool (and the extremes), so runs of 2, 3 and more
    // equal hashes are common.
    const uint32_t pool = 1 + static_cast<uint32_t>(rng() % 64);
    for (RawPoint& p : points) {
      const uint32_t pick = static_cast<uint32_t>(rng() % (pool + 2));
      p.hash = pick == pool ? 0 : pick == pool + 1 ? 0xFFFFFFFFu : pick * 0x9E3779B1u;
      p.node = static_cast<uint32_t>(rng() % nodes);
    }
    std::vector<uint32_t> rank(nodes);
    std::iota(rank.begin(), rank.end(), 0u);
    std::shuffle(rank.begin(), rank.end(), rng);
    ExpectSameAsReference(nodes, points, {});
    ExpectSameAsReference(nodes, points, rank);
    if (HasFatalFailure()) return;
  }
}

TEST(RawPoints, EmptyRingAnswersNoNode) {
  Result<Ring> ring = BuildRingFromPoints(3, {});
  ASSERT_TRUE(ring.ok());
  EXPECT_TRUE(ring.value().empty());
  EXPECT_EQ(ring.value().FindNodeByHash(0), Ring::kNoNode);
  EXPECT_EQ(ring.value().FindNode("x"), Ring::kNoNode);
  std::vector<uint32_t> hashes = {1, 2, 3}, out(3, 0);
  ring.value().FindNodesByHash(hashes, out);
  EXPECT_EQ(out, std::vector<uint32_t>(3, Ring::kNoNode));
  PointCursor walk = ring.value().WalkFromHash(5);
  EXPECT_TRUE(walk.empty());
  EXPECT_EQ(walk.Next(), Ring::kNoNode);
  EXPECT_EQ(ring.value().WalkDistinctFromHash(5).Next(), Ring::kNoNode);
  const Ring default_ring;
  EXPECT_EQ(default_ring.FindNode("x"), Ring::kNoNode);
  EXPECT_EQ(default_ring.num_nodes(), 0u);
}

TEST(RawPoints, OnePoint) {
  Result<Ring> ring = BuildRingFromPoints(1, std::vector<RawPoint>{{12345, 0}});
  ASSERT_TRUE(ring.ok());
  for (const uint32_t h : {0u, 12344u, 12345u, 12346u, 0xFFFFFFFFu}) {
    EXPECT_EQ(ring.value().FindNodeByHash(h), 0u) << h;
  }
  PointCursor walk = ring.value().WalkFromHash(99999);
  EXPECT_EQ(walk.hash(), 12345u);
  walk.Advance();
  EXPECT_EQ(walk.hash(), 12345u);
}

TEST(RawPoints, ExactlyMaxNodesAndTheLastIdRoutesToItself) {
  std::vector<RawPoint> points;
  for (uint32_t node = 0; node < kMaxNodes; ++node) points.push_back({node * 65536u + 7, node});
  Result<Ring> ring = BuildRingFromPoints(kMaxNodes, points);
  ASSERT_TRUE(ring.ok()) << ring.status().ToString();
  EXPECT_EQ(ring.value().num_nodes(), kMaxNodes);
  EXPECT_EQ(ring.value().FindNodeByHash(65535u * 65536u + 7), 65535u);  // no u16 wrap
  EXPECT_EQ(ring.value().FindNodeByHash(65535u * 65536u), 65535u);
  EXPECT_EQ(ring.value().FindNodeByHash(65535u * 65536u + 8), 0u);  // wrap
  EXPECT_EQ(ring.value().nodes_with_points(), kMaxNodes);
}

TEST(RawPoints, Refusals) {
  EXPECT_EQ(BuildRingFromPoints(kMaxNodes + 1, {}).status().code(), StatusCode::kTooManyNodes);
  const std::vector<RawPoint> past_u16 = {{1, 65536}};
  EXPECT_EQ(BuildRingFromPoints(kMaxNodes, past_u16).status().code(), StatusCode::kBadNodeId);
  const std::vector<RawPoint> out_of_range = {{1, 0}, {2, 3}};
  const Status status = BuildRingFromPoints(3, out_of_range).status();
  EXPECT_EQ(status.code(), StatusCode::kBadNodeId);
  EXPECT_NE(status.message().find("point 1 names node 3"), std::string::npos)
      << status.message();
  const std::vector<RawPoint> three = {{1, 0}, {2, 0}, {3, 0}};
  EXPECT_EQ(BuildRingFromPoints(1, three, {}, 2).status().code(), StatusCode::kTooManyPoints);
  EXPECT_EQ(BuildRingFromPoints(1, three, {}, kHardMaxPoints + 1).status().code(),
            StatusCode::kBadArgument);
  const std::vector<uint32_t> not_permutation = {0, 0};
  EXPECT_EQ(BuildRingFromPoints(2, three, not_permutation).status().code(),
            StatusCode::kBadArgument);
  const std::vector<uint32_t> wrong_size = {0};
  EXPECT_EQ(BuildRingFromPoints(2, three, wrong_size).status().code(),
            StatusCode::kBadArgument);
  // The reference refuses the same inputs with the same codes.
  EXPECT_EQ(ReferenceRing::FromPoints(kMaxNodes + 1, {}).status().code(),
            StatusCode::kTooManyNodes);
  EXPECT_EQ(ReferenceRing::FromPoints(3, out_of_range).status().code(), StatusCode::kBadNodeId);
  EXPECT_EQ(ReferenceRing::FromPoints(1, three, {}, 2).status().code(),
            StatusCode::kTooManyPoints);
  EXPECT_EQ(ReferenceRing::FromPoints(2, three, not_permutation).status().code(),
            StatusCode::kBadArgument);
}

}  // namespace
}  // namespace chash
