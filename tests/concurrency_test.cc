// Lookups from many threads while other threads change what they read:
// rings swapped through std::shared_ptr's atomic functions, AvailabilityMasks
// published, a RingMigration's rollout and scope moved, the SIMD target
// forced. Labelled `concurrency`: tools/dev/test-tsan runs it under
// ThreadSanitizer, which fails the run on any data race; here every answer
// is also checked against the answers computed before the threads start.
// Every loop is bounded by a count (no timing), and each writer keeps
// writing until the readers are done, so the two overlap.
#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace chash {
namespace {

constexpr int kReaders = 3;

size_t Rounds() { return testing::Scaled(300, 20); }

std::shared_ptr<const Ring> BuildShared(Flavor flavor, uint32_t multiple, uint32_t nodes,
                                        uint32_t first_octet = 1) {
  return std::make_shared<const Ring>(testing::BuildNumbered(
      {.flavor = flavor, .point_multiple = multiple},
      {"10." + std::to_string(first_octet) + ".", ":80", [](uint32_t i) { return 1 + i % 3; }},
      nodes));
}

std::vector<std::string> Keys(size_t count) {
  std::vector<std::string> keys;
  for (size_t i = 0; i < count; ++i) keys.push_back("/object/" + std::to_string(i * 7919));
  return keys;
}

std::vector<std::string_view> Views(const std::vector<std::string>& keys) {
  return {keys.begin(), keys.end()};
}

std::vector<uint32_t> Answers(const Ring& ring, const std::vector<std::string>& keys) {
  std::vector<uint32_t> out(keys.size());
  const std::vector<std::string_view> views = Views(keys);
  EXPECT_EQ(ring.FindNodes(views, out), keys.size());
  return out;
}

// Runs `readers` reader threads and one writer; the writer loops until every
// reader has finished (at most `max_writes` times, at least once). Returns
// the writes made. The readers start after the writer's first write: on a
// loaded machine the readers could otherwise finish before the writer is
// first scheduled, and test nothing swapped (CI saw it once, under ASan).
// The writer's later writes race with the readers.
template <typename Reader, typename Writer>
size_t RunReadersAndWriter(Reader reader, Writer writer, size_t max_writes = 1000000) {
  std::atomic<int> running{kReaders};
  std::atomic<size_t> writes{0};
  std::atomic<bool> first_write_done{false};
  std::thread writer_thread([&] {
    size_t i = 0;
    writer(i++);
    first_write_done.store(true, std::memory_order_release);
    while (running.load(std::memory_order_acquire) > 0 && i < max_writes) writer(i++);
    writes.store(i, std::memory_order_relaxed);
  });
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&, r] {
      while (!first_write_done.load(std::memory_order_acquire)) std::this_thread::yield();
      reader(r);
      running.fetch_sub(1, std::memory_order_acq_rel);
    });
  }
  for (std::thread& t : readers) t.join();
  writer_thread.join();
  return writes.load(std::memory_order_relaxed);
}

// A ring published through std::shared_ptr's atomic functions: a reader
// holds the ring it loaded for the whole batch, so each batch answers for
// exactly one ring. (std::atomic<std::shared_ptr> works as well, but
// libstdc++ 12 locks it with a bit of its reference-count word, a lock
// ThreadSanitizer cannot see: it reports the pointer's accesses as a race.
// The C++11 functions lock a mutex, which it sees. They are deprecated in
// C++20, hence the pragma.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST(ConcurrencyTest, RingsSwappedWhileReadersLookUp) {
  const std::shared_ptr<const Ring> rings[2] = {BuildShared(Flavor::kPingoraV1, 160, 50),
                                                BuildShared(Flavor::kPingoraV2, 16, 40, 2)};
  const std::vector<std::string> keys = Keys(256);
  const std::vector<std::string_view> views = Views(keys);
  const std::vector<uint32_t> expected[2] = {Answers(*rings[0], keys), Answers(*rings[1], keys)};
  std::shared_ptr<const Ring> published = rings[0];
  std::atomic<size_t> mismatches{0};
  const size_t writes = RunReadersAndWriter(
      [&](int reader) {
        std::vector<uint32_t> out(keys.size());
        for (size_t round = 0; round < Rounds(); ++round) {
          const std::shared_ptr<const Ring> ring = std::atomic_load(&published);
          const int which = ring == rings[0] ? 0 : 1;
          if (round % 2 == 0) {
            ring->FindNodes(views, out);
            if (out != expected[which]) mismatches.fetch_add(1);
          } else {
            const size_t i = (round * 31 + static_cast<size_t>(reader)) % keys.size();
            if (ring->FindNode(keys[i]) != expected[which][i]) mismatches.fetch_add(1);
            // The failover walk starts at the answer; the distinct walk's
            // first node is it.
            if (ring->Walk(keys[i]).node() != expected[which][i]) mismatches.fetch_add(1);
            if (ring->WalkDistinct(keys[i]).Next() != expected[which][i]) mismatches.fetch_add(1);
          }
        }
      },
      [&](size_t i) { std::atomic_store(&published, rings[(i + 1) % 2]); });
  EXPECT_EQ(mismatches.load(), 0u);
  EXPECT_GT(writes, 0u);
}
#pragma GCC diagnostic pop

// One health checker publishes masks while readers look up through them: each
// answer is the answer under one of the published masks.
TEST(ConcurrencyTest, AvailabilityMasksPublishedWhileReadersLookUp) {
  const std::shared_ptr<const Ring> ring = BuildShared(Flavor::kNginx, 160, 64);
  const uint32_t nodes = ring->num_nodes();
  NodeMask masks[2] = {NodeMask(nodes), NodeMask(nodes)};
  for (uint32_t node = 0; node < nodes; node += 2) ASSERT_TRUE(masks[1].Set(node, false));
  const std::vector<std::string> keys = Keys(200);
  const std::vector<std::string_view> views = Views(keys);
  std::vector<uint32_t> expected[2];
  for (int m = 0; m < 2; ++m) {
    expected[m].resize(keys.size());
    FindAvailableNodes(*ring, masks[m], views, expected[m]);
  }
  AvailabilityMask health(nodes);
  std::atomic<size_t> mismatches{0};
  const size_t writes = RunReadersAndWriter(
      [&](int reader) {
        std::vector<uint32_t> out(keys.size());
        for (size_t round = 0; round < Rounds(); ++round) {
          if (round % 4 == 0) {
            health.FindNodes(*ring, views, out);
            for (size_t i = 0; i < keys.size(); ++i) {
              if (out[i] != expected[0][i] && out[i] != expected[1][i]) mismatches.fetch_add(1);
            }
          } else {
            const size_t i = (round * 13 + static_cast<size_t>(reader)) % keys.size();
            const uint32_t node = health.FindNode(*ring, keys[i]);
            if (node != expected[0][i] && node != expected[1][i]) mismatches.fetch_add(1);
          }
          if (round % 16 == 0) {
            uint64_t version = 0;
            const NodeMask seen = health.Snapshot(&version);
            if (!(seen == masks[0]) && !(seen == masks[1])) mismatches.fetch_add(1);
          }
        }
      },
      [&](size_t i) { ASSERT_TRUE(health.Publish(masks[(i + 1) % 2]).ok()); });
  EXPECT_EQ(mismatches.load(), 0u);
  EXPECT_EQ(health.version(), writes);
}

// The controls move while readers look up: each answer is its side's ring's
// answer, and counters add up to the lookups made.
TEST(ConcurrencyTest, MigrationControlsMovedWhileReadersLookUp) {
  const std::shared_ptr<const Ring> old_ring = BuildShared(Flavor::kPingoraV1, 160, 30);
  const std::shared_ptr<const Ring> new_ring = BuildShared(Flavor::kPingoraV2, 64, 30);
  Result<std::unique_ptr<RingMigration>> created = RingMigration::Create(old_ring, new_ring);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  RingMigration& migration = *created.value();
  const std::vector<std::string> keys = Keys(128);
  const std::vector<std::string_view> views = Views(keys);
  const std::vector<uint32_t> expected[2] = {Answers(*old_ring, keys), Answers(*new_ring, keys)};
  std::atomic<size_t> mismatches{0};
  std::atomic<uint64_t> lookups{0};
  RunReadersAndWriter(
      [&](int reader) {
        std::vector<uint32_t> nodes(keys.size());
        std::vector<RingSide> sides(keys.size());
        for (size_t round = 0; round < Rounds(); ++round) {
          if (round % 4 == 0) {
            migration.FindNodes(views, nodes, sides);
            lookups.fetch_add(keys.size());
            for (size_t i = 0; i < keys.size(); ++i) {
              if (nodes[i] != expected[static_cast<int>(sides[i])][i]) mismatches.fetch_add(1);
            }
          } else {
            const size_t i = (round * 17 + static_cast<size_t>(reader)) % keys.size();
            const MigrationAnswer answer = migration.Find(keys[i]);
            lookups.fetch_add(1);
            if (answer.node != expected[static_cast<int>(answer.side)][i]) {
              mismatches.fetch_add(1);
            }
          }
        }
      },
      [&](size_t i) {
        if (i % 3 == 0) migration.SetInScope(i % 2 == 0);
        ASSERT_TRUE(migration.SetRollout(static_cast<double>(i % 101) / 100).ok());
      });
  EXPECT_EQ(mismatches.load(), 0u);
  const RingMigration::Counters counters = migration.counters();
  EXPECT_EQ(counters.old_ring + counters.new_ring, lookups.load());
}

// ForceTarget while lookups run: every target gives the same answers, and a
// batch runs on one target.
TEST(ConcurrencyTest, TargetsForcedWhileReadersLookUp) {
  const std::shared_ptr<const Ring> ring = BuildShared(Flavor::kPingoraV2, 32, 200);
  const std::vector<std::string> keys = Keys(300);
  const std::vector<std::string_view> views = Views(keys);
  const std::vector<uint32_t> expected = Answers(*ring, keys);
  std::vector<std::string> targets = SupportedTargetNames();
  targets.push_back("best");
  std::atomic<size_t> mismatches{0};
  RunReadersAndWriter(
      [&](int reader) {
        std::vector<uint32_t> out(keys.size());
        for (size_t round = 0; round < Rounds(); ++round) {
          if (round % 2 == 0) {
            ring->FindNodes(views, out);
            if (out != expected) mismatches.fetch_add(1);
          } else {
            const size_t i = (round * 7 + static_cast<size_t>(reader)) % keys.size();
            if (ring->FindNode(keys[i]) != expected[i]) mismatches.fetch_add(1);
            if (ring->Walk(keys[i]).node() != expected[i]) mismatches.fetch_add(1);
          }
          if (ActiveTargetName().empty()) mismatches.fetch_add(1);
        }
      },
      [&](size_t i) {
        ASSERT_TRUE(ForceTarget(targets[i % targets.size()]).ok());
        if (i % 8 == 0) {
          ASSERT_EQ(SupportedTargetNames().size() + 1, targets.size());
        }
      });
  EXPECT_EQ(mismatches.load(), 0u);
  ASSERT_TRUE(ForceTarget("").ok());
}

}  // namespace
}  // namespace chash
