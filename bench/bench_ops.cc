// What the operations features cost against a plain lookup, in one run on
// one machine (compare ratios, not absolute times across machines):
//
//   masked lookups (all up, 10% of nodes down; NodeMask and AvailabilityMask)
//   subset masks (50% / 10% of nodes) vs the subset's own dedicated ring
//   migrating lookups (RingMigration at 50%) vs a plain lookup
//   memory: one ring + R masks vs R dedicated subset rings (counters)
//
// Fleets (pingora-v2, multiple 16, weights 1..10 by node): 100 nodes
// (8,800 points, 53 KB: cache-resident) and 2,048 nodes x 10x weight
// (1.8M points, 11 MB: past L2). Their pingora-v1 rings (160 a weight unit,
// 10x the points) are the migration's old rings. Keys: 65,536 random 30-byte URLs; every
// lookup includes the key's CRC32, as a proxy's would.
//
// Each fixture checks its answers against the reference (the subset's own
// ring, or the chosen ring) before timing, and SkipWithError on a mismatch.
//
//   taskset -c 1 build/bench/bench_ops --benchmark_repetitions=5
//       --benchmark_enable_random_interleaving=true --benchmark_min_time=0.2
//       --benchmark_format=json > bench/results/$(tools/dev/lib/cpu-slug)/ops.json
//   bench/ops_ratios.py bench/results/$(tools/dev/lib/cpu-slug)/ops.json   (the quoted ratios)
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "chash/chash.h"
#include "chash/operators.h"

namespace chash {
namespace {

constexpr size_t kKeys = 1 << 16;
constexpr uint32_t kSubsetRings = 16;  // R, for the memory comparison

struct Fleet {
  std::vector<ServerEntry> servers;
  std::shared_ptr<const Ring> ring;     // pingora-v2, multiple 16
  std::shared_ptr<const Ring> v1_ring;  // pingora-v1 (160): the migration's old ring
  std::vector<std::string> key_storage;
  std::vector<std::string_view> keys;
};

std::vector<ServerEntry> MakeServers(uint32_t nodes, uint32_t weight_scale) {
  std::vector<ServerEntry> servers;
  for (uint32_t i = 0; i < nodes; ++i) {
    servers.push_back({"10." + std::to_string(i / 65536) + "." + std::to_string(i / 256 % 256) +
                           "." + std::to_string(i % 256) + ":443",
                       (1 + i % 10) * weight_scale, i + 1});
  }
  return servers;
}

Ring Build(const std::vector<ServerEntry>& servers) {
  Result<Ring> ring =
      BuildRingFromServers(servers, {.flavor = Flavor::kPingoraV2, .point_multiple = 16}, "bench");
  return ring.ok() ? std::move(ring).value() : Ring();
}

// Fleet 0: 100 nodes; fleet 1: 2,048 nodes with 10x the weights.
const Fleet& GetFleet(int index) {
  static std::map<int, Fleet> fleets;
  auto it = fleets.find(index);
  if (it != fleets.end()) return it->second;
  Fleet& fleet = fleets[index];
  fleet.servers = index == 0 ? MakeServers(100, 1) : MakeServers(2048, 10);
  fleet.ring = std::make_shared<const Ring>(Build(fleet.servers));
  Result<Ring> v1 = BuildRingFromServers(fleet.servers, {.flavor = Flavor::kPingoraV1}, "bench");
  fleet.v1_ring = std::make_shared<const Ring>(v1.ok() ? std::move(v1).value() : Ring());
  std::mt19937_64 rng(42);
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  for (size_t i = 0; i < kKeys; ++i) {
    std::string key = "/";
    for (int c = 0; c < 29; ++c) key += kAlphabet[rng() % 36];
    fleet.key_storage.push_back(std::move(key));
  }
  fleet.keys.assign(fleet.key_storage.begin(), fleet.key_storage.end());
  return fleet;
}

NodeMask RandomMask(uint32_t nodes, double up_fraction, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution up(up_fraction);
  NodeMask mask(nodes, false);
  for (uint32_t node = 0; node < nodes; ++node) mask.Set(node, up(rng));
  return mask;
}

// The subset's own ring: the available servers, in file order.
Ring SubsetRing(const Fleet& fleet, const NodeMask& mask) {
  std::vector<ServerEntry> subset;
  for (uint32_t id = 0; id < fleet.servers.size(); ++id) {
    if (mask.available(id)) subset.push_back(fleet.servers[id]);
  }
  return Build(subset);
}

// Masked answers must be the subset ring's (by address) on the first keys.
bool MaskedMatchesSubset(const Fleet& fleet, const NodeMask& mask, const Ring& subset) {
  for (size_t i = 0; i < 4096; ++i) {
    const uint32_t masked = FindAvailableNode(*fleet.ring, mask, fleet.keys[i]);
    const uint32_t own = subset.FindNode(fleet.keys[i]);
    if (masked == Ring::kNoNode || own == Ring::kNoNode ||
        fleet.ring->node(masked).address.written != subset.node(own).address.written) {
      return false;
    }
  }
  return true;
}

void Label(benchmark::State& state, const Fleet& fleet) {
  state.SetLabel(std::to_string(fleet.ring->num_nodes()) + " nodes, " +
                 std::to_string(fleet.ring->num_points()) + " points, " +
                 std::string(ActiveTargetName()));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

// Times lookup(key), one key an iteration, over the fleet's keys.
template <typename Lookup>
void TimeKeys(benchmark::State& state, const Fleet& fleet, Lookup lookup) {
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(lookup(fleet.keys[i++ & (kKeys - 1)]));
  Label(state, fleet);
}

// Times batch(keys), 1,024 keys an iteration, over the fleet's keys.
template <typename Batch>
void TimeKeyBatches(benchmark::State& state, const Fleet& fleet, Batch batch) {
  size_t at = 0;
  for (auto _ : state) {
    batch(std::span<const std::string_view>(fleet.keys.data() + at, 1024));
    at = (at + 1024) & (kKeys - 1);
  }
  Label(state, fleet);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 1024);
}

// ---- Plain ------------------------------------------------------------------------

// One key at a time on one of the fleet's rings, `ring`: the fleet of range(0).
void PlainLookups(benchmark::State& state, std::shared_ptr<const Ring> Fleet::*ring) {
  const Fleet& fleet = GetFleet(static_cast<int>(state.range(0)));
  const Ring& r = *(fleet.*ring);
  TimeKeys(state, fleet, [&r](std::string_view key) { return r.FindNode(key); });
}

void BM_Plain(benchmark::State& state) { PlainLookups(state, &Fleet::ring); }
BENCHMARK(BM_Plain)->Arg(0)->Arg(1);

void BM_PlainBatch(benchmark::State& state) {
  const Fleet& fleet = GetFleet(static_cast<int>(state.range(0)));
  std::vector<uint32_t> out(1024);
  TimeKeyBatches(state, fleet, [&](std::span<const std::string_view> keys) {
    fleet.ring->FindNodes(keys, out);
    benchmark::DoNotOptimize(out.data());
  });
}
BENCHMARK(BM_PlainBatch)->Arg(0)->Arg(1);

// ---- Masked (failover) -----------------------------------------------------------
// range(1): percent of nodes available (100 = all up, 90 = 10% down, then
// the subset sizes 50 and 10).

void BM_Masked(benchmark::State& state) {
  const Fleet& fleet = GetFleet(static_cast<int>(state.range(0)));
  const NodeMask mask =
      RandomMask(fleet.ring->num_nodes(), static_cast<double>(state.range(1)) / 100, 7);
  if (!MaskedMatchesSubset(fleet, mask, SubsetRing(fleet, mask))) {
    state.SkipWithError("masked answers differ from the subset ring");
    return;
  }
  TimeKeys(state, fleet,
           [&](std::string_view key) { return FindAvailableNode(*fleet.ring, mask, key); });
}
BENCHMARK(BM_Masked)->ArgsProduct({{0, 1}, {100, 90, 50, 10}});

void BM_MaskedBatch(benchmark::State& state) {
  const Fleet& fleet = GetFleet(static_cast<int>(state.range(0)));
  const NodeMask mask =
      RandomMask(fleet.ring->num_nodes(), static_cast<double>(state.range(1)) / 100, 7);
  std::vector<uint32_t> out(1024);
  TimeKeyBatches(state, fleet, [&](std::span<const std::string_view> keys) {
    FindAvailableNodes(*fleet.ring, mask, keys, out);
    benchmark::DoNotOptimize(out.data());
  });
}
BENCHMARK(BM_MaskedBatch)->ArgsProduct({{0, 1}, {100, 90, 50}});

// The mask published through AvailabilityMask (seqlocked double buffer).
void BM_AvailabilityMask(benchmark::State& state) {
  const Fleet& fleet = GetFleet(static_cast<int>(state.range(0)));
  const NodeMask mask =
      RandomMask(fleet.ring->num_nodes(), static_cast<double>(state.range(1)) / 100, 7);
  AvailabilityMask published(fleet.ring->num_nodes());
  if (!published.Publish(mask).ok()) {
    state.SkipWithError("publish failed");
    return;
  }
  for (size_t i = 0; i < 4096; ++i) {
    if (published.FindNode(*fleet.ring, fleet.keys[i]) !=
        FindAvailableNode(*fleet.ring, mask, fleet.keys[i])) {
      state.SkipWithError("published mask answers differ");
      return;
    }
  }
  TimeKeys(state, fleet,
           [&](std::string_view key) { return published.FindNode(*fleet.ring, key); });
}
BENCHMARK(BM_AvailabilityMask)->ArgsProduct({{0, 1}, {100, 90}});

// The subset's own ring, for the subset-mask comparison.
void BM_DedicatedSubsetRing(benchmark::State& state) {
  const Fleet& fleet = GetFleet(static_cast<int>(state.range(0)));
  const NodeMask mask =
      RandomMask(fleet.ring->num_nodes(), static_cast<double>(state.range(1)) / 100, 7);
  const Ring subset = SubsetRing(fleet, mask);
  if (!MaskedMatchesSubset(fleet, mask, subset)) {
    state.SkipWithError("masked answers differ from the subset ring");
    return;
  }
  TimeKeys(state, fleet, [&](std::string_view key) { return subset.FindNode(key); });
}
BENCHMARK(BM_DedicatedSubsetRing)->ArgsProduct({{0, 1}, {90, 50, 10}});

// Memory: one ring + R masks against R dedicated rings of random subsets
// of `range(1)` percent of the nodes. Counters only (one iteration).
void BM_SubsetMemory(benchmark::State& state) {
  const Fleet& fleet = GetFleet(static_cast<int>(state.range(0)));
  // What each ring holds per point: columns, search index, collision table.
  auto ring_bytes_of = [](const MemoryUsage& memory) {
    return static_cast<double>(memory.column_bytes + memory.index_bytes +
                               memory.collision_table_bytes);
  };
  const double ring_bytes = ring_bytes_of(fleet.ring->memory_usage());
  double subset_bytes = 0, mask_bytes = 0;
  for (uint32_t r = 0; r < kSubsetRings; ++r) {
    const NodeMask mask =
        RandomMask(fleet.ring->num_nodes(), static_cast<double>(state.range(1)) / 100, 100 + r);
    subset_bytes += ring_bytes_of(SubsetRing(fleet, mask).memory_usage());
    mask_bytes += static_cast<double>(mask.words().size_bytes());
  }
  for (auto _ : state) benchmark::DoNotOptimize(subset_bytes);
  state.counters["rings"] = kSubsetRings;
  state.counters["full_ring_bytes"] = ring_bytes;
  state.counters["subset_rings_bytes"] = subset_bytes;
  state.counters["one_ring_plus_masks_bytes"] = ring_bytes + mask_bytes;
  state.counters["saved_bytes"] = subset_bytes - (ring_bytes + mask_bytes);
  state.counters["saved_fraction"] = 1 - (ring_bytes + mask_bytes) / subset_bytes;
  state.SetLabel(std::to_string(kSubsetRings) + " subsets of " + std::to_string(state.range(1)) +
                 "% of " + std::to_string(fleet.ring->num_nodes()) + " nodes");
}
BENCHMARK(BM_SubsetMemory)->ArgsProduct({{0, 1}, {50, 10}})->Iterations(1);

// ---- Migration ----------------------------------------------------------------------
// BM_Migration: old ring = the fleet at pingora-v1 (160 a weight unit), new
// = its v2 m16 ring, the Cloudflare move; range(1): rollout in percent.
// BM_MigrationOverhead: both sides the same v2 ring, so that against
// BM_Plain the ratio is the selection cost alone (key hash, control load,
// counter increment).

std::unique_ptr<RingMigration> MakeMigration(std::shared_ptr<const Ring> old_ring,
                                             std::shared_ptr<const Ring> new_ring, int percent) {
  Result<std::unique_ptr<RingMigration>> migration =
      RingMigration::Create(std::move(old_ring), std::move(new_ring));
  if (!migration.ok()) return nullptr;
  migration.value()->SetInScope(true);
  migration.value()->SetRolloutPpm(static_cast<uint32_t>(percent) * 10000);
  return std::move(migration).value();
}

bool MigrationAnswersRight(const Fleet& fleet, const RingMigration& migration) {
  for (size_t i = 0; i < 4096; ++i) {
    const MigrationAnswer answer = migration.Find(fleet.keys[i]);
    if (answer.node != migration.ring(answer.side).FindNode(fleet.keys[i])) return false;
  }
  return true;
}

void RunMigration(benchmark::State& state, const Fleet& fleet,
                  const std::unique_ptr<RingMigration>& migration) {
  if (!migration || !MigrationAnswersRight(fleet, *migration)) {
    state.SkipWithError("migration setup or answers wrong");
    return;
  }
  TimeKeys(state, fleet, [&](std::string_view key) { return migration->Find(key); });
}

void BM_Migration(benchmark::State& state) {
  const Fleet& fleet = GetFleet(static_cast<int>(state.range(0)));
  RunMigration(state, fleet,
               MakeMigration(fleet.v1_ring, fleet.ring, static_cast<int>(state.range(1))));
}
BENCHMARK(BM_Migration)->ArgsProduct({{0, 1}, {0, 50, 100}});

void BM_MigrationOverhead(benchmark::State& state) {
  const Fleet& fleet = GetFleet(static_cast<int>(state.range(0)));
  RunMigration(state, fleet,
               MakeMigration(fleet.ring, fleet.ring, static_cast<int>(state.range(1))));
}
BENCHMARK(BM_MigrationOverhead)->ArgsProduct({{0, 1}, {0, 50}});

void BM_MigrationOverheadBatch(benchmark::State& state) {
  const Fleet& fleet = GetFleet(static_cast<int>(state.range(0)));
  const std::unique_ptr<RingMigration> migration =
      MakeMigration(fleet.ring, fleet.ring, static_cast<int>(state.range(1)));
  if (!migration || !MigrationAnswersRight(fleet, *migration)) {
    state.SkipWithError("migration setup or answers wrong");
    return;
  }
  std::vector<uint32_t> nodes(1024);
  std::vector<RingSide> sides(1024);
  TimeKeyBatches(state, fleet, [&](std::span<const std::string_view> keys) {
    migration->FindNodes(keys, nodes, sides);
    benchmark::DoNotOptimize(nodes.data());
  });
}
BENCHMARK(BM_MigrationOverheadBatch)->ArgsProduct({{0, 1}, {50}});

// The parts of the selection cost: the key hash alone, and the choice
// (hash + controls load, no counter, no lookup).
void BM_MigrationKeyHash(benchmark::State& state) {
  const Fleet& fleet = GetFleet(0);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(MigrationKeyHash(fleet.keys[i++ & (kKeys - 1)]));
  }
  state.SetLabel(std::to_string(fleet.keys[0].size()) + "-byte keys");
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_MigrationKeyHash);

void BM_MigrationChoose(benchmark::State& state) {
  const Fleet& fleet = GetFleet(0);
  const std::unique_ptr<RingMigration> migration = MakeMigration(fleet.ring, fleet.ring, 50);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(migration->Choose(fleet.keys[i++ & (kKeys - 1)]));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_MigrationChoose);

// The key's CRC32 alone (what every lookup pays before searching).
void BM_KeyCrc32(benchmark::State& state) {
  const Fleet& fleet = GetFleet(0);
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(Crc32(fleet.keys[i++ & (kKeys - 1)]));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_KeyCrc32);

// The old ring alone (pingora-v1 at 160): BM_Migration at 0% against it.
void BM_PlainOldRing(benchmark::State& state) { PlainLookups(state, &Fleet::v1_ring); }
BENCHMARK(BM_PlainOldRing)->Arg(0)->Arg(1);

// ---- Bounded load ---------------------------------------------------------------------
// Loads such that range(1) percent of the nodes are at capacity.

void BM_BoundedLoad(benchmark::State& state) {
  const Fleet& fleet = GetFleet(static_cast<int>(state.range(0)));
  const uint32_t nodes = fleet.ring->num_nodes();
  std::vector<uint64_t> loads(nodes, 100);
  std::mt19937_64 rng(3);
  for (uint64_t& load : loads) {
    if (static_cast<int64_t>(rng() % 100) < state.range(1)) load = 125;
  }
  const uint64_t capacity = 125;
  TimeKeys(state, fleet, [&](std::string_view key) {
    return FindNodeUnderCapacity(*fleet.ring, Crc32(key), loads, capacity);
  });
}
BENCHMARK(BM_BoundedLoad)->ArgsProduct({{0, 1}, {0, 20}});

}  // namespace
}  // namespace chash

BENCHMARK_MAIN();
