// PlanPointMultiples: each row is what building that ring and measuring it
// gives, and the recommendation is the smallest multiple within the target.
#include "test_util.h"

namespace chash {
namespace {

using testing::LoadServers;

TEST(PlanTest, RowsAreRealRings) {
  const std::vector<ServerEntry> servers = LoadServers("pingora/servers_50.txt");
  const RingOptions current{.flavor = Flavor::kPingoraV1};
  Result<Plan> plan = PlanPointMultiples(servers, current,
                                         {.multiples = {512, 16, 160, 1, 16, 4096},
                                          .cv_target = 0.05,
                                          .rings = 12,
                                          .max_points = 200000});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const Ring current_ring = testing::MustBuild(servers, current);
  EXPECT_EQ(plan.value().current.points, current_ring.num_points());
  EXPECT_EQ(plan.value().mask_bytes, 8u);  // 50 nodes: one word
  EXPECT_EQ(plan.value().rings, 12u);
  ASSERT_EQ(plan.value().rows.size(), 5u);  // sorted, duplicates merged
  const uint32_t expected_order[] = {1, 16, 160, 512, 4096};
  std::optional<uint32_t> first_within;
  for (size_t i = 0; i < 5; ++i) {
    const PlanRow& row = plan.value().rows[i];
    EXPECT_EQ(row.multiple, expected_order[i]);
    if (row.multiple == 4096) {  // 275 x 4096 > 200,000
      EXPECT_TRUE(row.skipped);
      continue;
    }
    ASSERT_FALSE(row.skipped);
    const Ring ring =
        testing::MustBuild(servers, {.flavor = Flavor::kPingoraV2, .point_multiple = row.multiple});
    const RingStats stats = ComputeRingStats(ring);
    EXPECT_EQ(row.stats.points, stats.points);
    EXPECT_EQ(row.stats.collisions, stats.collisions);
    EXPECT_DOUBLE_EQ(row.stats.cv_measured, stats.cv_measured);
    EXPECT_DOUBLE_EQ(row.stats.cv_predicted, stats.cv_predicted);
    const MemoryUsage memory = ring.memory_usage();
    EXPECT_EQ(row.bytes_per_ring,
              memory.column_bytes + memory.index_bytes + memory.collision_table_bytes);
    EXPECT_DOUBLE_EQ(row.moved_fraction, DiffRings(current_ring, ring).value().moved_fraction());
    if (!first_within && stats.cv_measured <= 0.05) first_within = row.multiple;
  }
  EXPECT_EQ(plan.value().recommended, first_within);
  ASSERT_TRUE(first_within.has_value());
  // v2 at 160 has v1's points: only the collided arc can move.
  EXPECT_LT(plan.value().rows[2].moved_fraction, 1e-3);
}

TEST(PlanTest, Errors) {
  const std::vector<ServerEntry> servers = LoadServers("pingora/servers_5.txt");
  EXPECT_EQ(PlanPointMultiples(servers, {}, {.cv_target = 0}).status().code(),
            StatusCode::kBadArgument);
  EXPECT_EQ(PlanPointMultiples(servers, {}, {.rings = 0}).status().code(),
            StatusCode::kBadArgument);
  EXPECT_EQ(PlanPointMultiples(servers, {}, {.multiples = {0, 3}}).status().code(),
            StatusCode::kBadArgument);
  std::vector<ServerEntry> bad = servers;
  bad.push_back({"not an address", 1, 9});
  const Status status = PlanPointMultiples(bad, {}, {}, "fleet.txt").status();
  EXPECT_EQ(status.code(), StatusCode::kBadAddress);
  EXPECT_NE(status.message().find("fleet.txt:9"), std::string::npos) << status.message();
  // Nothing within reach: no recommendation.
  Result<Plan> plan = PlanPointMultiples(servers, {}, {.multiples = {1}, .cv_target = 1e-6});
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan.value().recommended.has_value());
}

}  // namespace
}  // namespace chash
