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
      internal::SortedKeyParts parts;
      ASSERT_TRUE(internal::GenerateSortedPointKeys(chains, keys.data(), total, threads, parts));
      EXPECT_TRUE(keys == expected) << chains_count << " chains, " << threads << " threads";
      ASSERT_GE(parts.parts(), 1u);
      EXPECT_LE(parts.parts(), threads);
      EXPECT_EQ(parts.key_begin.back(), total);
      EXPECT_EQ(parts.slot_begin.back(), expected_distinct)
          << chains_count << " chains, " << threads << " threads";
      // Each part's slots are its keys' distinct hashes, and no cut splits a run.
      for (size_t p = 0; p < parts.parts(); ++p) {
        EXPECT_EQ(parts.slot_begin[p + 1] - parts.slot_begin[p],
                  internal::CountDistinctHashes(keys.data() + parts.key_begin[p],
                                                parts.key_begin[p + 1] - parts.key_begin[p]));
        if (parts.key_begin[p] > 0 && parts.key_begin[p] < total) {
          EXPECT_NE(keys[parts.key_begin[p] - 1] >> 32, keys[parts.key_begin[p]] >> 32);
        }
      }
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
    const internal::SortedKeyParts parts = internal::OnePart(copy.size(), wrong);
    const Status status =
        internal::BuildColumnsFromSortedKeys(copy.data(), copy.size(), columns, nullptr, &parts);
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

// The columns and the losers laid out on one thread a part are those of one
// part, whether the keys have their own buffer or lie in the hash column's
// memory (hashes staged and moved down), for every cut the sorter makes.
TEST(ParallelBuild, ColumnsAreTheSameForEveryCut) {
  // 700 chains of up to 2,000 points (enough keys for the hash column's own
  // mapping); chains 350 and up repeat the CRC state of chain i - 350 under
  // another node, so their common prefixes collide point for point.
  std::vector<internal::PointChain> chains = Chains(700, 2000, 11);
  for (size_t i = 350; i < chains.size(); ++i) chains[i].base_state = chains[i - 350].base_state;
  uint64_t total = 0;
  for (const auto& chain : chains) total += chain.count;
  std::vector<uint64_t> sorted(total);
  internal::GeneratePointKeys(chains, sorted.data());
  std::sort(sorted.begin(), sorted.end());
  internal::Columns expected;
  internal::CollisionTable expected_losers;
  {
    std::vector<uint64_t> copy = sorted;
    ASSERT_TRUE(internal::BuildColumnsFromSortedKeys(copy.data(), total, expected, &expected_losers)
                    .ok());
  }
  ASSERT_GT(expected_losers.hash.size(), 100u);
  const auto same = [&](const internal::Columns& columns, const internal::CollisionTable& losers,
                        const std::string& what) {
    ASSERT_EQ(columns.size, expected.size) << what;
    for (uint32_t slot = 0; slot < expected.size; ++slot) {
      ASSERT_EQ(columns.hash[slot], expected.hash[slot]) << what << ", slot " << slot;
      ASSERT_EQ(columns.node[slot], expected.node[slot]) << what << ", slot " << slot;
    }
    EXPECT_TRUE(losers.hash == expected_losers.hash) << what;
    EXPECT_TRUE(losers.node == expected_losers.node) << what;
  };
  for (const unsigned threads : {2u, 3u, 8u, 64u}) {
    for (const bool in_place : {false, true}) {
      const std::string what = std::to_string(threads) + " threads, " +
                               (in_place ? "in the hash column" : "own buffer");
      internal::Columns columns;
      internal::PointKeyBuffer buffer;
      std::vector<uint64_t> own;
      uint64_t* keys = nullptr;
      if (in_place) {
        ASSERT_TRUE(buffer.Allocate(total, columns));
        keys = buffer.data();
        ASSERT_EQ(reinterpret_cast<void*>(keys), reinterpret_cast<void*>(columns.hash.data()))
            << "the keys are not in the hash column: the in-place path is not tested";
      } else {
        own.resize(total);
        keys = own.data();
      }
      internal::SortedKeyParts parts;
      ASSERT_TRUE(internal::GenerateSortedPointKeys(chains, keys, total, threads, parts));
      ASSERT_GT(parts.parts(), 1u) << what;
      internal::CollisionTable losers;
      const Status status =
          internal::BuildColumnsFromSortedKeys(keys, total, columns, &losers, &parts);
      ASSERT_TRUE(status.ok()) << what << ": " << status.ToString();
      same(columns, losers, what);
    }
  }
}

// Parts that do not describe the keys are refused, not laid out.
TEST(ParallelBuild, ColumnsRefusePartsThatDoNotDescribeTheKeys) {
  std::vector<uint64_t> keys;
  // Hashes 0, 0, 7, 7, 14, 14, ...: runs of two.
  for (uint32_t i = 0; i < 1000; ++i) keys.push_back(internal::PointSortKey(i / 2 * 7, 0, i % 3));
  const auto refused = [&](internal::SortedKeyParts parts, const std::string& expect) {
    std::vector<uint64_t> copy = keys;
    internal::Columns columns;
    const Status status =
        internal::BuildColumnsFromSortedKeys(copy.data(), copy.size(), columns, nullptr, &parts);
    EXPECT_EQ(status.code(), StatusCode::kBadArgument) << expect;
    EXPECT_NE(status.message().find(expect), std::string::npos) << status.message();
  };
  refused({{0, 501, 1000}, {0, 251, 500}}, "inside a run of equal hashes");
  refused({{0, 500, 999}, {0, 250, 500}}, "do not cover");
  refused({{0, 500, 1000}, {0, 250}}, "do not cover");
  refused({{0, 500, 1000}, {0, 600, 500}}, "runs backwards");
  refused({{0, 500, 1000}, {0, 249, 500}}, "500 distinct hashes");
  // The same cut with the right counts is laid out.
  std::vector<uint64_t> copy = keys;
  internal::Columns columns;
  const internal::SortedKeyParts parts{{0, 500, 1000}, {0, 250, 500}};
  ASSERT_TRUE(
      internal::BuildColumnsFromSortedKeys(copy.data(), copy.size(), columns, nullptr, &parts).ok());
  ASSERT_EQ(columns.size, 500u);
  for (uint32_t slot = 0; slot < 500; ++slot) EXPECT_EQ(columns.hash[slot], slot * 7);
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
