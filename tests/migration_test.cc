// Dual-ring migration: the key hash against independent vectors, monotone
// rollout and exact rollback, the scope switch, counters, the same-snapshot
// check, and independence of the ring choice from the ring hash.
#include <cmath>
#include <random>
#include <thread>

#include "test_util.h"

namespace chash {
namespace {

using testing::LoadServers;

std::shared_ptr<const Ring> Shared(const std::vector<ServerEntry>& servers,
                                   const RingOptions& options) {
  return std::make_shared<const Ring>(testing::MustBuild(servers, options));
}

// From tests/data/migration/expected_key_hashes.py (an independent
// implementation of the definition in migration.h).
TEST(MigrationKeyHashTest, IndependentVectors) {
  struct Vector {
    std::string_view key;
    uint64_t seed, hash;
    uint32_t bucket;
  };
  const Vector vectors[] = {
      {std::string_view("", 0), 0, 0xe220a8397b1dcdafu, 883310},
      {"a", 0, 0x3fca4813f226f4fbu, 249180},
      {"abcdefgh", 0, 0x4d249ff0c4ecea60u, 301340},
      {"abcdefghi", 0, 0xb5275f0302869317u, 707632},
      {"/some/url", 0, 0x4af0c4f39b2564bbu, 292736},
      {"/some/url", 42, 0xef08a9935e9b3f3eu, 933725},
      {std::string_view("\0", 1), 0, 0x94a0292e4c3e2ae7u, 580568},
      {std::string_view("\0\0\0\0\0\0\0\0", 8), 0, 0x1893de5c08a66ab6u, 96006},
  };
  for (const Vector& v : vectors) {
    EXPECT_EQ(MigrationKeyHash(v.key, v.seed), v.hash) << v.key.size() << " bytes";
    EXPECT_EQ(MigrationBucket(v.hash), v.bucket);
  }
  EXPECT_EQ(MigrationBucket(0), 0u);
  EXPECT_EQ(MigrationBucket(~uint64_t{0}), kRolloutScale - 1);
}

class MigrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::vector<ServerEntry> servers = LoadServers("pingora/servers_50.txt");
    old_ring_ = Shared(servers, {.flavor = Flavor::kPingoraV1});
    new_ring_ = Shared(servers, {.flavor = Flavor::kPingoraV2, .point_multiple = 16});
    std::mt19937 rng(11);
    for (size_t i = 0; i < testing::Scaled(100000, 20000); ++i) {
      keys_.push_back("/obj/" + std::to_string(rng()) + "/" + std::to_string(i));
    }
    Result<std::unique_ptr<RingMigration>> created = RingMigration::Create(old_ring_, new_ring_);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    migration_ = std::move(created).value();
  }

  std::vector<RingSide> Sides() const {
    std::vector<RingSide> sides;
    for (const std::string& key : keys_) sides.push_back(migration_->Choose(key));
    return sides;
  }

  std::shared_ptr<const Ring> old_ring_, new_ring_;
  std::vector<std::string> keys_;
  std::unique_ptr<RingMigration> migration_;
};

TEST_F(MigrationTest, StartsClosed) {
  EXPECT_FALSE(migration_->in_scope());
  EXPECT_EQ(migration_->rollout_ppm(), 0u);
  for (const RingSide side : Sides()) ASSERT_EQ(side, RingSide::kOld);
  EXPECT_TRUE(migration_->backends_match());
  EXPECT_EQ(migration_->fingerprint(RingSide::kOld), RingFingerprint(*old_ring_));
  EXPECT_EQ(migration_->fingerprint(RingSide::kNew), RingFingerprint(*new_ring_));
}

// Raising the rollout only moves keys old -> new; lowering it back returns
// exactly the same keys to the same nodes.
TEST_F(MigrationTest, MonotoneRolloutAndExactRollback) {
  migration_->SetInScope(true);
  const uint32_t steps[] = {0, 1, 10, 1000, 50000, 250000, 500000, 999999, 1000000};
  std::vector<std::vector<RingSide>> sides_at;
  std::vector<std::vector<uint32_t>> nodes_at;
  for (const uint32_t ppm : steps) {
    migration_->SetRolloutPpm(ppm);
    sides_at.push_back(Sides());
    std::vector<uint32_t> nodes;
    for (const std::string& key : keys_) nodes.push_back(migration_->Find(key).node);
    nodes_at.push_back(std::move(nodes));
    if (sides_at.size() >= 2) {
      const auto& before = sides_at[sides_at.size() - 2];
      const auto& after = sides_at.back();
      for (size_t i = 0; i < keys_.size(); ++i) {
        ASSERT_FALSE(before[i] == RingSide::kNew && after[i] == RingSide::kOld)
            << keys_[i] << " went back to the old ring when the rollout rose to " << ppm;
      }
    }
    // The share on the new ring is the rollout, within 5 sigma.
    const double p = ppm / 1e6;
    const double on_new =
        std::count(sides_at.back().begin(), sides_at.back().end(), RingSide::kNew) /
        static_cast<double>(keys_.size());
    EXPECT_NEAR(on_new, p, 5 * std::sqrt(p * (1 - p) / keys_.size()) + 1e-5) << ppm;
  }
  EXPECT_EQ(std::count(sides_at[0].begin(), sides_at[0].end(), RingSide::kNew), 0);
  EXPECT_EQ(std::count(sides_at.back().begin(), sides_at.back().end(), RingSide::kOld), 0);
  // Rollback, step by step, then a jump: the exact earlier routing.
  for (int s = static_cast<int>(std::size(steps)) - 1; s >= 0; --s) {
    migration_->SetRolloutPpm(steps[s]);
    ASSERT_EQ(Sides(), sides_at[s]) << "rollback to " << steps[s];
    for (size_t i = 0; i < keys_.size(); i += 97) {
      ASSERT_EQ(migration_->Find(keys_[i]).node, nodes_at[s][i]);
    }
  }
  migration_->SetRolloutPpm(999999);
  migration_->SetRolloutPpm(1000);
  EXPECT_EQ(Sides(), sides_at[3]);
}

// Scope out sends everything to the old ring whatever the rollout; back in
// restores the same split.
TEST_F(MigrationTest, ScopeSwitchIsIndependent) {
  migration_->SetInScope(true);
  ASSERT_TRUE(migration_->SetRollout(0.4).ok());
  EXPECT_EQ(migration_->rollout_ppm(), 400000u);
  const std::vector<RingSide> split = Sides();
  migration_->SetInScope(false);
  EXPECT_EQ(migration_->rollout_ppm(), 400000u);  // the fraction is kept
  for (const RingSide side : Sides()) ASSERT_EQ(side, RingSide::kOld);
  migration_->SetInScope(true);
  EXPECT_EQ(Sides(), split);
  migration_->SetRolloutPpm(5000000);  // clamped
  EXPECT_EQ(migration_->rollout_ppm(), kRolloutScale);
  EXPECT_TRUE(migration_->in_scope());
  EXPECT_EQ(migration_->SetRollout(1.5).code(), StatusCode::kBadArgument);
  EXPECT_EQ(migration_->SetRollout(std::nan("")).code(), StatusCode::kBadArgument);
  EXPECT_EQ(migration_->SetRollout(-0.1).code(), StatusCode::kBadArgument);
  EXPECT_EQ(migration_->rollout_ppm(), kRolloutScale);  // unchanged by errors
  ASSERT_TRUE(migration_->SetRollout(0.0000015).ok());
  EXPECT_EQ(migration_->rollout_ppm(), 1u);
}

TEST_F(MigrationTest, AnswersCountersAndBatch) {
  migration_->SetInScope(true);
  migration_->SetRolloutPpm(300000);
  uint64_t expect_old = 0, expect_new = 0;
  for (size_t i = 0; i < 20000; ++i) {
    const MigrationAnswer answer = migration_->Find(keys_[i]);
    ASSERT_EQ(answer.side, migration_->Choose(keys_[i]));
    ASSERT_EQ(answer.node, migration_->ring(answer.side).FindNode(keys_[i]));
    (answer.side == RingSide::kNew ? expect_new : expect_old) += 1;
  }
  RingMigration::Counters counters = migration_->counters();
  EXPECT_EQ(counters.old_ring, expect_old);
  EXPECT_EQ(counters.new_ring, expect_new);
  // The batch form answers the same, chunk boundaries included.
  std::vector<std::string_view> views(keys_.begin(), keys_.begin() + 1000);
  std::vector<uint32_t> nodes(views.size());
  std::vector<RingSide> sides(views.size());
  migration_->FindNodes(views, nodes, sides);
  for (size_t i = 0; i < views.size(); ++i) {
    EXPECT_EQ(sides[i], migration_->Choose(views[i]));
    EXPECT_EQ(nodes[i], migration_->ring(sides[i]).FindNode(views[i]));
    (sides[i] == RingSide::kNew ? expect_new : expect_old) += 1;
  }
  counters = migration_->counters();
  EXPECT_EQ(counters.old_ring, expect_old);
  EXPECT_EQ(counters.new_ring, expect_new);
}

// The choice is independent of the ring hash: the keys that change backend
// at rollout f are f times the exact diff, and the new-ring share is the
// same in every CRC32 range.
TEST_F(MigrationTest, ChoiceIsIndependentOfTheRingHash) {
  const double moved = DiffRings(*old_ring_, *new_ring_).value().moved_fraction();
  migration_->SetInScope(true);
  migration_->SetRolloutPpm(300000);
  size_t changed = 0;
  size_t in_range[4] = {}, new_in_range[4] = {};
  for (const std::string& key : keys_) {
    const MigrationAnswer answer = migration_->Find(key);
    const uint32_t old_node = old_ring_->FindNode(key);
    if (answer.side == RingSide::kNew && answer.node != old_node) ++changed;
    const int range = static_cast<int>(Crc32(key) >> 30);
    ++in_range[range];
    if (answer.side == RingSide::kNew) ++new_in_range[range];
  }
  const double n = static_cast<double>(keys_.size());
  const double expected = 0.3 * moved;
  EXPECT_NEAR(changed / n, expected, 5 * std::sqrt(expected * (1 - expected) / n));
  for (int r = 0; r < 4; ++r) {
    const double share = static_cast<double>(new_in_range[r]) / in_range[r];
    EXPECT_NEAR(share, 0.3, 5 * std::sqrt(0.21 / in_range[r])) << "CRC32 quarter " << r;
  }
}

TEST(MigrationSnapshot, RefusesADifferentSnapshotUnlessAllowed) {
  const std::vector<ServerEntry> five = LoadServers("pingora/servers_5.txt");
  std::vector<ServerEntry> six = five;
  six.push_back({"10.9.9.9:80", 1, 0});
  std::vector<ServerEntry> reweighted = five;
  reweighted[1].weight = 4;
  const auto old_ring = Shared(five, {.flavor = Flavor::kPingoraV1});
  Result<std::unique_ptr<RingMigration>> refused =
      RingMigration::Create(old_ring, Shared(six, {.flavor = Flavor::kPingoraV1}));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kBadArgument);
  EXPECT_NE(refused.status().message().find("10.9.9.9:80 only in the new ring"), std::string::npos)
      << refused.status().message();
  refused = RingMigration::Create(old_ring, Shared(reweighted, {.flavor = Flavor::kPingoraV1}));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("216.85.15.39:6917 has weight 3 in the old ring, 4"),
            std::string::npos)
      << refused.status().message();
  Result<std::unique_ptr<RingMigration>> allowed = RingMigration::Create(
      old_ring, Shared(six, {.flavor = Flavor::kPingoraV1}), {.allow_backend_mismatch = true});
  ASSERT_TRUE(allowed.ok());
  EXPECT_FALSE(allowed.value()->backends_match());
  // Same snapshot, another flavor and multiple (the Cloudflare migration).
  EXPECT_TRUE(RingMigration::Create(
                  old_ring, Shared(five, {.flavor = Flavor::kPingoraV2, .point_multiple = 16}))
                  .ok());
  EXPECT_EQ(RingMigration::Create(nullptr, old_ring).status().code(), StatusCode::kBadArgument);
}

// Lookups from two threads while a third moves the controls: no lookup is
// lost from the counters, and every answer is one of the key's two answers.
TEST_F(MigrationTest, ConcurrentLookupsAndControls) {
  std::atomic<bool> stop{false};
  std::thread operator_thread([&] {
    for (uint32_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
      migration_->SetRolloutPpm((i * 7919) % (kRolloutScale + 1));
      migration_->SetInScope(i % 3 != 0);
    }
  });
  std::atomic<uint64_t> wrong{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 2; ++t) {
    workers.emplace_back([&, t] {
      for (size_t i = t; i < keys_.size(); i += 2) {
        const MigrationAnswer a = migration_->Find(keys_[i]);
        const uint32_t expected =
            (a.side == RingSide::kNew ? *new_ring_ : *old_ring_).FindNode(keys_[i]);
        if (a.node != expected) wrong.fetch_add(1);
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  stop = true;
  operator_thread.join();
  EXPECT_EQ(wrong.load(), 0u);
  const RingMigration::Counters counters = migration_->counters();
  EXPECT_EQ(counters.old_ring + counters.new_ring, keys_.size());
}

}  // namespace
}  // namespace chash
