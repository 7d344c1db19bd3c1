// The C API (chash_c.h) against the C++ one it wraps: the same answers for
// every lookup, walk, mask, bounded load, migration, statistic and
// fingerprint on random rings; and every kind of bad input a C caller may
// pass by mistake answered by an error code, never a crash.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "capi_handles.h"
#include "chash/chash_c.h"
#include "chash/ring.h"
#include "chash/snapshot.h"
#include "cli_run.h"
#include "ring_fixtures.h"
#include "test_util.h"

namespace chash {
namespace {

using testing::MaskHandle;
using testing::MustBuild;
using testing::RandomRingSpec;
using testing::RingHandle;
using testing::RingSpec;

uint32_t CFlavor(Flavor flavor) { return static_cast<uint32_t>(flavor); }

// Builds the spec's ring through the C API; fails the test on error.
RingHandle BuildC(const RingSpec& spec) {
  chash_builder* builder = nullptr;
  EXPECT_EQ(chash_builder_new(CFlavor(spec.flavor), spec.multiple, &builder), CHASH_OK)
      << chash_last_error();
  if (builder == nullptr) return nullptr;
  for (const auto& server : spec.servers) {
    const int rc =
        chash_builder_add(builder, server.address.data(), server.address.size(), server.weight);
    EXPECT_EQ(rc, CHASH_OK) << chash_builder_error(builder);
  }
  chash_ring* ring = nullptr;
  EXPECT_EQ(chash_builder_build(builder, &ring), CHASH_OK) << chash_last_error();
  return RingHandle(ring);
}

// Hashes at every point, +-1, and the ends: every answer is decided there.
std::vector<uint32_t> ProbeHashes(const Ring& ring) {
  std::vector<uint32_t> hashes = {0, 1, UINT32_MAX};
  PointCursor cursor = ring.Begin();
  for (uint64_t i = 0; i < ring.num_points(); ++i) {
    hashes.push_back(cursor.hash() - 1);
    hashes.push_back(cursor.hash());
    hashes.push_back(cursor.hash() + 1);
    cursor.Advance();
  }
  return hashes;
}

std::vector<std::string> RandomKeys(std::mt19937_64& rng, size_t count) {
  std::vector<std::string> keys;
  for (size_t i = 0; i < count; ++i) {
    std::string key(rng() % 40, '\0');
    for (char& c : key) c = static_cast<char>(rng());  // any byte, NUL included
    keys.push_back(key);
  }
  return keys;
}

struct KeyArrays {
  explicit KeyArrays(const std::vector<std::string>& keys) {
    for (const std::string& key : keys) {
      pointers.push_back(key.data());
      lengths.push_back(key.size());
      views.emplace_back(key);
    }
  }
  std::vector<const char*> pointers;
  std::vector<size_t> lengths;
  std::vector<std::string_view> views;
};

class CApiRandomRings : public ::testing::TestWithParam<Flavor> {
 protected:
  struct Rings {
    int seed;
    size_t count;  // scaled (testing::Scaled), at least 4
    uint32_t max_multiple;  // of pingora-v2; the others' is 160
    uint32_t max_nodes;
    uint32_t max_weight;
  };
  using Check = std::function<void(std::mt19937_64& rng, const RingSpec& spec, const Ring& ring,
                                   const RingHandle& c_ring)>;

  // Random rings of the flavor, each built by the engine and through the C
  // API, given to `check` with the generator (for more random input) until
  // the first fatal failure.
  void ForEachRing(const Rings& rings, const Check& check) {
    std::mt19937_64 rng(rings.seed + static_cast<int>(GetParam()));
    const size_t count = testing::Scaled(rings.count, 4);
    for (size_t r = 0; r < count && !HasFatalFailure(); ++r) {
      const uint32_t multiple =
          GetParam() == Flavor::kPingoraV2 ? 1 + rng() % rings.max_multiple : 160;
      const RingSpec spec = RandomRingSpec(rng, GetParam(), multiple,
                                           1 + rng() % rings.max_nodes, rings.max_weight);
      SCOPED_TRACE(spec.Describe());
      const Ring ring = testing::BuildEngine(spec);
      const RingHandle c_ring = BuildC(spec);
      ASSERT_NE(c_ring, nullptr);
      check(rng, spec, ring, c_ring);
    }
  }
};

TEST_P(CApiRandomRings, LookupsAndWalksMatchTheCppApi) {
  const auto check = [&](std::mt19937_64& rng, const RingSpec& spec, const Ring& ring,
                         const RingHandle& c_ring) {
    ASSERT_EQ(chash_ring_num_nodes(c_ring.get()), ring.num_nodes());
    ASSERT_EQ(chash_ring_num_points(c_ring.get()), ring.num_points());
    ASSERT_EQ(chash_ring_points_generated(c_ring.get()), ring.points_generated());
    ASSERT_EQ(chash_ring_nodes_with_points(c_ring.get()), ring.nodes_with_points());
    ASSERT_EQ(chash_ring_flavor(c_ring.get()), static_cast<uint32_t>(GetParam()));
    ASSERT_EQ(chash_ring_point_multiple(c_ring.get()), spec.multiple);
    for (uint32_t node = 0; node < ring.num_nodes(); ++node) {
      size_t len = 0;
      const char* address = chash_ring_node_address(c_ring.get(), node, &len);
      ASSERT_NE(address, nullptr);
      EXPECT_EQ(std::string(address, len), spec.servers[node].address);
      EXPECT_EQ(address[len], '\0');
      EXPECT_EQ(chash_ring_node_weight(c_ring.get(), node), spec.servers[node].weight);
      EXPECT_EQ(chash_ring_owns_points(c_ring.get(), node), ring.owns_points(node) ? 1 : 0);
    }

    const std::vector<uint32_t> hashes = ProbeHashes(ring);
    std::vector<uint32_t> batch(hashes.size());
    ASSERT_EQ(chash_ring_find_hashes(c_ring.get(), hashes.data(), hashes.size(), batch.data()),
              CHASH_OK);
    for (size_t i = 0; i < hashes.size(); ++i) {
      const uint32_t want = ring.FindNodeByHash(hashes[i]);
      ASSERT_EQ(chash_ring_find_hash(c_ring.get(), hashes[i]), want) << hashes[i];
      ASSERT_EQ(batch[i], want) << hashes[i];
    }

    // Keys of any bytes, in batches longer than the API's internal chunk.
    const std::vector<std::string> keys = RandomKeys(rng, 700);
    const KeyArrays arrays(keys);
    std::vector<uint32_t> key_batch(keys.size());
    ASSERT_EQ(chash_ring_find_keys(c_ring.get(), arrays.pointers.data(), arrays.lengths.data(),
                                   keys.size(), key_batch.data()),
              CHASH_OK);
    for (size_t i = 0; i < keys.size(); ++i) {
      const uint32_t want = ring.FindNode(keys[i]);
      ASSERT_EQ(chash_ring_find(c_ring.get(), keys[i].data(), keys[i].size()), want);
      ASSERT_EQ(key_batch[i], want);
      ASSERT_EQ(chash_crc32(keys[i].data(), keys[i].size()), Crc32(keys[i]));
    }

    // Walks from a sample of the probe hashes.
    for (size_t i = 0; i < hashes.size(); i += 1 + hashes.size() / 50) {
      chash_cursor cursor;
      ASSERT_EQ(chash_ring_walk(c_ring.get(), hashes[i], &cursor), CHASH_OK);
      PointCursor want = ring.WalkFromHash(hashes[i]);
      for (int step = 0; step < 40; ++step) {
        ASSERT_EQ(chash_cursor_hash(&cursor), want.empty() ? 0 : want.hash());
        ASSERT_EQ(chash_cursor_node(&cursor), want.empty() ? Ring::kNoNode : want.node());
        ASSERT_EQ(chash_cursor_next(&cursor), want.Next());
      }
      std::vector<uint64_t> memory(chash_walk_size(c_ring.get()) / 8);
      chash_walk* walk = nullptr;
      ASSERT_EQ(chash_walk_start(memory.data(), memory.size() * 8, c_ring.get(), nullptr,
                                 hashes[i], &walk),
                CHASH_OK);
      DistinctNodeWalk want_distinct = ring.WalkDistinctFromHash(hashes[i]);
      for (uint32_t step = 0; step <= ring.num_nodes(); ++step) {
        const uint32_t node = want_distinct.Next();
        ASSERT_EQ(chash_walk_next(walk), node);
        if (node == Ring::kNoNode) break;
      }
    }
  };
  ForEachRing({.seed = 1234, .count = 30, .max_multiple = 40, .max_nodes = 60, .max_weight = 8},
              check);
}

TEST_P(CApiRandomRings, MasksBoundedLoadsAndIdentityMatchTheCppApi) {
  const auto check = [&](std::mt19937_64& rng, const RingSpec&, const Ring& ring,
                         const RingHandle& c_ring) {
    NodeMask mask(ring.num_nodes());
    chash_node_mask* c_mask_raw = nullptr;
    ASSERT_EQ(chash_node_mask_new(ring.num_nodes(), 1, &c_mask_raw), CHASH_OK);
    const MaskHandle c_mask(c_mask_raw);
    for (uint32_t node = 0; node < ring.num_nodes(); ++node) {
      if (rng() % 3 == 0) {
        mask.Set(node, false);
        ASSERT_EQ(chash_node_mask_set(c_mask.get(), node, 0), CHASH_OK);
      }
    }
    ASSERT_EQ(chash_node_mask_count_available(c_mask.get()), mask.count_available());
    ASSERT_EQ(chash_node_mask_size(c_mask.get()), mask.size());
    for (uint32_t node = 0; node <= ring.num_nodes(); ++node) {
      ASSERT_EQ(chash_node_mask_get(c_mask.get(), node), mask.available(node) ? 1 : 0);
    }

    chash_availability* availability = nullptr;
    ASSERT_EQ(chash_availability_new(ring.num_nodes(), &availability), CHASH_OK);
    ASSERT_EQ(chash_availability_publish(availability, c_mask.get()), CHASH_OK);
    EXPECT_EQ(chash_availability_version(availability), 1u);
    chash_node_mask* snapshot = nullptr;
    uint64_t version = 0;
    ASSERT_EQ(chash_availability_snapshot(availability, &snapshot, &version), CHASH_OK);
    EXPECT_EQ(version, 1u);
    EXPECT_EQ(chash_node_mask_count_available(snapshot), mask.count_available());
    chash_node_mask_free(snapshot);

    std::vector<uint64_t> loads(ring.num_nodes());
    for (uint64_t& load : loads) load = rng() % 10;
    const uint64_t capacity = BoundedLoadCapacity(100, ring.num_nodes(), 1.25);
    ASSERT_EQ(chash_bounded_load_capacity(100, ring.num_nodes(), 1.25), capacity);

    const std::vector<uint32_t> hashes = ProbeHashes(ring);
    std::vector<uint32_t> batch(hashes.size());
    ASSERT_EQ(chash_ring_find_available_hashes(c_ring.get(), c_mask.get(), hashes.data(),
                                               hashes.size(), batch.data()),
              CHASH_OK);
    for (size_t i = 0; i < hashes.size(); ++i) {
      const uint32_t want = FindAvailableNodeByHash(ring, mask, hashes[i]);
      ASSERT_EQ(batch[i], want);
      ASSERT_EQ(chash_ring_find_available_hash(c_ring.get(), c_mask.get(), hashes[i]), want);
      ASSERT_EQ(chash_availability_find_hash(availability, c_ring.get(), hashes[i]), want);
      ASSERT_EQ(chash_ring_find_under_capacity(c_ring.get(), hashes[i], loads.data(), loads.size(),
                                               5, c_mask.get()),
                FindNodeUnderCapacity(ring, hashes[i], std::span<const uint64_t>(loads), 5, &mask));
      uint32_t bounded = 0;
      const Result<uint32_t> want_bounded = FindNodeBoundedLoad(
          ring, hashes[i], std::span<const uint64_t>(loads), 1.25, i % 2 ? &mask : nullptr);
      ASSERT_TRUE(want_bounded.ok());
      ASSERT_EQ(chash_ring_find_bounded_load(c_ring.get(), hashes[i], loads.data(), loads.size(),
                                             1.25, i % 2 ? c_mask.get() : nullptr, &bounded),
                CHASH_OK);
      ASSERT_EQ(bounded, want_bounded.value());
    }
    const std::vector<std::string> keys = RandomKeys(rng, 300);
    const KeyArrays arrays(keys);
    std::vector<uint32_t> masked(keys.size()), through(keys.size());
    ASSERT_EQ(chash_ring_find_available_keys(c_ring.get(), c_mask.get(), arrays.pointers.data(),
                                             arrays.lengths.data(), keys.size(), masked.data()),
              CHASH_OK);
    ASSERT_EQ(chash_availability_find_keys(availability, c_ring.get(), arrays.pointers.data(),
                                           arrays.lengths.data(), keys.size(), through.data()),
              CHASH_OK);
    for (size_t i = 0; i < keys.size(); ++i) {
      const uint32_t want = FindAvailableNode(ring, mask, keys[i]);
      ASSERT_EQ(masked[i], want);
      ASSERT_EQ(through[i], want);
      ASSERT_EQ(
          chash_ring_find_available(c_ring.get(), c_mask.get(), keys[i].data(), keys[i].size()),
          want);
      ASSERT_EQ(chash_availability_find(availability, c_ring.get(), keys[i].data(), keys[i].size()),
                want);
    }
    chash_availability_free(availability);

    uint8_t fingerprint[CHASH_FINGERPRINT_SIZE];
    char hex[2 * CHASH_FINGERPRINT_SIZE + 1];
    ASSERT_EQ(chash_ring_fingerprint(c_ring.get(), fingerprint), CHASH_OK);
    ASSERT_EQ(chash_fingerprint_hex(fingerprint, hex), CHASH_OK);
    EXPECT_EQ(std::string(hex), RingFingerprint(ring).Hex());
    ASSERT_EQ(chash_ring_points_digest(c_ring.get(), fingerprint), CHASH_OK);
    ASSERT_EQ(chash_fingerprint_hex(fingerprint, hex), CHASH_OK);
    EXPECT_EQ(std::string(hex), PointsDigest(ring).Hex());
    ASSERT_EQ(chash_ring_backend_fingerprint(c_ring.get(), fingerprint), CHASH_OK);
    ASSERT_EQ(chash_fingerprint_hex(fingerprint, hex), CHASH_OK);
    EXPECT_EQ(std::string(hex), BackendFingerprint(ring).Hex());

    chash_ring_stats stats = testing::Sized<chash_ring_stats>();
    ASSERT_EQ(chash_ring_stats_compute(c_ring.get(), &stats), CHASH_OK);
    const RingStats want = ComputeRingStats(ring);
    EXPECT_EQ(stats.nodes, want.nodes);
    EXPECT_EQ(stats.nodes_with_points, ring.nodes_with_points());
    EXPECT_EQ(stats.points_generated, want.points_generated);
    EXPECT_EQ(stats.points, want.points);
    EXPECT_EQ(stats.collisions, want.collisions);
    EXPECT_EQ(stats.column_bytes, want.column_bytes);
    EXPECT_EQ(stats.index_bytes, want.index_bytes);
    EXPECT_EQ(stats.collision_table_bytes, want.collision_table_bytes);
    EXPECT_EQ(stats.cv_measured, want.cv_measured);
    EXPECT_EQ(stats.cv_predicted, want.cv_predicted);
    EXPECT_EQ(stats.max_share_ratio, want.max_share_ratio);
    EXPECT_EQ(stats.min_share_ratio, want.min_share_ratio);
    chash_memory_usage usage = testing::Sized<chash_memory_usage>();
    ASSERT_EQ(chash_ring_memory_usage(c_ring.get(), &usage), CHASH_OK);
    EXPECT_EQ(usage.column_bytes, ring.memory_usage().column_bytes);
    EXPECT_EQ(usage.other_bytes, ring.memory_usage().other_bytes);
  };
  ForEachRing({.seed = 777, .count = 20, .max_multiple = 20, .max_nodes = 40, .max_weight = 5},
              check);
}

INSTANTIATE_TEST_SUITE_P(Flavors, CApiRandomRings,
                         ::testing::Values(Flavor::kNginx, Flavor::kPingoraV1, Flavor::kPingoraV2),
                         [](const auto& param_info) {
                           std::string name(FlavorName(param_info.param));
                           name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
                           return name;
                         });

TEST(CApiRawPoints, MatchesBuildRingFromPoints) {
  const std::vector<chash_raw_point> points = {{10, 0}, {10, 1}, {20, 1}, {30, 2}, {30, 0}};
  const std::vector<RawPoint> raw = {{10, 0}, {10, 1}, {20, 1}, {30, 2}, {30, 0}};
  const std::vector<uint32_t> ranks = {2, 0, 1};
  chash_ring* c_ring = nullptr;
  ASSERT_EQ(chash_ring_from_points(3, points.data(), points.size(), ranks.data(), 0, &c_ring),
            CHASH_OK);
  const RingHandle handle(c_ring);
  const Result<Ring> ring = BuildRingFromPoints(3, raw, ranks);
  ASSERT_TRUE(ring.ok());
  EXPECT_EQ(chash_ring_flavor(c_ring), CHASH_NO_FLAVOR);
  size_t len = 99;
  ASSERT_NE(chash_ring_node_address(c_ring, 0, &len), nullptr);
  EXPECT_EQ(len, 0u);
  for (uint32_t hash : {0u, 9u, 10u, 11u, 20u, 21u, 30u, 31u, UINT32_MAX}) {
    EXPECT_EQ(chash_ring_find_hash(c_ring, hash), ring.value().FindNodeByHash(hash)) << hash;
  }
  // Errors carry the C++ message.
  const chash_raw_point bad[] = {{1, 5}};
  EXPECT_EQ(chash_ring_from_points(3, bad, 1, nullptr, 0, &c_ring), CHASH_E_BAD_NODE_ID);
  EXPECT_EQ(c_ring, nullptr);
  EXPECT_NE(std::string(chash_last_error()), "");
  EXPECT_EQ(chash_ring_from_points(70000, nullptr, 0, nullptr, 0, &c_ring), CHASH_E_TOO_MANY_NODES);
  const uint32_t not_a_permutation[] = {0, 0, 1};
  EXPECT_EQ(chash_ring_from_points(3, points.data(), points.size(), not_a_permutation, 0, &c_ring),
            CHASH_E_BAD_ARGUMENT);
  EXPECT_EQ(chash_ring_from_points(3, points.data(), points.size(), nullptr, 2, &c_ring),
            CHASH_E_TOO_MANY_POINTS);
  EXPECT_EQ(chash_ring_from_points(3, nullptr, 1, nullptr, 0, &c_ring), CHASH_E_NULL_ARGUMENT);
}

RingSpec Fleet(Flavor flavor, uint32_t multiple) {
  RingSpec spec{.flavor = flavor, .multiple = multiple, .servers = {}};
  for (int i = 1; i <= 6; ++i) {
    spec.servers.push_back({"10.0.0." + std::to_string(i) + ":443", uint32_t(i % 3 + 1)});
  }
  return spec;
}

TEST(CApiMigration, MatchesRingMigrationAndOutlivesTheCallersRings) {
  const RingSpec old_spec = Fleet(Flavor::kPingoraV1, 160);
  const RingSpec new_spec = Fleet(Flavor::kPingoraV2, 16);
  chash_ring* old_ring = BuildC(old_spec).release();
  chash_ring* new_ring = BuildC(new_spec).release();
  auto cpp =
      RingMigration::Create(std::make_shared<Ring>(testing::BuildEngine(old_spec)),
                            std::make_shared<Ring>(testing::BuildEngine(new_spec)), {.seed = 42});
  ASSERT_TRUE(cpp.ok());
  chash_migration* migration = nullptr;
  ASSERT_EQ(chash_migration_new(old_ring, new_ring, 42, 0, &migration), CHASH_OK);
  // The migration holds its own references: the caller's go away now.
  chash_ring_free(old_ring);
  chash_ring_free(new_ring);
  EXPECT_EQ(chash_migration_backends_match(migration), 1);
  EXPECT_EQ(chash_migration_in_scope(migration), 0);
  ASSERT_EQ(chash_migration_set_in_scope(migration, 1), CHASH_OK);
  ASSERT_EQ(chash_migration_set_rollout(migration, 0.3), CHASH_OK);
  EXPECT_EQ(chash_migration_rollout_ppm(migration), 300000u);
  cpp.value()->SetInScope(true);
  ASSERT_TRUE(cpp.value()->SetRollout(0.3).ok());
  EXPECT_EQ(chash_migration_set_rollout(migration, 1.5), CHASH_E_BAD_ARGUMENT);
  EXPECT_EQ(chash_migration_set_rollout_ppm(migration, 1000001), CHASH_E_BAD_ARGUMENT);
  EXPECT_EQ(chash_migration_rollout_ppm(migration), 300000u);

  std::mt19937_64 rng(5);
  const std::vector<std::string> keys = RandomKeys(rng, 600);
  const KeyArrays arrays(keys);
  std::vector<uint32_t> nodes(keys.size());
  std::vector<uint8_t> sides(keys.size());
  ASSERT_EQ(chash_migration_find_keys(migration, arrays.pointers.data(), arrays.lengths.data(),
                                      keys.size(), nodes.data(), sides.data()),
            CHASH_OK);
  size_t on_new = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    const MigrationAnswer want = cpp.value()->Find(keys[i]);
    uint32_t side = CHASH_SIDE_NEW;
    ASSERT_EQ(chash_migration_find(migration, keys[i].data(), keys[i].size(), &side), want.node);
    ASSERT_EQ(side, static_cast<uint32_t>(want.side));
    ASSERT_EQ(nodes[i], want.node);
    ASSERT_EQ(sides[i], static_cast<uint8_t>(want.side));
    ASSERT_EQ(chash_migration_key_hash(keys[i].data(), keys[i].size(), 42),
              MigrationKeyHash(keys[i], 42));
    on_new += side == CHASH_SIDE_NEW;
    // The side's ring handle answers for its node ids.
    const chash_ring* ring = chash_migration_ring(migration, side);
    ASSERT_NE(ring, nullptr);
    ASSERT_EQ(chash_ring_find(ring, keys[i].data(), keys[i].size()), want.node);
  }
  EXPECT_GT(on_new, 0u);
  EXPECT_LT(on_new, keys.size());
  uint64_t old_count = 0, new_count = 0;
  ASSERT_EQ(chash_migration_counters(migration, &old_count, &new_count), CHASH_OK);
  EXPECT_EQ(old_count + new_count, 2 * keys.size());
  EXPECT_EQ(new_count, 2 * on_new);
  chash_migration_free(migration);
}

TEST(CApiMigration, RefusesRingsOfDifferentSnapshotsWithTheirDifferences) {
  RingSpec other = Fleet(Flavor::kPingoraV1, 160);
  other.servers.pop_back();
  const RingHandle a = BuildC(Fleet(Flavor::kPingoraV1, 160));
  const RingHandle b = BuildC(other);
  chash_migration* migration = reinterpret_cast<chash_migration*>(1);
  EXPECT_EQ(chash_migration_new(a.get(), b.get(), 0, 0, &migration), CHASH_E_BAD_ARGUMENT);
  EXPECT_EQ(migration, nullptr);
  EXPECT_NE(std::string(chash_last_error()).find("10.0.0.6:443"), std::string::npos)
      << chash_last_error();
  ASSERT_EQ(chash_migration_new(a.get(), b.get(), 0, 1, &migration), CHASH_OK);
  EXPECT_EQ(chash_migration_backends_match(migration), 0);
  chash_migration_free(migration);
}

// ---- The builder's errors -----------------------------------------------------------

TEST(CApiBuilder, ErrorsNameTheServerAsTheCppStatusDoes) {
  chash_builder* builder = nullptr;
  ASSERT_EQ(chash_builder_new(CHASH_FLAVOR_NGINX, 0, &builder), CHASH_OK);
  EXPECT_STREQ(chash_builder_error(builder), "");
  ASSERT_EQ(chash_builder_add(builder, "10.0.0.1:443", 12, 1), CHASH_OK);
  EXPECT_EQ(chash_builder_add(builder, "10.0.0.2:99999", 14, 1), CHASH_E_BAD_ADDRESS);
  RingBuilder cpp({.flavor = Flavor::kNginx});
  ASSERT_TRUE(cpp.Add("10.0.0.1:443", 1).ok());
  const Status want = cpp.Add("10.0.0.2:99999", 1);
  EXPECT_EQ(std::string(chash_builder_error(builder)), want.message());
  EXPECT_EQ(std::string(chash_last_error()), want.message());
  EXPECT_NE(std::string(chash_builder_error(builder)).find("node 1"), std::string::npos);
  // A success clears it; a failed add changed nothing.
  ASSERT_EQ(chash_builder_add(builder, "10.0.0.2:443", 12, 1), CHASH_OK);
  EXPECT_STREQ(chash_builder_error(builder), "");
  EXPECT_EQ(chash_builder_num_nodes(builder), 2u);
  EXPECT_EQ(chash_builder_add(builder, "10.0.0.1:443", 12, 1), CHASH_E_DUPLICATE_NODE);
  EXPECT_NE(std::string(chash_builder_error(builder)).find("node 0 '10.0.0.1:443'"),
            std::string::npos)
      << chash_builder_error(builder);
  // Embedded NUL bytes are refused, with the offset.
  EXPECT_EQ(chash_builder_add(builder, "10.0.0.3\0:443", 13, 1), CHASH_E_BAD_ADDRESS);
  EXPECT_NE(std::string(chash_builder_error(builder)).find("NUL byte at offset 8"),
            std::string::npos)
      << chash_builder_error(builder);
  EXPECT_EQ(chash_builder_add(builder, nullptr, 5, 1), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_builder_add(builder, nullptr, 0, 1), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_builder_set_max_points(builder, 100), CHASH_E_BAD_ARGUMENT);
  EXPECT_EQ(chash_builder_num_nodes(builder), 2u);
  chash_ring* ring = nullptr;
  ASSERT_EQ(chash_builder_build(builder, &ring), CHASH_OK);
  EXPECT_EQ(chash_ring_num_nodes(ring), 2u);
  chash_ring_free(ring);
}

TEST(CApiBuilder, RefusesBadOptions) {
  chash_builder* builder = reinterpret_cast<chash_builder*>(1);
  EXPECT_EQ(chash_builder_new(CHASH_FLAVOR_PINGORA_V1, 16, &builder), CHASH_E_BAD_MULTIPLE);
  EXPECT_EQ(builder, nullptr);
  // The C API passes on the message of the one option check, ValidateRingOptions.
  EXPECT_EQ(std::string(chash_last_error()),
            chash::ValidateRingOptions({.flavor = chash::Flavor::kPingoraV1, .point_multiple = 16})
                .message());
  EXPECT_NE(std::string(chash_last_error()).find("pingora-v1"), std::string::npos);
  const uint32_t unknown = chash::testing::FirstUnknownFlavor();
  EXPECT_EQ(chash_builder_new(unknown, 0, &builder), CHASH_E_BAD_ARGUMENT);
  EXPECT_NE(std::string(chash_last_error()).find("unknown flavor " + std::to_string(unknown)),
            std::string::npos);
  EXPECT_EQ(chash_builder_new(UINT32_MAX, 0, &builder), CHASH_E_BAD_ARGUMENT);
  EXPECT_EQ(chash_builder_new(CHASH_FLAVOR_NGINX, 0, nullptr), CHASH_E_NULL_ARGUMENT);

  ASSERT_EQ(chash_builder_new(CHASH_FLAVOR_PINGORA_V2, 0, &builder), CHASH_OK);
  EXPECT_EQ(chash_builder_set_max_points(builder, 0), CHASH_E_BAD_ARGUMENT);
  EXPECT_EQ(chash_builder_set_max_points(builder, uint64_t{1} << 31), CHASH_E_BAD_ARGUMENT);
  ASSERT_EQ(chash_builder_set_max_points(builder, 1000), CHASH_OK);
  ASSERT_EQ(chash_builder_add(builder, "10.0.0.1:443", 12, 6), CHASH_OK);  // 960 points
  EXPECT_EQ(chash_builder_add(builder, "10.0.0.2:443", 12, 1), CHASH_E_TOO_MANY_POINTS);
  EXPECT_NE(std::string(chash_builder_error(builder)).find("node 1"), std::string::npos);
  chash_builder_free(builder);
}

TEST(CApiBuilder, ThreadCountDoesNotChangeTheRing) {
  std::vector<std::array<uint8_t, CHASH_FINGERPRINT_SIZE>> digests;
  for (const uint32_t threads : {1u, 2u, 5u, 0u}) {
    chash_builder* builder = nullptr;
    ASSERT_EQ(chash_builder_new(CHASH_FLAVOR_PINGORA_V2, 64, &builder), CHASH_OK);
    ASSERT_EQ(chash_builder_set_threads(builder, threads), CHASH_OK);
    for (uint32_t i = 0; i < 200; ++i) {
      const std::string address = "10.2." + std::to_string(i / 100) + "." +
                                  std::to_string(i % 100) + ":80";
      ASSERT_EQ(chash_builder_add(builder, address.data(), address.size(), 1 + i % 7), CHASH_OK);
    }
    EXPECT_EQ(chash_builder_set_threads(builder, 1), CHASH_E_BAD_ARGUMENT);
    EXPECT_NE(std::string(chash_builder_error(builder)).find("before the first"),
              std::string::npos);
    chash_ring* ring = nullptr;
    ASSERT_EQ(chash_builder_build(builder, &ring), CHASH_OK) << chash_last_error();
    digests.emplace_back();
    ASSERT_EQ(chash_ring_points_digest(ring, digests.back().data()), CHASH_OK);
    chash_ring_free(ring);
  }
  for (size_t i = 1; i < digests.size(); ++i) EXPECT_EQ(digests[i], digests[0]) << i;
  EXPECT_EQ(chash_builder_set_threads(nullptr, 1), CHASH_E_NULL_ARGUMENT);
}

TEST(CApiBuilder, BuildConsumesTheBuilderOnEveryPath) {
  chash_builder* builder = nullptr;
  ASSERT_EQ(chash_builder_new(CHASH_FLAVOR_NGINX, 0, &builder), CHASH_OK);
  // NULL out: an error, and the builder is freed all the same (ASan checks
  // that nothing leaks).
  EXPECT_EQ(chash_builder_build(builder, nullptr), CHASH_E_NULL_ARGUMENT);
  // An empty builder gives the empty ring.
  ASSERT_EQ(chash_builder_new(CHASH_FLAVOR_NGINX, 0, &builder), CHASH_OK);
  chash_ring* ring = nullptr;
  ASSERT_EQ(chash_builder_build(builder, &ring), CHASH_OK);
  ASSERT_NE(ring, nullptr);
  EXPECT_EQ(chash_ring_find(ring, "k", 1), CHASH_NO_NODE);
  EXPECT_EQ(chash_ring_find_hash(ring, 5), CHASH_NO_NODE);
  chash_cursor cursor;
  ASSERT_EQ(chash_ring_walk(ring, 5, &cursor), CHASH_OK);
  EXPECT_EQ(chash_cursor_next(&cursor), CHASH_NO_NODE);
  uint64_t memory[32];
  chash_walk* walk = nullptr;
  ASSERT_EQ(chash_walk_start(memory, sizeof memory, ring, nullptr, 5, &walk), CHASH_OK);
  EXPECT_EQ(chash_walk_next(walk), CHASH_NO_NODE);
  chash_ring_free(ring);
}

// ---- Bad input: error codes, never a crash --------------------------------------------

TEST(CApiBadInput, NullHandlesAndOutParameters) {
  const RingHandle ring = BuildC(Fleet(Flavor::kNginx, 160));
  ASSERT_NE(ring, nullptr);
  uint32_t out[4] = {};
  const uint32_t hashes[4] = {1, 2, 3, 4};
  const char* keys[2] = {"a", nullptr};
  const size_t lens[2] = {1, 3};

  EXPECT_EQ(chash_builder_add(nullptr, "x", 1, 1), CHASH_E_NULL_ARGUMENT);
  EXPECT_STREQ(chash_builder_error(nullptr), "");
  EXPECT_EQ(chash_builder_build(nullptr, nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_builder_set_max_points(nullptr, 5), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_builder_num_nodes(nullptr), 0u);
  chash_builder_free(nullptr);
  chash_ring_free(nullptr);

  EXPECT_EQ(chash_ring_find(nullptr, "k", 1), CHASH_NO_NODE);
  EXPECT_EQ(chash_ring_find(ring.get(), nullptr, 3), CHASH_NO_NODE);
  EXPECT_NE(chash_ring_find(ring.get(), nullptr, 0), CHASH_NO_NODE);  // the empty key
  EXPECT_EQ(chash_ring_find(ring.get(), nullptr, 0), chash_ring_find(ring.get(), "", 0));
  EXPECT_EQ(chash_ring_find_hash(nullptr, 1), CHASH_NO_NODE);
  EXPECT_EQ(chash_ring_find_hashes(nullptr, hashes, 4, out), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_find_hashes(ring.get(), nullptr, 4, out), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_find_hashes(ring.get(), hashes, 4, nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_find_hashes(ring.get(), nullptr, 0, nullptr), CHASH_OK);
  EXPECT_EQ(chash_ring_find_keys(ring.get(), keys, lens, 2, out), CHASH_E_NULL_ARGUMENT);
  EXPECT_NE(std::string(chash_last_error()).find("keys[1]"), std::string::npos);
  EXPECT_EQ(chash_ring_find_keys(ring.get(), nullptr, lens, 2, out), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_find_keys(ring.get(), keys, nullptr, 2, out), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_find_keys(ring.get(), keys, lens, 1, nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_find_keys(nullptr, keys, lens, 1, out), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_find_keys(ring.get(), keys, lens, 1, out), CHASH_OK);

  chash_cursor cursor;
  EXPECT_EQ(chash_ring_walk(ring.get(), 1, nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_walk(nullptr, 1, &cursor), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_cursor_next(&cursor), CHASH_NO_NODE);  // left empty
  EXPECT_EQ(chash_cursor_next(nullptr), CHASH_NO_NODE);
  EXPECT_EQ(chash_cursor_node(nullptr), CHASH_NO_NODE);
  EXPECT_EQ(chash_cursor_hash(nullptr), 0u);
  chash_cursor zeroed = {};
  EXPECT_EQ(chash_cursor_next(&zeroed), CHASH_NO_NODE);
  EXPECT_EQ(chash_cursor_hash(&zeroed), 0u);
  alignas(8) unsigned char memory[4096];
  chash_walk* walk = reinterpret_cast<chash_walk*>(memory);
  EXPECT_EQ(chash_walk_start(memory, sizeof memory, nullptr, nullptr, 1, &walk),
            CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(walk, nullptr);
  EXPECT_EQ(chash_walk_start(nullptr, sizeof memory, ring.get(), nullptr, 1, &walk),
            CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_walk_start(memory, sizeof memory, ring.get(), nullptr, 1, nullptr),
            CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_walk_start(memory, chash_walk_size(ring.get()) - 1, ring.get(), nullptr, 1,
                             &walk),
            CHASH_E_BAD_ARGUMENT) << "too small";
  EXPECT_EQ(chash_walk_start(memory + 1, sizeof memory - 8, ring.get(), nullptr, 1, &walk),
            CHASH_E_BAD_ARGUMENT) << "misaligned";
  EXPECT_EQ(chash_walk_next(nullptr), CHASH_NO_NODE);

  EXPECT_EQ(chash_ring_num_nodes(nullptr), 0u);
  EXPECT_EQ(chash_ring_num_points(nullptr), 0u);
  EXPECT_EQ(chash_ring_points_generated(nullptr), 0u);
  EXPECT_EQ(chash_ring_nodes_with_points(nullptr), 0u);
  EXPECT_EQ(chash_ring_owns_points(nullptr, 0), 0);
  EXPECT_EQ(chash_ring_flavor(nullptr), CHASH_NO_FLAVOR);
  EXPECT_EQ(chash_ring_point_multiple(nullptr), 0u);
  size_t len = 7;
  EXPECT_EQ(chash_ring_node_address(nullptr, 0, &len), nullptr);
  EXPECT_EQ(len, 0u);
  EXPECT_EQ(chash_ring_node_weight(nullptr, 0), 0u);

  chash_node_mask* mask = nullptr;
  EXPECT_EQ(chash_node_mask_new(5, 1, nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_node_mask_new(65537, 1, &mask), CHASH_E_TOO_MANY_NODES);
  EXPECT_EQ(chash_node_mask_set(nullptr, 0, 1), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_node_mask_get(nullptr, 0), 0);
  EXPECT_EQ(chash_node_mask_size(nullptr), 0u);
  EXPECT_EQ(chash_node_mask_count_available(nullptr), 0u);
  chash_node_mask_free(nullptr);
  ASSERT_EQ(chash_node_mask_new(6, 1, &mask), CHASH_OK);
  const MaskHandle mask_handle(mask);
  EXPECT_EQ(chash_ring_find_available(nullptr, mask, "k", 1), CHASH_NO_NODE);
  EXPECT_EQ(chash_ring_find_available(ring.get(), nullptr, "k", 1), CHASH_NO_NODE);
  EXPECT_EQ(chash_ring_find_available(ring.get(), mask, nullptr, 1), CHASH_NO_NODE);
  EXPECT_EQ(chash_ring_find_available_hash(ring.get(), nullptr, 1), CHASH_NO_NODE);
  EXPECT_EQ(chash_ring_find_available_hashes(ring.get(), nullptr, hashes, 4, out),
            CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_find_available_hashes(ring.get(), mask, hashes, 4, nullptr),
            CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_find_available_keys(ring.get(), mask, keys, lens, 2, out),
            CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_find_available_keys(ring.get(), nullptr, keys, lens, 1, out),
            CHASH_E_NULL_ARGUMENT);

  chash_availability* availability = nullptr;
  EXPECT_EQ(chash_availability_new(5, nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_availability_new(70000, &availability), CHASH_E_TOO_MANY_NODES);
  EXPECT_EQ(chash_availability_publish(nullptr, mask), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_availability_version(nullptr), 0u);
  chash_node_mask* snapshot = mask;
  EXPECT_EQ(chash_availability_snapshot(nullptr, &snapshot, nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(snapshot, nullptr);
  EXPECT_EQ(chash_availability_find(nullptr, ring.get(), "k", 1), CHASH_NO_NODE);
  EXPECT_EQ(chash_availability_find_hash(nullptr, ring.get(), 1), CHASH_NO_NODE);
  EXPECT_EQ(chash_availability_find_keys(nullptr, ring.get(), keys, lens, 1, out),
            CHASH_E_NULL_ARGUMENT);
  chash_availability_free(nullptr);
  ASSERT_EQ(chash_availability_new(7, &availability), CHASH_OK);
  EXPECT_EQ(chash_availability_publish(availability, nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_availability_publish(availability, mask), CHASH_E_BAD_ARGUMENT);  // 6 != 7
  EXPECT_EQ(chash_availability_snapshot(availability, nullptr, nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_availability_find(availability, nullptr, "k", 1), CHASH_NO_NODE);
  EXPECT_EQ(chash_availability_find(availability, ring.get(), nullptr, 1), CHASH_NO_NODE);
  chash_availability_free(availability);

  const uint64_t loads[6] = {};
  uint32_t node = 0;
  EXPECT_EQ(chash_ring_find_under_capacity(nullptr, 1, loads, 6, 5, nullptr), CHASH_NO_NODE);
  EXPECT_EQ(chash_ring_find_under_capacity(ring.get(), 1, nullptr, 6, 5, nullptr), CHASH_NO_NODE);
  EXPECT_EQ(chash_ring_find_bounded_load(nullptr, 1, loads, 6, 1.25, nullptr, &node),
            CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(node, CHASH_NO_NODE);
  EXPECT_EQ(chash_ring_find_bounded_load(ring.get(), 1, loads, 6, 1.25, nullptr, nullptr),
            CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_find_bounded_load(ring.get(), 1, nullptr, 6, 1.25, nullptr, &node),
            CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_find_bounded_load(ring.get(), 1, loads, 5, 1.25, nullptr, &node),
            CHASH_E_BAD_ARGUMENT);
  EXPECT_EQ(chash_ring_find_bounded_load(ring.get(), 1, loads, 6, 1.0, nullptr, &node),
            CHASH_E_BAD_ARGUMENT);
  EXPECT_EQ(chash_ring_find_bounded_load(ring.get(), 1, loads, 6, 1.25, nullptr, &node), CHASH_OK);
  EXPECT_NE(node, CHASH_NO_NODE);

  chash_migration* migration = nullptr;
  EXPECT_EQ(chash_migration_new(nullptr, ring.get(), 0, 0, &migration), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_migration_new(ring.get(), nullptr, 0, 0, &migration), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_migration_new(ring.get(), ring.get(), 0, 0, nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_migration_set_rollout(nullptr, 0.5), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_migration_set_rollout_ppm(nullptr, 5), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_migration_set_in_scope(nullptr, 1), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_migration_rollout_ppm(nullptr), 0u);
  EXPECT_EQ(chash_migration_in_scope(nullptr), 0);
  uint32_t side = CHASH_SIDE_NEW;
  EXPECT_EQ(chash_migration_find(nullptr, "k", 1, &side), CHASH_NO_NODE);
  EXPECT_EQ(side, CHASH_SIDE_OLD);
  EXPECT_EQ(chash_migration_find_keys(nullptr, keys, lens, 1, out, nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_migration_counters(nullptr, nullptr, nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_migration_ring(nullptr, CHASH_SIDE_OLD), nullptr);
  EXPECT_EQ(chash_migration_backends_match(nullptr), 0);
  chash_migration_free(nullptr);
  ASSERT_EQ(chash_migration_new(ring.get(), ring.get(), 0, 0, &migration), CHASH_OK);
  EXPECT_EQ(chash_migration_ring(migration, 5), nullptr);
  EXPECT_EQ(chash_migration_find(migration, nullptr, 1, nullptr), CHASH_NO_NODE);
  EXPECT_EQ(chash_migration_find_keys(migration, keys, lens, 2, out, nullptr),
            CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_migration_counters(migration, nullptr, nullptr), CHASH_OK);
  chash_migration_free(migration);

  uint8_t fingerprint[CHASH_FINGERPRINT_SIZE];
  char hex[2 * CHASH_FINGERPRINT_SIZE + 1];
  chash_ring_stats stats = testing::Sized<chash_ring_stats>();
  chash_memory_usage usage = testing::Sized<chash_memory_usage>();
  EXPECT_EQ(chash_ring_fingerprint(nullptr, fingerprint), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_fingerprint(ring.get(), nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_points_digest(nullptr, fingerprint), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_backend_fingerprint(ring.get(), nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_fingerprint_hex(nullptr, hex), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_fingerprint_hex(fingerprint, nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_stats_compute(nullptr, &stats), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_stats_compute(ring.get(), nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_memory_usage(nullptr, &usage), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_memory_usage(ring.get(), nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_crc32(nullptr, 0), 0u);
  EXPECT_EQ(chash_crc32_extend(5, nullptr, 0), 5u);
}

TEST(CApiBadInput, NodeIdsOutOfRange) {
  const RingHandle ring = BuildC(Fleet(Flavor::kNginx, 160));
  size_t len = 7;
  for (uint32_t node : {6u, 65535u, 65536u, CHASH_NO_NODE}) {
    EXPECT_EQ(chash_ring_node_address(ring.get(), node, &len), nullptr);
    EXPECT_EQ(len, 0u);
    EXPECT_EQ(chash_ring_node_address(ring.get(), node, nullptr), nullptr);
    EXPECT_EQ(chash_ring_node_weight(ring.get(), node), 0u);
    EXPECT_EQ(chash_ring_owns_points(ring.get(), node), 0);
  }
  EXPECT_NE(chash_ring_node_address(ring.get(), 5, nullptr), nullptr);
  chash_node_mask* mask = nullptr;
  ASSERT_EQ(chash_node_mask_new(6, 0, &mask), CHASH_OK);
  EXPECT_EQ(chash_node_mask_set(mask, 6, 1), CHASH_E_BAD_NODE_ID);
  EXPECT_EQ(chash_node_mask_set(mask, CHASH_NO_NODE, 1), CHASH_E_BAD_NODE_ID);
  EXPECT_EQ(chash_node_mask_get(mask, CHASH_NO_NODE), 0);
  // No node available: no answer, at once.
  EXPECT_EQ(chash_ring_find_available(ring.get(), mask, "k", 1), CHASH_NO_NODE);
  chash_node_mask_free(mask);
}

TEST(CApiLibrary, ErrorNamesAndVersion) {
  std::set<std::string> names;
  for (int code = CHASH_OK; code >= CHASH_E_UNTRUSTED; --code) {
    names.insert(chash_strerror(code));
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(1 - CHASH_E_UNTRUSTED));
  EXPECT_EQ(names.count("unknown"), 0u);
  EXPECT_STREQ(chash_strerror(-1000), "unknown");
  EXPECT_STREQ(chash_strerror(5), "unknown");
  // The codes are the C++ StatusCode, negated.
  EXPECT_EQ(std::string(chash_strerror(CHASH_E_OUT_OF_MEMORY)),
            StatusCodeName(StatusCode::kOutOfMemory));
  EXPECT_EQ(std::string(chash_strerror(CHASH_E_IO)), StatusCodeName(StatusCode::kIoError));
  EXPECT_EQ(std::string(chash_strerror(CHASH_E_BAD_SNAPSHOT)),
            StatusCodeName(StatusCode::kBadSnapshot));
  EXPECT_EQ(std::string(chash_strerror(CHASH_E_UNTRUSTED)),
            StatusCodeName(StatusCode::kUntrusted));
  EXPECT_STREQ(chash_version(), CHASH_VERSION_STRING);
  EXPECT_EQ(chash_version_number(), static_cast<uint32_t>(CHASH_VERSION_NUMBER));
  EXPECT_EQ(std::string(chash_simd_target()), ActiveTargetName());
  EXPECT_EQ(std::string(chash_crc32_implementation()), ActiveCrc32Name());
}

// ---- Structs that grow -------------------------------------------------------------

// A caller's struct of an older (smaller) size is written up to its size and
// no further; one of a newer size is accepted when its unknown tail is zero.
TEST(CApiGrowingStructs, OlderAndNewerSizes) {
  chash_builder* builder = nullptr;
  ASSERT_EQ(chash_builder_new(CHASH_FLAVOR_NGINX, 0, &builder), CHASH_OK);
  ASSERT_EQ(chash_builder_add(builder, "10.0.0.1:80", 11, 1), CHASH_OK);
  ASSERT_EQ(chash_builder_add(builder, "10.0.0.2:80", 11, 2), CHASH_OK);
  chash_ring* ring = nullptr;
  ASSERT_EQ(chash_builder_build(builder, &ring), CHASH_OK);
  const RingHandle handle(ring);

  struct Padded {
    chash_ring_stats stats;
    uint64_t canary;
  } padded;
  std::memset(&padded, 0xAB, sizeof padded);
  padded.stats.size = offsetof(chash_ring_stats, points_generated);  // an "older" caller
  ASSERT_EQ(chash_ring_stats_compute(ring, &padded.stats), CHASH_OK);
  EXPECT_EQ(padded.stats.nodes, 2u);
  EXPECT_EQ(padded.stats.size, offsetof(chash_ring_stats, points_generated)) << "size kept";
  uint64_t untouched = 0;
  std::memcpy(&untouched, &padded.stats.points_generated, sizeof untouched);
  EXPECT_EQ(untouched, 0xABABABABABABABABu) << "wrote past the caller's size";

  chash_memory_usage tiny{};
  tiny.size = 4;
  EXPECT_EQ(chash_ring_memory_usage(ring, &tiny), CHASH_E_BAD_ARGUMENT);

  // Options of a "newer" caller: a bigger struct, its unknown tail zero,
  // then with a field this library does not know set.
  struct Newer {
    chash_snapshot_options options;
    uint64_t future_field;
  } newer{};
  newer.options.size = sizeof newer;
  const std::string path = testing::TempPath("growing.chash");
  ASSERT_TRUE(WriteSnapshotFile(MustBuild({{"10.0.0.1:80", 1}}, {}), {}, path).ok());
  chash_snapshot* snapshot = nullptr;
  ASSERT_EQ(chash_snapshot_load(path.c_str(), &newer.options, &snapshot), CHASH_OK);
  chash_snapshot_free(snapshot);
  newer.future_field = 1;
  EXPECT_EQ(chash_snapshot_load(path.c_str(), &newer.options, &snapshot), CHASH_E_BAD_ARGUMENT);
  EXPECT_NE(std::string(chash_last_error()).find("does not know"), std::string::npos);
  chash_snapshot_options zero_size{};
  EXPECT_EQ(chash_snapshot_load(path.c_str(), &zero_size, &snapshot), CHASH_E_BAD_ARGUMENT);
  std::remove(path.c_str());
}

// The failover walk over distinct available nodes: exactly the order of
// the ring of the available nodes (built from those servers alone).
TEST(CApiWalk, MaskedWalkIsTheSubsetRingsOrder) {
  std::mt19937_64 rng(91);
  for (int round = 0; round < 20; ++round) {
    const uint32_t nodes = 3 + static_cast<uint32_t>(rng() % 40);
    const uint32_t multiple = 1 + static_cast<uint32_t>(rng() % 3);
    RingBuilder full({.flavor = Flavor::kPingoraV2, .point_multiple = multiple});
    RingBuilder part({.flavor = Flavor::kPingoraV2, .point_multiple = multiple});
    std::vector<uint32_t> kept;  // full ids of the available nodes
    chash_node_mask* mask = nullptr;
    ASSERT_EQ(chash_node_mask_new(nodes, 0, &mask), CHASH_OK);
    for (uint32_t i = 0; i < nodes; ++i) {
      const std::string address = "10.9.0." + std::to_string(i + 1) + ":80";
      const uint32_t weight = 1 + static_cast<uint32_t>(rng() % 3);
      ASSERT_TRUE(full.Add(address, weight).ok());
      if (rng() % 3 != 0) {
        ASSERT_TRUE(part.Add(address, weight).ok());
        kept.push_back(i);
        ASSERT_EQ(chash_node_mask_set(mask, i, 1), CHASH_OK);
      }
    }
    Ring full_ring = std::move(full).Build().value();
    const Ring part_ring = std::move(part).Build().value();
    chash_ring* c_ring = nullptr;
    chash_builder* builder = nullptr;
    ASSERT_EQ(chash_builder_new(CHASH_FLAVOR_PINGORA_V2, multiple, &builder), CHASH_OK);
    for (uint32_t i = 0; i < nodes; ++i) {
      const std::string address(full_ring.node(i).address.written);
      ASSERT_EQ(chash_builder_add(builder, address.data(), address.size(),
                                  full_ring.node(i).weight),
                CHASH_OK);
    }
    ASSERT_EQ(chash_builder_build(builder, &c_ring), CHASH_OK);
    const RingHandle handle(c_ring);
    std::vector<uint64_t> memory(chash_walk_size(c_ring) / 8);
    for (int key = 0; key < 50; ++key) {
      const uint32_t hash = static_cast<uint32_t>(rng());
      chash_walk* walk = nullptr;
      ASSERT_EQ(chash_walk_start(memory.data(), memory.size() * 8, c_ring, mask, hash, &walk),
                CHASH_OK);
      DistinctNodeWalk want = part_ring.WalkDistinctFromHash(hash);
      for (;;) {
        const uint32_t expected = want.Next();
        const uint32_t got = chash_walk_next(walk);
        ASSERT_EQ(got == CHASH_NO_NODE ? CHASH_NO_NODE : got,
                  expected == Ring::kNoNode ? CHASH_NO_NODE : kept[expected])
            << "round " << round << " hash " << hash;
        if (got == CHASH_NO_NODE) break;
      }
    }
    chash_node_mask_free(mask);
  }
}

TEST(CApiChecks, NamesAndLastCheck) {
  EXPECT_STREQ(chash_check_name(CHASH_CHECK_CHECKSUM), "checksum");
  EXPECT_STREQ(chash_check_name(CHASH_CHECK_NOT_REGULAR), "not_regular");
  EXPECT_STREQ(chash_check_name(CHASH_CHECK_EMBEDDER), "embedder");
  EXPECT_STREQ(chash_check_name(CHASH_CHECK_OPTIONS), "options");
  EXPECT_STREQ(chash_check_name(CHASH_CHECK_LOW_COLUMN), "low_column");
  EXPECT_STREQ(chash_check_name(CHASH_CHECK_LOW_COLUMN + 1), "unknown");
  chash_snapshot* snapshot = nullptr;
  EXPECT_EQ(chash_snapshot_load("/nonexistent/ring.chash", nullptr, &snapshot), CHASH_E_IO);
  EXPECT_EQ(chash_last_check(), CHASH_CHECK_IO);
  EXPECT_EQ(chash_snapshot_load("/", nullptr, &snapshot), CHASH_E_IO);
  EXPECT_EQ(chash_last_check(), CHASH_CHECK_NOT_REGULAR);
  chash_builder* builder = nullptr;
  EXPECT_EQ(chash_builder_new(99, 0, &builder), CHASH_E_BAD_ARGUMENT);
  EXPECT_EQ(chash_last_check(), CHASH_CHECK_NONE);
}

}  // namespace
}  // namespace chash

namespace chash {
namespace {

// ---- The other programs' flavors from C -------------------------------------------

struct CFlavorCase {
  const char* title;
  uint32_t flavor;
  chash_ring_options c;
  RingOptions cc;  // the same options in C++: the oracle's
};

std::vector<CFlavorCase> CFlavorCases() {
  const auto with = [](auto&& set) {
    chash_ring_options o{};
    o.size = sizeof o;
    set(o);
    return o;
  };
  return {
      {"haproxy djb2 no avalanche", CHASH_FLAVOR_HAPROXY,
       with([](chash_ring_options& o) {
         o.haproxy_hash = CHASH_HAPROXY_HASH_DJB2;
         o.haproxy_avalanche = 2;
       }),
       {.flavor = Flavor::kHaproxy,
        .haproxy = {.hash_function = HaproxyHash::kDjb2, .avalanche = false}}},
      {"haproxy default", CHASH_FLAVOR_HAPROXY, with([](chash_ring_options&) {}),
       {.flavor = Flavor::kHaproxy}},
      {"twemproxy tag", CHASH_FLAVOR_KETAMA_MD5,
       with([](chash_ring_options& o) {
         o.ketama_variant = CHASH_KETAMA_TWEMPROXY;
         o.ketama_key_hash = 10;  // hsieh
         o.ketama_default_port = 6379;
         o.ketama_hash_tag[0] = '{';
         o.ketama_hash_tag[1] = '}';
       }),
       {.flavor = Flavor::kKetamaMd5,
        .ketama = {.variant = KetamaVariant::kTwemproxy,
                   .key_hash = KetamaKeyHash::kHsieh,
                   .default_port = 6379,
                   .hash_tag = {'{', '}'}}}},
      {"libmemcached", CHASH_FLAVOR_KETAMA_MD5, with([](chash_ring_options&) {}),
       {.flavor = Flavor::kKetamaMd5}},
      {"varnish 9", CHASH_FLAVOR_VARNISH_SHARD,
       with([](chash_ring_options& o) { o.varnish_replicas = 9; }),
       {.flavor = Flavor::kVarnishShard, .varnish = {.replicas = 9}}},
      {"envoy ring murmur", CHASH_FLAVOR_ENVOY_RING,
       with([](chash_ring_options& o) {
         o.envoy_hash = 1;
         o.envoy_minimum_ring_size = 100;
         o.envoy_maximum_ring_size = 300;
       }),
       {.flavor = Flavor::kEnvoyRing,
        .envoy_ring = {.minimum_ring_size = 100,
                       .maximum_ring_size = 300,
                       .hash_function = EnvoyHash::kMurmurHash2}}},
      {"maglev 307", CHASH_FLAVOR_ENVOY_MAGLEV,
       with([](chash_ring_options& o) { o.maglev_table_size = 307; }),
       {.flavor = Flavor::kEnvoyMaglev, .maglev = {.table_size = 307}}},
  };
}

// Each flavor built through the C API answers as the C++ RingBuilder's ring
// of the same options and nodes (that ring is held to the programs by the
// golden and differential tests): keys, key hashes, 64-bit hashes, retries;
// and so does its 1.4 snapshot loaded through the C API.
TEST(CApiFlavors, EveryFlavorAnswersAsTheCppRing) {
  for (const CFlavorCase& c : CFlavorCases()) {
    SCOPED_TRACE(c.title);
    chash_builder* builder = nullptr;
    ASSERT_EQ(chash_builder_new_with_options(c.flavor, &c.c, &builder), CHASH_OK)
        << chash_last_error();
    RingBuilder cc(c.cc);
    for (uint32_t i = 0; i < 20; ++i) {
      const std::string address = "10.5.0." + std::to_string(i + 1) + ":11211";
      const uint32_t weight = i % 6 == 2 ? 0 : 1 + i % 3;
      const uint32_t server_id = c.flavor == CHASH_FLAVOR_HAPROXY && i % 4 == 0 ? 50 + i : 0;
      const bool named = c.c.ketama_variant == CHASH_KETAMA_TWEMPROXY && i % 2 == 1;
      const std::string name = "mc-" + std::to_string(i);
      ASSERT_EQ(chash_builder_add_node(builder, address.data(), address.size(), weight, server_id,
                                       named ? name.data() : nullptr, named ? name.size() : 0),
                CHASH_OK)
          << chash_builder_error(builder);
      ASSERT_TRUE(cc.Add(address, weight, {.server_id = server_id,
                                           .name = named ? std::string_view(name) : ""})
                      .ok());
    }
    chash_ring* built = nullptr;
    ASSERT_EQ(chash_builder_build(builder, &built), CHASH_OK) << chash_last_error();
    const RingHandle ring(built);
    const Ring want = std::move(cc).Build().value();
    EXPECT_EQ(chash_ring_flavor(ring.get()), c.flavor);
    EXPECT_EQ(chash_ring_key_hash_bits(ring.get()), want.key_hash_bits());
    EXPECT_EQ(chash_ring_num_points(ring.get()), want.num_points());

    Result<std::string> bytes = SerializeSnapshot(want, {});
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    chash_snapshot* loaded = nullptr;
    ASSERT_EQ(chash_snapshot_load_bytes(bytes.value().data(), bytes.value().size(), nullptr,
                                        &loaded),
              CHASH_OK)
        << chash_last_error();
    const testing::SnapshotHandle snapshot(loaded);
    chash_ring* from_file = nullptr;
    ASSERT_EQ(chash_snapshot_ring(snapshot.get(), &from_file), CHASH_OK);
    const RingHandle file_ring(from_file);

    std::mt19937_64 rng(3);
    for (int i = 0; i < 3000; ++i) {
      const std::string key = "/k/" + std::to_string(rng() % 100000) + (i % 4 ? "" : "{t}");
      const uint64_t hash = want.KeyHash(key);
      for (const chash_ring* r : {ring.get(), file_ring.get()}) {
        ASSERT_EQ(chash_ring_key_hash(r, key.data(), key.size()), hash) << key;
        ASSERT_EQ(chash_ring_find(r, key.data(), key.size()), want.FindNode(key)) << key;
        ASSERT_EQ(chash_ring_find_hash64(r, hash), want.FindNodeByHash64(hash)) << key;
        const uint64_t random = want.key_hash_bits() == 64 ? rng() : rng() >> 32;
        ASSERT_EQ(chash_ring_find_hash64(r, random), want.FindNodeByHash64(random));
        for (uint32_t attempt = 0; attempt < 3; ++attempt) {
          ASSERT_EQ(chash_ring_find_attempt(r, hash, attempt),
                    want.FindNodeForAttempt(hash, attempt));
        }
      }
    }
  }
}

TEST(CApiFlavors, MaskedLookupsSayWhenTheRingMasksInexactly) {
  // Weighted libmemcached ketama and Envoy's rings are rebuilt by their
  // programs when a node is out: masked lookups answer CHASH_MASK_REFUSED,
  // never a node id. HAProxy skips a down server on its tree: exact.
  for (const uint32_t flavor : {CHASH_FLAVOR_KETAMA_MD5, CHASH_FLAVOR_ENVOY_RING,
                                CHASH_FLAVOR_ENVOY_MAGLEV, CHASH_FLAVOR_HAPROXY}) {
    chash_builder* builder = nullptr;
    ASSERT_EQ(chash_builder_new_with_options(flavor, nullptr, &builder), CHASH_OK) << flavor;
    for (const char* address : {"10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211"}) {
      ASSERT_EQ(chash_builder_add(builder, address, std::strlen(address), 2), CHASH_OK);
    }
    chash_ring* ring = nullptr;
    ASSERT_EQ(chash_builder_build(builder, &ring), CHASH_OK);  // frees the builder
    chash_node_mask* mask = nullptr;
    ASSERT_EQ(chash_node_mask_new(3, 1, &mask), CHASH_OK);
    ASSERT_EQ(chash_node_mask_set(mask, 1, 0), CHASH_OK);
    const uint32_t answer = chash_ring_find_available(ring, mask, "key", 3);
    const uint64_t idle[3] = {0, 0, 0};
    const uint32_t bounded = chash_ring_find_under_capacity(ring, 7, idle, 3, 10, mask);
    uint32_t one_call = 0;
    const int one_call_rc = chash_ring_find_bounded_load(ring, 7, idle, 3, 1.25, mask, &one_call);
    if (flavor == CHASH_FLAVOR_HAPROXY) {
      EXPECT_EQ(chash_ring_masks_exactly(ring), 1);
      EXPECT_TRUE(answer == 0 || answer == 2) << answer;
      EXPECT_TRUE(bounded == 0 || bounded == 2) << bounded;
      EXPECT_EQ(one_call_rc, CHASH_OK);
    } else {
      EXPECT_EQ(chash_ring_masks_exactly(ring), 0) << flavor;
      EXPECT_EQ(answer, CHASH_MASK_REFUSED) << flavor;
      EXPECT_EQ(bounded, CHASH_MASK_REFUSED) << flavor;  // as documented, never a node
      EXPECT_EQ(one_call_rc, CHASH_E_BAD_ARGUMENT) << flavor;
    }
    chash_node_mask_free(mask);
    chash_ring_free(ring);
  }
  EXPECT_EQ(chash_ring_masks_exactly(nullptr), 0);
}

TEST(CApiFlavors, WalksRefuseRingsOfSixtyFourBitKeyHashesWithAMessage) {
  // Envoy's rings hash keys to 64 bits: a walk from a 32-bit hash would
  // start nowhere, so it is refused with its reason, never an empty walk.
  for (const uint32_t flavor : {CHASH_FLAVOR_ENVOY_RING, CHASH_FLAVOR_ENVOY_MAGLEV}) {
    chash_builder* builder = nullptr;
    ASSERT_EQ(chash_builder_new_with_options(flavor, nullptr, &builder), CHASH_OK) << flavor;
    for (const char* address : {"10.0.0.1:80", "10.0.0.2:80"}) {
      ASSERT_EQ(chash_builder_add(builder, address, std::strlen(address), 1), CHASH_OK);
    }
    chash_ring* ring = nullptr;
    ASSERT_EQ(chash_builder_build(builder, &ring), CHASH_OK);
    ASSERT_EQ(chash_ring_key_hash_bits(ring), 64u);
    chash_cursor cursor;
    EXPECT_EQ(chash_ring_walk(ring, 7, &cursor), CHASH_E_BAD_ARGUMENT) << flavor;
    EXPECT_NE(std::strstr(chash_last_error(), "chash_ring_find_attempt"), nullptr)
        << chash_last_error();
    EXPECT_EQ(chash_cursor_next(&cursor), CHASH_NO_NODE);
    alignas(8) unsigned char memory[512];
    ASSERT_LE(chash_walk_size(ring), sizeof(memory));
    chash_walk* walk = nullptr;
    EXPECT_EQ(chash_walk_start(memory, sizeof(memory), ring, nullptr, 7, &walk),
              CHASH_E_BAD_ARGUMENT)
        << flavor;
    EXPECT_EQ(walk, nullptr);
    EXPECT_NE(std::strstr(chash_last_error(), "envoy-"), nullptr) << chash_last_error();
    EXPECT_NE(chash_ring_find_attempt(ring, 7, 1), CHASH_NO_NODE);
    chash_ring_free(ring);
  }
}

TEST(CApiFlavors, BadOptionsAndNodeOptionsAreRefused) {
  chash_builder* builder = reinterpret_cast<chash_builder*>(1);
  chash_ring_options o{};
  o.size = sizeof o;
  o.haproxy_avalanche = 3;
  EXPECT_EQ(chash_builder_new_with_options(CHASH_FLAVOR_HAPROXY, &o, &builder),
            CHASH_E_BAD_ARGUMENT);
  EXPECT_EQ(builder, nullptr);
  o.haproxy_avalanche = 0;
  o.haproxy_hash = 4;
  EXPECT_EQ(chash_builder_new_with_options(CHASH_FLAVOR_HAPROXY, &o, &builder),
            CHASH_E_BAD_ARGUMENT);
  o.haproxy_hash = 0;
  o.varnish_replicas = 5;  // another flavor's option
  EXPECT_EQ(chash_builder_new_with_options(CHASH_FLAVOR_HAPROXY, &o, &builder),
            CHASH_E_BAD_ARGUMENT);
  EXPECT_NE(std::string(chash_last_error()).find("varnish"), std::string::npos)
      << chash_last_error();
  o.varnish_replicas = 0;
  o.maglev_table_size = 308;  // not a prime
  EXPECT_EQ(chash_builder_new_with_options(CHASH_FLAVOR_ENVOY_MAGLEV, &o, &builder),
            CHASH_E_BAD_ARGUMENT);
  o.maglev_table_size = 0;
  o.reserved0[1] = 1;
  EXPECT_EQ(chash_builder_new_with_options(CHASH_FLAVOR_KETAMA_MD5, &o, &builder),
            CHASH_E_BAD_ARGUMENT);
  o.reserved0[1] = 0;
  o.size = 4;
  EXPECT_EQ(chash_builder_new_with_options(CHASH_FLAVOR_KETAMA_MD5, &o, &builder),
            CHASH_E_BAD_ARGUMENT);
  EXPECT_EQ(chash_builder_new_with_options(chash::testing::FirstUnknownFlavor(), nullptr, &builder),
            CHASH_E_BAD_ARGUMENT);
  EXPECT_EQ(chash_builder_new_with_options(CHASH_FLAVOR_NGINX, nullptr, nullptr),
            CHASH_E_NULL_ARGUMENT);

  // NULL options: every default.
  ASSERT_EQ(chash_builder_new_with_options(CHASH_FLAVOR_NGINX, nullptr, &builder), CHASH_OK);
  EXPECT_EQ(chash_builder_add_node(builder, "10.0.0.1:80", 11, 1, 7, nullptr, 0),
            CHASH_E_BAD_ARGUMENT);  // a server id on an nginx ring
  EXPECT_EQ(chash_builder_add_node(builder, "10.0.0.1:80", 11, 1, 0, nullptr, 3),
            CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_builder_num_nodes(builder), 0u);
  chash_builder_free(builder);
  ASSERT_EQ(chash_builder_new(CHASH_FLAVOR_HAPROXY, 0, &builder), CHASH_OK);
  EXPECT_EQ(chash_builder_add_node(builder, "a", 1, 1, 3, nullptr, 0), CHASH_OK);
  EXPECT_EQ(chash_builder_add_node(builder, "b", 1, 1, 3, nullptr, 0), CHASH_E_DUPLICATE_NODE);
  EXPECT_EQ(chash_builder_add_node(builder, "c", 1, 1, 0, "name", 4), CHASH_E_BAD_ARGUMENT);
  chash_builder_free(builder);
  EXPECT_EQ(chash_ring_key_hash(nullptr, "a", 1), 0u);
  EXPECT_EQ(chash_ring_find_hash64(nullptr, 1), CHASH_NO_NODE);
  EXPECT_EQ(chash_ring_find_attempt(nullptr, 1, 1), CHASH_NO_NODE);
  EXPECT_EQ(chash_ring_key_hash_bits(nullptr), 0u);
}

// What a ring hashes for a node given with fields is the library's rule, the
// same on every surface: the address answered (chash_ring_node_address) is
// the text hashed, worked out here from Envoy's and Varnish's documented
// rules, not from the code under test.
TEST(CApiFlavors, NodeFieldsChooseTheTextTheProgramHashes) {
  struct Case {
    uint32_t flavor;
    const char* address;
    chash_node_fields fields;
    const char* hashed;  // what Ring's address then answers; nullptr: refused
    int code;
  };
  const auto fields = [](const char* name, const char* hostname, const char* hash_key,
                         uint32_t hash_hostname) {
    chash_node_fields f{};
    f.size = sizeof f;
    f.name = name;
    f.name_len = name == nullptr ? 0 : std::strlen(name);
    f.hostname = hostname;
    f.hostname_len = hostname == nullptr ? 0 : std::strlen(hostname);
    f.hash_key = hash_key;
    f.hash_key_len = hash_key == nullptr ? 0 : std::strlen(hash_key);
    f.hash_hostname = hash_hostname;
    return f;
  };
  const Case cases[] = {
      // Varnish hashes the backend's ident.
      {CHASH_FLAVOR_VARNISH_SHARD, "10.0.0.1:80", fields("be1", nullptr, nullptr, 0), "be1",
       CHASH_OK},
      {CHASH_FLAVOR_VARNISH_SHARD, "10.0.0.1:80", fields(nullptr, nullptr, nullptr, 0),
       "10.0.0.1:80", CHASH_OK},
      // Envoy: hash_key over hostname over the address as Envoy prints it
      // (inet_ntop's "::" for the longest zero run, lower case).
      {CHASH_FLAVOR_ENVOY_RING, "[2001:DB8:0:0:0:0:0:1]:80", fields(nullptr, nullptr, nullptr, 0),
       "[2001:db8::1]:80", CHASH_OK},
      {CHASH_FLAVOR_ENVOY_MAGLEV, "10.0.0.1:80", fields(nullptr, "web-1", nullptr, 0),
       "10.0.0.1:80", CHASH_OK},
      {CHASH_FLAVOR_ENVOY_MAGLEV, "10.0.0.1:80", fields(nullptr, "web-1", nullptr, 1), "web-1",
       CHASH_OK},
      {CHASH_FLAVOR_ENVOY_RING, "10.0.0.1:80", fields(nullptr, "web-1", "key-1", 1), "key-1",
       CHASH_OK},
      {CHASH_FLAVOR_ENVOY_RING, "10.0.0.1:80", fields(nullptr, nullptr, nullptr, 1), nullptr,
       CHASH_E_BAD_ARGUMENT},
      // A field the flavor does not read is refused, not ignored.
      {CHASH_FLAVOR_HAPROXY, "10.0.0.1:80", fields(nullptr, "web-1", nullptr, 0), nullptr,
       CHASH_E_BAD_ARGUMENT},
      {CHASH_FLAVOR_NGINX, "10.0.0.1:80", fields(nullptr, nullptr, "k", 0), nullptr,
       CHASH_E_BAD_ARGUMENT},
      {CHASH_FLAVOR_ENVOY_RING, "10.0.0.1:80", fields("n", nullptr, nullptr, 0), nullptr,
       CHASH_E_BAD_ARGUMENT},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(chash_flavor_name(c.flavor)) + " " + c.address);
    chash_builder* builder = nullptr;
    ASSERT_EQ(chash_builder_new_with_options(c.flavor, nullptr, &builder), CHASH_OK);
    ASSERT_EQ(chash_builder_add_fields(builder, c.address, std::strlen(c.address), 1, &c.fields),
              c.code)
        << chash_builder_error(builder);
    if (c.hashed == nullptr) {
      EXPECT_NE(std::string(chash_builder_error(builder)), "");
      chash_builder_free(builder);
      continue;
    }
    chash_ring* ring = nullptr;
    ASSERT_EQ(chash_builder_build(builder, &ring), CHASH_OK);
    size_t len = 0;
    const char* answered = chash_ring_node_address(ring, 0, &len);
    ASSERT_NE(answered, nullptr);
    EXPECT_EQ(std::string(answered, len), c.hashed);
    chash_ring_free(ring);
  }
  // A text pointer NULL with a length, unknown bits and an unknown tail.
  chash_builder* builder = nullptr;
  ASSERT_EQ(chash_builder_new_with_options(CHASH_FLAVOR_ENVOY_RING, nullptr, &builder), CHASH_OK);
  chash_node_fields bad = fields(nullptr, nullptr, nullptr, 0);
  bad.hostname_len = 3;
  EXPECT_EQ(chash_builder_add_fields(builder, "a", 1, 1, &bad), CHASH_E_NULL_ARGUMENT);
  bad = fields(nullptr, nullptr, nullptr, 2);
  EXPECT_EQ(chash_builder_add_fields(builder, "a", 1, 1, &bad), CHASH_E_BAD_ARGUMENT);
  bad = fields(nullptr, nullptr, nullptr, 0);
  bad.has_real_weight = 2;
  EXPECT_EQ(chash_builder_add_fields(builder, "a", 1, 1, &bad), CHASH_E_BAD_ARGUMENT);
  bad.has_real_weight = 1;  // Envoy's rings have no REAL weights
  EXPECT_EQ(chash_builder_add_fields(builder, "a", 1, 0, &bad), CHASH_E_BAD_ARGUMENT);
  EXPECT_EQ(chash_builder_add_fields(builder, "a", 1, 1, nullptr), CHASH_OK);
  EXPECT_EQ(chash_builder_num_nodes(builder), 1u);
  chash_builder_free(builder);
}

// Varnish's REAL weights: a backend gets trunc(replicas x max(w, 1)) points
// (vmod_directors), integer weights too once a ring has a real one, and
// the ring is the one of replicas 1 with those counts as weights. The
// counts below are worked out by hand for replicas 67.
TEST(CApiFlavors, RealWeightsCountPointsAsVarnishDoes) {
  const auto real = [](double weight) {
    chash_node_fields f{};
    f.size = sizeof f;
    f.has_real_weight = 1;
    f.real_weight = weight;
    return f;
  };
  chash_builder* builder = nullptr;
  ASSERT_EQ(chash_builder_new_with_options(CHASH_FLAVOR_VARNISH_SHARD, nullptr, &builder),
            CHASH_OK);
  // An integer weight first: counted again when the first real one comes.
  ASSERT_EQ(chash_builder_add(builder, "be0", 3, 3), CHASH_OK);
  chash_node_fields f = real(2.5);
  ASSERT_EQ(chash_builder_add_fields(builder, "be1", 3, 0, &f), CHASH_OK);
  f = real(0.5);
  ASSERT_EQ(chash_builder_add_fields(builder, "be2", 3, 0, &f), CHASH_OK);
  ASSERT_EQ(chash_builder_add(builder, "be3", 3, 0), CHASH_OK);  // Varnish drains none
  f = real(-1);
  EXPECT_EQ(chash_builder_add_fields(builder, "be4", 3, 0, &f), CHASH_E_BAD_ARGUMENT);
  f = real(std::nan(""));
  EXPECT_EQ(chash_builder_add_fields(builder, "be4", 3, 0, &f), CHASH_E_BAD_ARGUMENT);
  f = real(2.0);
  EXPECT_EQ(chash_builder_add_fields(builder, "be4", 3, 2, &f), CHASH_E_BAD_ARGUMENT);
  f = real(1e12);
  EXPECT_EQ(chash_builder_add_fields(builder, "be4", 3, 0, &f), CHASH_E_TOO_MANY_POINTS);
  chash_ring* ring = nullptr;
  ASSERT_EQ(chash_builder_build(builder, &ring), CHASH_OK);

  chash_ring_options one{};
  one.size = sizeof one;
  one.varnish_replicas = 1;
  ASSERT_EQ(chash_builder_new_with_options(CHASH_FLAVOR_VARNISH_SHARD, &one, &builder), CHASH_OK);
  const uint32_t counts[] = {3 * 67, 167, 67, 67};  // 67 x 2.5 = 167.5
  for (uint32_t i = 0; i < 4; ++i) {
    const std::string name = "be" + std::to_string(i);
    ASSERT_EQ(chash_builder_add(builder, name.data(), name.size(), counts[i]), CHASH_OK);
  }
  chash_ring* expected = nullptr;
  ASSERT_EQ(chash_builder_build(builder, &expected), CHASH_OK);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(chash_ring_node_weight(ring, i), counts[i]) << i;
  }
  uint8_t got[CHASH_FINGERPRINT_SIZE], want[CHASH_FINGERPRINT_SIZE];
  ASSERT_EQ(chash_ring_fingerprint(ring, got), CHASH_OK);
  ASSERT_EQ(chash_ring_fingerprint(expected, want), CHASH_OK);
  EXPECT_EQ(std::memcmp(got, want, sizeof got), 0);
  chash_ring_free(ring);
  chash_ring_free(expected);

  // Another flavor has no REAL weights.
  ASSERT_EQ(chash_builder_new_with_options(CHASH_FLAVOR_HAPROXY, nullptr, &builder), CHASH_OK);
  f = real(1.5);
  EXPECT_EQ(chash_builder_add_fields(builder, "10.0.0.1:80", 11, 0, &f), CHASH_E_BAD_ARGUMENT);
  EXPECT_NE(std::string(chash_builder_error(builder)).find("varnish-shard"), std::string::npos)
      << chash_builder_error(builder);
  chash_builder_free(builder);
}

}  // namespace
}  // namespace chash
