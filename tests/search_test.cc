// The SIMD search against the reference continuum, on every target this
// machine supports: single lookups, batches of every length class (the
// group kernels and their tails), keys, walks; ring sizes around every index
// level boundary; rings whose single lookups the slot table's window decides
// and rings (clustered points) where it falls back to the descent; the in-place
// build of large rings; extreme and colliding hashes.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "builder/columns_builder.h"
#include "reference/reference_ring.h"
#include "simd/search.h"
#include "test_util.h"

namespace chash {
namespace {

using reference::ReferenceRing;
using testing::ForEachTarget;
using testing::Scaled;

struct RingPair {
  Ring ring;
  ReferenceRing reference;
};

RingPair BuildBoth(uint32_t num_nodes, const std::vector<RawPoint>& points) {
  Result<Ring> ring = BuildRingFromPoints(num_nodes, points);
  Result<ReferenceRing> reference = ReferenceRing::FromPoints(num_nodes, points);
  EXPECT_TRUE(ring.ok()) << ring.status().ToString();
  EXPECT_TRUE(reference.ok()) << reference.status().ToString();
  if (!ring.ok() || !reference.ok()) return {};
  return {std::move(ring).value(), std::move(reference).value()};
}

std::vector<RawPoint> RandomPoints(size_t count, uint32_t num_nodes, std::mt19937_64& rng) {
  std::vector<RawPoint> points(count);
  for (RawPoint& p : points) {
    p.hash = static_cast<uint32_t>(rng());
    p.node = static_cast<uint32_t>(rng() % num_nodes);
  }
  return points;
}

// The hashes where a lower bound can go wrong: 0, UINT32_MAX, every point's
// hash and its neighbours (below the first point, above the last: the wrap).
std::vector<uint32_t> EdgeHashes(const ReferenceRing& reference, size_t max_points) {
  std::vector<uint32_t> hashes = {0, 1, UINT32_MAX, UINT32_MAX - 1, 0x80000000u, 0x7FFFFFFFu};
  const auto& points = reference.points();
  const size_t step = std::max<size_t>(1, points.size() / max_points);
  for (size_t i = 0; i < points.size(); i += step) {
    hashes.push_back(points[i].hash);
    hashes.push_back(points[i].hash - 1);
    hashes.push_back(points[i].hash + 1);
  }
  if (!points.empty()) {
    hashes.push_back(points.back().hash);
    hashes.push_back(points.back().hash + 1);
    hashes.push_back(points.front().hash - 1);
  }
  return hashes;
}

// Every lookup form on every target, against the reference.
void ExpectMatchesReference(const RingPair& pair, std::mt19937_64& rng,
                            size_t random_queries = Scaled(2000, 100)) {
  const Ring& ring = pair.ring;
  const ReferenceRing& reference = pair.reference;
  ASSERT_EQ(ring.num_points(), reference.points().size());
  std::vector<uint32_t> hashes = EdgeHashes(reference, 4096);
  for (size_t i = 0; i < random_queries; ++i) hashes.push_back(static_cast<uint32_t>(rng()));
  std::vector<uint32_t> expected(hashes.size());
  for (size_t i = 0; i < hashes.size(); ++i) expected[i] = reference.FindNodeByHash(hashes[i]);

  std::vector<std::string> keys(Scaled(300, 40));
  for (std::string& key : keys) {
    key.resize(rng() % 120);
    for (char& c : key) c = static_cast<char>(rng());
  }
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<uint32_t> expected_keys(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) expected_keys[i] = reference.FindNode(keys[i]);

  ForEachTarget([&](const std::string& target) {
    size_t mismatches = 0;
    for (size_t i = 0; i < hashes.size(); ++i) {
      const uint32_t got = ring.FindNodeByHash(hashes[i]);
      if (got != expected[i] && ++mismatches <= 5) {
        ADD_FAILURE() << target << ": " << ring.num_points() << "-point ring, hash "
                      << hashes[i] << ": expected node " << expected[i] << ", got " << got;
      }
    }
    EXPECT_EQ(mismatches, 0u);

    // Batches: one call for everything, then spans of each length class so
    // every group size and tail runs.
    std::vector<uint32_t> batch(hashes.size(), 0xDEADBEEF);
    ring.FindNodesByHash(hashes, batch);
    EXPECT_EQ(batch, expected) << target << ": FindNodesByHash, one batch";
    size_t offset = 0;
    for (const size_t length : {0, 1, 3, 4, 5, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100}) {
      if (offset + length > hashes.size()) break;
      std::vector<uint32_t> out(length + 1, 0xDEADBEEF);
      ring.FindNodesByHash(std::span(hashes).subspan(offset, length), out);
      for (size_t i = 0; i < length; ++i) {
        ASSERT_EQ(out[i], expected[offset + i]) << target << ": span of " << length;
      }
      EXPECT_EQ(out[length], 0xDEADBEEF) << target << ": wrote past a span of " << length;
      offset += length;
    }

    std::vector<uint32_t> by_key(keys.size());
    ring.FindNodes(views, by_key);
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(by_key[i], expected_keys[i]) << target << ": FindNodes, key " << i;
      ASSERT_EQ(ring.FindNode(keys[i]), expected_keys[i]) << target << ": FindNode " << i;
    }

    for (size_t i = 0; i < hashes.size(); i += 7) {
      PointCursor cursor = ring.WalkFromHash(hashes[i]);
      const std::vector<uint32_t> walk = reference.Walk(hashes[i], 3);
      for (const uint32_t node : walk) ASSERT_EQ(cursor.Next(), node) << target;
    }
  });
}

TEST(SearchTest, EveryRingSizeUpToThreeLevels) {
  std::mt19937_64 rng(1);
  // 1..300 cover rings with no index level, one and two; then a sparser
  // sweep to a few thousand.
  std::vector<size_t> sizes;
  for (size_t n = 1; n <= 300; ++n) sizes.push_back(n);
  for (size_t n = 301; n <= 5000; n += 97) sizes.push_back(n);
  for (const size_t n : sizes) {
    SCOPED_TRACE("points " + std::to_string(n));
    ExpectMatchesReference(BuildBoth(7, RandomPoints(n, 7, rng)), rng, Scaled(200, 20));
    if (HasFatalFailure()) return;
  }
}

TEST(SearchTest, SizesAroundLevelBoundaries) {
  std::mt19937_64 rng(2);
  for (const size_t n : {15, 16, 17, 31, 32, 33, 255, 256, 257, 4095, 4096, 4097, 65535, 65536,
                         65537, 200000}) {
    SCOPED_TRACE("points " + std::to_string(n));
    // Random hashes collide rarely below 2^16 points; the reference and the
    // engine must then still agree on the survivors.
    ExpectMatchesReference(BuildBoth(300, RandomPoints(n, 300, rng)), rng);
  }
}

// Large enough that the keys are placed in the hash column's OS mapping and
// the column is written over them (columns_builder.h).
TEST(SearchTest, LargeRingBuiltInPlace) {
  std::mt19937_64 rng(3);
  const size_t n = 700000;
  RingPair pair = BuildBoth(2048, RandomPoints(n, 2048, rng));
  ExpectMatchesReference(pair, rng, Scaled(20000, 2000));
  const MemoryUsage memory = pair.ring.memory_usage();
  const double kept = static_cast<double>(pair.ring.num_points());
  EXPECT_LT(static_cast<double>(memory.column_bytes) / kept, 6.02);
  EXPECT_GE(memory.column_bytes, 6 * pair.ring.num_points());
  // Levels: 1/15 of the hash column; slot table: n/128 or 2^13 entries at most.
  EXPECT_LE(memory.index_bytes, 4 * kept / 15 + 4 * (kept / 128 + 8193) + 4 * 64 * 8 + 4096);
  EXPECT_LT(memory.other_bytes, uint64_t{2048} * 512);  // O(nodes): the index is apart
}

TEST(SearchTest, ExtremeAndCollidingHashes) {
  std::mt19937_64 rng(4);
  for (const size_t n : {1, 2, 16, 17, 300, 5000}) {
    std::vector<RawPoint> points = RandomPoints(n, 5, rng);
    points.push_back({UINT32_MAX, 1});
    points.push_back({UINT32_MAX, 0});  // node 0 wins the tie by id
    points.push_back({0, 3});
    points.push_back({0, 2});
    for (size_t i = 0; i < n; i += 3) points.push_back({points[i].hash, (points[i].node + 1) % 5});
    SCOPED_TRACE("points " + std::to_string(points.size()));
    ExpectMatchesReference(BuildBoth(5, points), rng, Scaled(500, 50));
  }
}

TEST(SearchTest, EmptyRingAnswersNoNode) {
  const Ring ring;
  ForEachTarget([&](const std::string&) {
    EXPECT_EQ(ring.FindNodeByHash(5), Ring::kNoNode);
    std::vector<uint32_t> hashes(40, 7), out(40, 0);
    ring.FindNodesByHash(hashes, out);
    for (const uint32_t node : out) EXPECT_EQ(node, Ring::kNoNode);
    EXPECT_TRUE(ring.WalkFromHash(3).empty());
  });
}

// ---- The index itself ----------------------------------------------------------

struct BuiltColumns {
  internal::Columns columns;
  std::vector<uint32_t> sorted_hashes;  // unique, ascending
  std::vector<uint16_t> sorted_nodes;
};

BuiltColumns BuildColumns(std::vector<RawPoint> points) {
  BuiltColumns built;
  internal::PointKeyBuffer keys;
  EXPECT_TRUE(keys.Allocate(points.size(), built.columns));
  for (size_t i = 0; i < points.size(); ++i) {
    keys.data()[i] = internal::PointSortKey(points[i].hash, points[i].node, points[i].node);
  }
  EXPECT_TRUE(internal::BuildColumnsFromKeys(keys.data(), points.size(), built.columns).ok());
  std::sort(points.begin(), points.end(), [](const RawPoint& a, const RawPoint& b) {
    return a.hash != b.hash ? a.hash < b.hash : a.node < b.node;
  });
  for (const RawPoint& p : points) {
    if (built.sorted_hashes.empty() || built.sorted_hashes.back() != p.hash) {
      built.sorted_hashes.push_back(p.hash);
      built.sorted_nodes.push_back(static_cast<uint16_t>(p.node));
    }
  }
  return built;
}

// Sets the single-lookup window's ring-size threshold for a scope.
class InterpolationMinPoints {
 public:
  explicit InterpolationMinPoints(uint32_t points) { internal::SetInterpolationMinPoints(points); }
  ~InterpolationMinPoints() {
    internal::SetInterpolationMinPoints(internal::kInterpolationMinPoints);
  }
};

void ExpectViewFindsEverySlot(const BuiltColumns& built, const internal::SearchView& view,
                              std::mt19937_64& rng);

// Single lookups both ways: through the window first, and by descent alone.
void ExpectIndexFindsEverySlot(const BuiltColumns& built, std::mt19937_64& rng) {
  const internal::Columns& c = built.columns;
  for (const uint32_t min_points : {0u, UINT32_MAX}) {
    SCOPED_TRACE(min_points == 0 ? "window first" : "descent only");
    const InterpolationMinPoints scope(min_points);
    const internal::SearchView view = c.index.View(c.hash.data(), c.node.data(), c.size);
    EXPECT_EQ(view.interpolate, min_points == 0 && c.size >= internal::kWindowKeys / 2);
    ExpectViewFindsEverySlot(built, view, rng);
  }
}

void ExpectViewFindsEverySlot(const BuiltColumns& built, const internal::SearchView& view,
                              std::mt19937_64& rng) {
  const auto& sorted = built.sorted_hashes;
  std::vector<uint32_t> queries = {0, UINT32_MAX};
  for (size_t i = 0; i < sorted.size(); i += std::max<size_t>(1, sorted.size() / 20000)) {
    queries.push_back(sorted[i]);
    queries.push_back(sorted[i] + 1);
    queries.push_back(sorted[i] - 1);
  }
  for (size_t i = 0; i < Scaled(20000, 1000); ++i) queries.push_back(static_cast<uint32_t>(rng()));
  ForEachTarget([&](const std::string& target) {
    for (const uint32_t x : queries) {
      const size_t expected = std::lower_bound(sorted.begin(), sorted.end(), x) - sorted.begin();
      ASSERT_EQ(internal::DispatchLowerBoundSlot(view, x), expected) << target << " x=" << x;
      ASSERT_EQ(internal::DispatchFindNodeByHash(view, x),
                built.sorted_nodes[expected == sorted.size() ? 0 : expected])
          << target << " x=" << x;
    }
  });
}

// Uniform hashes: a slot table of about 128-256 points a bucket (at least
// 2^13 entries), a descent that enters below the root, an index of at most
// 0.3 bytes a point, and nearly every single lookup decided by its window.
TEST(SearchIndexTest, UniformHashesGetASlotTableBelowTheRoot) {
  std::mt19937_64 rng(5);
  for (const size_t n : {5000, 100000, 1000000, 3000000}) {
    const BuiltColumns built = BuildColumns(RandomPoints(n, 100, rng));
    const internal::SearchIndex& index = built.columns.index;
    const uint32_t kept = built.columns.size;
    EXPECT_GE(index.levels(), 2) << n;
    EXPECT_LT(index.entry_level(), index.levels()) << n;
    EXPECT_EQ(index.table_bits(), internal::SearchIndex::TableBitsFor(kept)) << n;
    EXPECT_EQ(index.table_entries(), (size_t{1} << index.table_bits()) + 1) << n;
    if (kept >= (1u << 20)) {
      EXPECT_GE(kept >> index.table_bits(), 128u) << n;
      EXPECT_LT(kept >> index.table_bits(), 256u) << n;
      EXPECT_LE(static_cast<double>(index.allocated_bytes()) / kept, 0.3) << n;
    } else {
      EXPECT_EQ(index.table_bits(), 13) << n;
    }
    // How many uniform queries the window decides (the rest descend): count
    // the ones whose answer lies outside the window LowerBoundSlot counts.
    const internal::SearchView default_view =
        index.View(built.columns.hash.data(), built.columns.node.data(), kept);
    EXPECT_EQ(default_view.interpolate, kept >= internal::kInterpolationMinPoints) << n;
    const InterpolationMinPoints every_ring(0);
    const internal::SearchView view =
        index.View(built.columns.hash.data(), built.columns.node.data(), kept);
    ASSERT_TRUE(view.interpolate);
    size_t outside = 0;
    constexpr size_t kQueries = 20000;
    for (size_t i = 0; i < kQueries; ++i) {
      const uint32_t x = static_cast<uint32_t>(rng());
      const uint32_t* bucket = view.table + (x >> view.table_shift);
      const uint32_t lo = bucket[0], hi = bucket[1];
      const uint32_t guess = lo + static_cast<uint32_t>(
                                      (uint64_t{hi - lo} * (x & view.offset_mask)) >> view.table_shift);
      const uint32_t w = std::min(guess - std::min(internal::kWindowKeys / 2, guess - lo),
                                  view.window_last);
      const uint32_t* hash = built.columns.hash.data();
      const uint32_t answer = static_cast<uint32_t>(std::lower_bound(hash, hash + kept, x) - hash);
      ASSERT_GE(answer, lo);
      ASSERT_LE(answer, hi);
      outside += answer < w || answer > w + internal::kWindowKeys;
    }
    EXPECT_LT(outside, kQueries / 50) << n << ": the window should decide about 99% of lookups";
    ExpectIndexFindsEverySlot(built, rng);
  }
}

// Points packed into a sliver of the hash space overfill one bucket: the
// window misses most lookups there (they descend) and the descent enters at
// the root.
TEST(SearchIndexTest, ClusteredHashesFallBackToTheRoot) {
  std::mt19937_64 rng(6);
  std::vector<RawPoint> points = RandomPoints(60000, 10, rng);
  for (RawPoint& p : points) p.hash = 0x12340000u + (p.hash & 0xFFFFu);
  const BuiltColumns built = BuildColumns(points);
  const internal::SearchIndex& index = built.columns.index;
  EXPECT_EQ(index.entry_level(), index.levels());
  EXPECT_EQ(index.table_bits(), internal::SearchIndex::TableBitsFor(built.columns.size));
  ExpectIndexFindsEverySlot(built, rng);

  // Two clusters far apart, and a ring that has both.
  for (RawPoint& p : points) p.hash = (p.hash & 1 ? 0xFFFF0000u : 0u) + (p.hash >> 16);
  ExpectIndexFindsEverySlot(BuildColumns(points), rng);
}

// The descent enters at the lowest level where no bucket of the slot table
// spans more than 15 keys: then the 16-key window starting at its first key
// always holds the answer. One more and it must enter higher. (2^13 buckets
// of 2^19 hashes here: the 2^20-wide groups below are two buckets each, the
// keys all in the first.)
TEST(SearchIndexTest, PrefixTableBucketBound) {
  std::mt19937_64 rng(8);
  constexpr uint32_t kBlocks = 4096;  // level 1: 4096 keys -> 2^12 buckets of 2^20
  for (const uint32_t load : {15u, 16u}) {
    SCOPED_TRACE("level-1 keys in bucket 5: " + std::to_string(load));
    // Block maxima (the level-1 keys): one per bucket except `load` in
    // bucket 5; the last block holds the sentinel.
    std::vector<uint32_t> maxima;
    for (uint32_t bucket = 0; maxima.size() < kBlocks - 1; ++bucket) {
      const uint32_t in_bucket = bucket == 5 ? load : 1;
      for (uint32_t k = 0; k < in_bucket && maxima.size() < kBlocks - 1; ++k) {
        maxima.push_back((bucket << 20) + 1000 * (k + 1));
      }
    }
    std::vector<RawPoint> points;
    for (const uint32_t max : maxima) {
      for (uint32_t i = 0; i < 16; ++i) points.push_back({max - 15 + i, max % 7});
    }
    for (uint32_t i = 0; i < 15; ++i) points.push_back({0xFFFFFF00u + i, 1});
    const BuiltColumns built = BuildColumns(points);
    const internal::SearchIndex& index = built.columns.index;
    ASSERT_EQ(built.columns.size, 16 * kBlocks - 1);
    ASSERT_EQ(index.table_bits(), 13);
    if (load == 15) {
      EXPECT_EQ(index.entry_level(), 1);
    } else {
      EXPECT_GT(index.entry_level(), 1);
    }
    ExpectIndexFindsEverySlot(built, rng);
  }
}

TEST(SearchIndexTest, ColumnsHoldSentinelAndWrapNode) {
  std::mt19937_64 rng(7);
  for (const size_t n : {1, 15, 16, 17, 31, 32, 33, 1000}) {
    const BuiltColumns built = BuildColumns(RandomPoints(n, 9, rng));
    const internal::Columns& c = built.columns;
    ASSERT_EQ(c.size, built.sorted_hashes.size());
    EXPECT_EQ(c.hash.size(), internal::HashColumnSlots(c.size));
    EXPECT_EQ(c.node.size(), internal::NodeColumnSlots(c.size));
    for (size_t i = 0; i < c.size; ++i) {
      ASSERT_EQ(c.hash[i], built.sorted_hashes[i]);
      ASSERT_EQ(c.node[i], built.sorted_nodes[i]);
    }
    for (size_t i = c.size; i < c.hash.size(); ++i) EXPECT_EQ(c.hash[i], UINT32_MAX);
    for (size_t i = c.size; i < c.node.size(); ++i) EXPECT_EQ(c.node[i], c.node[0]);
  }
}

}  // namespace
}  // namespace chash
