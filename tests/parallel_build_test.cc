// Parallel builds: the sorted point keys and the whole ring come out
// bit-identical for any thread count (1, 2, 3, 8 and more threads than
// chains), and equal to the reference ring's points.
#include <algorithm>
#include <random>
#include <vector>

#include "builder/columns_builder.h"
#include "builder/parallel.h"
#include "builder/point_chains.h"
#include "reference/reference_ring.h"
#include "test_util.h"

namespace chash {
namespace {

// Chains of uneven lengths, with repeated ranks to force equal hashes apart.
std::vector<internal::PointChain> Chains(size_t count, uint64_t max_points, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<internal::PointChain> chains;
  for (uint32_t i = 0; i < count; ++i) {
    chains.push_back({static_cast<uint32_t>(rng()), rng() % (max_points + 1), i % 7, i});
  }
  return chains;
}

TEST(ParallelBuild, SortedKeysAreTheSameForEveryThreadCount) {
  for (const auto& [chains_count, max_points] :
       {std::pair<size_t, uint64_t>{1, 300000}, {3, 200000}, {37, 40000}, {500, 4000}}) {
    const std::vector<internal::PointChain> chains = Chains(chains_count, max_points, 7);
    uint64_t total = 0;
    for (const auto& chain : chains) total += chain.count;
    std::vector<uint64_t> expected(total);
    internal::GeneratePointKeys(chains, expected.data());
    std::sort(expected.begin(), expected.end());
    std::vector<uint32_t> hashes;
    for (const uint64_t key : expected) hashes.push_back(static_cast<uint32_t>(key >> 32));
    const uint64_t expected_distinct = static_cast<uint64_t>(
        std::unique(hashes.begin(), hashes.end()) - hashes.begin());
    for (const unsigned threads : {1u, 2u, 3u, 8u, 64u}) {
      std::vector<uint64_t> keys(total, 0xDEADBEEF);
      uint64_t distinct = 0;
      ASSERT_TRUE(internal::GenerateSortedPointKeys(chains, keys.data(), total, threads, distinct));
      EXPECT_TRUE(keys == expected) << chains_count << " chains, " << threads << " threads";
      EXPECT_EQ(distinct, expected_distinct) << chains_count << " chains, " << threads << " threads";
    }
  }
}

// A distinct-hash count that is not the keys' is refused before a column is
// written past its end (the count sizes the columns).
TEST(ParallelBuild, ColumnsRefuseAWrongDistinctHashCount) {
  std::vector<uint64_t> keys;
  for (uint32_t i = 0; i < 1000; ++i) keys.push_back(internal::PointSortKey(i / 2 * 7, 0, i % 3));
  for (const size_t wrong : {size_t{1}, size_t{499}, size_t{501}, size_t{1000}}) {
    std::vector<uint64_t> copy = keys;
    internal::Columns columns;
    const Status status =
        internal::BuildColumnsFromSortedKeys(copy.data(), copy.size(), columns, nullptr, wrong);
    EXPECT_EQ(status.code(), StatusCode::kBadArgument) << wrong;
    EXPECT_NE(status.message().find("500 distinct hashes"), std::string::npos) << status.message();
  }
  std::vector<uint64_t> copy = keys;
  internal::Columns columns;
  ASSERT_TRUE(internal::BuildColumnsFromSortedKeys(copy.data(), copy.size(), columns).ok());
  ASSERT_EQ(columns.size, 500u);
  for (uint32_t slot = 0; slot < 500; ++slot) {
    EXPECT_EQ(columns.hash[slot], slot * 7);
    EXPECT_EQ(columns.node[slot], (2 * slot) % 3);
  }
}

TEST(ParallelBuild, RingsAreBitIdenticalForEveryThreadCount) {
  struct Case {
    Flavor flavor;
    uint32_t multiple, nodes, weight;
  };
  for (const Case& c : {Case{Flavor::kPingoraV2, 16, 300, 100}, Case{Flavor::kNginx, 160, 50, 40},
                        Case{Flavor::kPingoraV1, 160, 3, 700}}) {
    std::vector<reference::Server> servers;
    for (uint32_t i = 0; i < c.nodes; ++i) {
      servers.push_back({"10.1." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ":80",
                         c.weight + i % 5});
    }
    Fingerprint first_digest{}, first_config{};
    // 0: every hardware thread; 300 counts as 256.
    for (const uint32_t threads : {1u, 2u, 3u, 8u, 0u, 300u}) {
      RingBuilder builder(
          {.flavor = c.flavor, .point_multiple = c.multiple, .build_threads = threads});
      for (const auto& server : servers) ASSERT_TRUE(builder.Add(server.address, server.weight).ok());
      Result<Ring> ring = std::move(builder).Build();
      ASSERT_TRUE(ring.ok()) << ring.status().ToString();
      const Fingerprint digest = PointsDigest(ring.value());
      if (threads == 1) {
        first_digest = digest;
        first_config = RingFingerprint(ring.value());
        Result<reference::ReferenceRing> reference =
            reference::ReferenceRing::Build(c.flavor, c.multiple, servers, kHardMaxPoints);
        ASSERT_TRUE(reference.ok());
        const auto& points = reference.value().points();
        ASSERT_EQ(ring.value().num_points(), points.size());
        PointCursor cursor = ring.value().Begin();
        for (size_t i = 0; i < points.size(); ++i, cursor.Advance()) {
          ASSERT_EQ(cursor.hash(), points[i].hash) << i;
          ASSERT_EQ(cursor.node(), points[i].node) << i;
        }
      } else {
        EXPECT_TRUE(digest == first_digest) << threads << " threads";
        EXPECT_TRUE(RingFingerprint(ring.value()) == first_config) << threads << " threads";
      }
    }
  }
}

}  // namespace
}  // namespace chash
