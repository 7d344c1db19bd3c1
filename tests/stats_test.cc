// Ring statistics against an independent computation from the reference.
#include <cmath>
#include <random>

#include "util/json_text.h"  // engine/
#include "ring_fixtures.h"
#include "test_util.h"

namespace chash {
namespace {

TEST(Stats, SharesAreExactAndMatchTheReferencePoints) {
  std::mt19937_64 rng(12);
  for (int round = 0; round < 20; ++round) {
    const testing::RingSpec spec = testing::RandomRingSpec(
        rng, Flavor::kPingoraV2, 1 + rng() % 8, 1 + rng() % 50, 10);
    const Ring ring = testing::BuildEngine(spec);
    const auto ref = testing::BuildReference(spec);
    // Each point owns (previous point, its hash]; the first also owns the
    // wrap-around above the last point.
    std::vector<uint64_t> expected(spec.servers.size(), 0);
    const auto& points = ref.points();
    for (size_t i = 0; i < points.size(); ++i) {
      const uint64_t low = i == 0 ? 0 : uint64_t{points[i - 1].hash} + 1;
      expected[points[i].node] += uint64_t{points[i].hash} + 1 - low;
    }
    expected[points[0].node] += 0xFFFFFFFFull - points.back().hash;
    const std::vector<uint64_t> shares = NodeHashShares(ring);
    EXPECT_EQ(shares, expected);
    uint64_t total = 0;
    for (const uint64_t share : shares) total += share;
    EXPECT_EQ(total, uint64_t{1} << 32);

    // CV over share / weight share, computed here the long way.
    double weight_sum = 0;
    for (const auto& server : spec.servers) weight_sum += server.weight;
    std::vector<double> ratios;
    for (size_t i = 0; i < spec.servers.size(); ++i) {
      ratios.push_back((shares[i] / 4294967296.0) / (spec.servers[i].weight / weight_sum));
    }
    double mean = 0;
    for (const double r : ratios) mean += r / ratios.size();
    double var = 0;
    for (const double r : ratios) var += (r - mean) * (r - mean) / ratios.size();
    const RingStats stats = ComputeRingStats(ring);
    EXPECT_NEAR(stats.cv_measured, std::sqrt(var) / mean, 1e-9);
    EXPECT_NEAR(stats.max_share_ratio, *std::max_element(ratios.begin(), ratios.end()), 1e-12);
    EXPECT_NEAR(stats.min_share_ratio, *std::min_element(ratios.begin(), ratios.end()), 1e-12);
    const double n = static_cast<double>(spec.servers.size());
    const double k = static_cast<double>(ring.points_generated()) / n;
    EXPECT_NEAR(stats.cv_predicted, std::sqrt((n - 1) / (n * k + 1)), 1e-12);
  }
}

TEST(Stats, MemoryIsSixBytesAPointPlusRounding) {
  RingBuilder builder({.flavor = Flavor::kPingoraV2, .point_multiple = 16});
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(builder.Add("10.0." + std::to_string(i) + ".1:443", 100).ok());
  }
  const Ring ring = std::move(builder).Build().value();
  const RingStats stats = ComputeRingStats(ring);
  EXPECT_EQ(stats.points_generated, 320000u);
  EXPECT_EQ(stats.points + stats.collisions, stats.points_generated);
  // (n + 1) hashes and (n + 1) nodes, each rounded up to a 64-byte line.
  const uint64_t n = stats.points;
  const uint64_t expected = ((n + 1) * 4 + 63) / 64 * 64 + ((n + 1) * 2 + 63) / 64 * 64;
  EXPECT_EQ(stats.column_bytes, expected);
  EXPECT_NEAR(stats.bytes_per_point, 6.0, 0.001);
  EXPECT_GT(stats.other_bytes, 0u);
  EXPECT_LT(stats.other_bytes, 200u * 512);  // O(nodes)
}

TEST(Stats, JsonHasTheDocumentedFields) {
  const RingStats stats = ComputeRingStats(Ring());
  Result<std::string> text = RingStatsJson(stats);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  const std::string& json = text.value();
  for (const char* field :
       {"nodes", "points_generated", "points", "collisions", "column_bytes", "other_bytes",
        "bytes_per_point", "cv_predicted", "cv_measured", "max_share_ratio",
        "min_share_ratio"}) {
    // Not `"\"" + std::string(field)`: g++ 12 warns -Wrestrict on
    // `literal + std::string&&` under -O2, a false positive (GCC bug 105329).
    EXPECT_NE(json.find(std::string("\"").append(field).append("\":")), std::string::npos) << field;
  }
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(json.back(), '}');
}

// ComputeRingStats answers NaN shares when it cannot allocate them: JSON has
// no NaN, so those fields are null (the text stays valid JSON).
TEST(Stats, JsonWritesNullForSharesThatAreNotNumbers) {
  RingStats stats;
  stats.cv_measured = stats.max_share_ratio = stats.min_share_ratio = std::nan("");
  Result<std::string> json = RingStatsJson(stats);
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  EXPECT_NE(json.value().find("\"cv_measured\":null,"), std::string::npos) << json.value();
  EXPECT_NE(json.value().find("\"min_share_ratio\":null}"), std::string::npos) << json.value();
  EXPECT_EQ(json.value().find("nan"), std::string::npos) << json.value();
  EXPECT_NE(json.value().find("\"cv_predicted\":0,"), std::string::npos) << json.value();
}

// The engine and the chash tool write JSON with one writer: JSON has no NaN
// or infinity (null instead), 10 significant digits, strings escaped.
TEST(Stats, OneJsonWriterForTheEngineAndTheTool) {
  EXPECT_EQ(internal::JsonNumber(std::nan("")), "null");
  EXPECT_EQ(internal::JsonNumber(HUGE_VAL), "null");
  EXPECT_EQ(internal::JsonNumber(-HUGE_VAL), "null");
  EXPECT_EQ(internal::JsonNumber(0.25), "0.25");
  EXPECT_EQ(internal::JsonNumber(6.0 + 1.0 / 6000), "6.000166667");
  EXPECT_EQ(internal::JsonNumber(-3), "-3");
  EXPECT_EQ(internal::JsonString("a\"b\\c\n\x01" "d"), "\"a\\\"b\\\\c\\u000a\\u0001d\"");
}

}  // namespace
}  // namespace chash
