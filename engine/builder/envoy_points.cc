// Envoy's RING_HASH (ring_hash_lb.cc: 64-bit points of "host_i" by XXH64 or
// libstdc++'s std::hash, a ring scaled from the smallest normalized weight)
// and MAGLEV (maglev_lb.cc: a prime table filled by each host's permutation).
#include <algorithm>
#include <cmath>
#include <new>
#include <string>

#include "builder/columns_builder.h"
#include "builder/program_points.h"
#include "hwy/contrib/sort/vqsort.h"
#include "layout/aligned_array.h"
#include "ring/ring_state.h"
#include "simd/search.h"

namespace chash::internal {

std::vector<double> EnvoyNormalizedWeights(const std::vector<NodeInfo>& nodes) {
  std::vector<double> normalized(nodes.size(), 0.0);
  const uint64_t sum = program::TotalWeight(nodes);
  if (sum == 0) return normalized;
  for (size_t i = 0; i < nodes.size(); ++i) {
    normalized[i] = static_cast<double>(nodes[i].weight) * 1.0 / static_cast<double>(sum);
  }
  return normalized;
}

std::vector<uint64_t> EnvoyRingEntries(const EnvoyRingOptions& options,
                                       const std::vector<double>& normalized) {
  std::vector<uint64_t> entries(normalized.size(), 0);
  double min_normalized = 1.0;
  bool any = false;
  for (const double n : normalized) {
    if (n == 0) continue;
    min_normalized = std::min(min_normalized, n);
    any = true;
  }
  if (!any) return entries;
  const double scale =
      std::min(std::ceil(min_normalized * static_cast<double>(options.minimum_ring_size)) /
                   min_normalized,
               static_cast<double>(options.maximum_ring_size));
  double current = 0.0;
  double target = 0.0;
  for (size_t i = 0; i < normalized.size(); ++i) {
    if (normalized[i] == 0) continue;
    // Two statements, not one fused multiply-add: the rounding of Envoy's
    // x86-64 build (the engine is compiled with -ffp-contract=off).
    const double add = scale * normalized[i];
    target += add;
    uint64_t count = 0;
    while (current < target) {
      ++count;
      current += 1.0;
    }
    entries[i] = count;
  }
  return entries;
}

// Envoy's Maglev table (maglev_lb.cc, OriginalMaglevTable).
void MaglevFill(const std::vector<std::string_view>& keys, const std::vector<double>& normalized,
                std::span<uint16_t> table) {
  const uint64_t m = table.size();
  struct Entry {
    std::string_view key;
    uint32_t node;
    double weight;
    uint64_t offset, skip;
    double target = 0;
    uint64_t next = 0;
  };
  std::vector<Entry> entries;
  double max_normalized = 0.0;
  for (uint32_t i = 0; i < keys.size(); ++i) {
    if (normalized[i] == 0) continue;
    max_normalized = std::max(max_normalized, normalized[i]);
    entries.push_back({keys[i], i, normalized[i], XxHash64(keys[i].data(), keys[i].size(), 0) % m,
                       XxHash64(keys[i].data(), keys[i].size(), 1) % (m - 1) + 1});
  }
  if (entries.empty()) return;
  // Envoy sorts by (key, host pointer, weight); keys are distinct here
  // (kDuplicateNode), so the key alone orders them, byte by byte.
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.key < b.key; });
  std::vector<bool> taken(m, false);
  uint64_t filled = 0;
  for (uint32_t iteration = 1; filled < m; ++iteration) {
    for (size_t i = 0; i < entries.size() && filled < m; ++i) {
      Entry& entry = entries[i];
      if (static_cast<double>(iteration) * entry.weight < entry.target) continue;
      entry.target += max_normalized;
      uint64_t c = (entry.offset + entry.skip * entry.next) % m;
      while (taken[c]) {
        ++entry.next;
        c = (entry.offset + entry.skip * entry.next) % m;
      }
      table[c] = static_cast<uint16_t>(entry.node);
      taken[c] = true;
      ++entry.next;
      ++filled;
    }
  }
}

namespace program {

Status ValidateEnvoyRingOptions(const EnvoyRingOptions& ring) {
  if (ring.minimum_ring_size == 0) {
    return Bad(StatusCode::kBadArgument,
               "envoy minimum_ring_size must be at least 1 (Envoy took 0 and then chose no "
               "host for any request: envoyproxy/envoy#31724)");
  }
  if (ring.minimum_ring_size > kEnvoyMaxRingSize || ring.maximum_ring_size > kEnvoyMaxRingSize) {
    return Bad(StatusCode::kBadArgument,
               "envoy ring sizes are at most 8388608 (minimum_ring_size " +
                   std::to_string(ring.minimum_ring_size) + ", maximum_ring_size " +
                   std::to_string(ring.maximum_ring_size) + ")");
  }
  if (ring.minimum_ring_size > ring.maximum_ring_size) {
    return Bad(StatusCode::kBadArgument,
               "envoy ring hash: minimum_ring_size (" + std::to_string(ring.minimum_ring_size) +
                   ") > maximum_ring_size (" + std::to_string(ring.maximum_ring_size) + ")");
  }
  if (static_cast<uint8_t>(ring.hash_function) > 1) {
    return Bad(StatusCode::kBadArgument, "envoy hash function is neither XX_HASH nor MURMUR_HASH_2");
  }
  return Status();
}

Status ValidateMaglevOptions(const MaglevOptions& maglev) {
  if (maglev.table_size < 2 || maglev.table_size > kMaglevMaxTableSize ||
      !IsPrime(maglev.table_size)) {
    return Bad(StatusCode::kBadArgument,
               "the maglev table size must be a prime 2..5000011 (Envoy's bound; default "
               "65537), got " +
                   std::to_string(maglev.table_size));
  }
  return Status();
}

// Envoy's ring: 64-bit points, sorted with ties in host order, every entry kept.
Status BuildEnvoyRing(const RingOptions& options, RingState& state, const PointCounts& counts,
                      unsigned threads) {
  const std::vector<NodeInfo>& nodes = state.nodes;
  const uint64_t total = counts.total;
  AlignedArray<hwy::uint128_t> keys;
  if (!keys.Allocate(std::max<uint64_t>(total, 1))) {
    return Status(StatusCode::kOutOfMemory,
                  "out of memory: cannot hold " + std::to_string(total) + " ring points");
  }
  const bool murmur = options.envoy_ring.hash_function == EnvoyHash::kMurmurHash2;
  // Sort keys of 128 bits: the point's hash above, its node (as rank and
  // id, configuration order) below.
  std::vector<std::string> prefixes = PointPrefixes(nodes, "_");
  GenerateEveryNode(counts, threads, [&](uint32_t node, uint64_t first) {
    PointString text(prefixes[node]);
    hwy::uint128_t* out = keys.data() + first;
    for (uint64_t i = 0; i < counts.per_node[node]; ++i) {
      const std::string_view s = text.With(i);
      out[i].hi =
          murmur ? LibstdcxxStringHash(s.data(), s.size()) : XxHash64(s.data(), s.size(), 0);
      out[i].lo = (uint64_t{node} << 16) | node;
    }
  });
  if (total > 1) {
    try {
      const hwy::Sorter sorter;
      sorter(keys.data(), total, hwy::SortAscending());
    } catch (const std::bad_alloc&) {
      return Status(StatusCode::kOutOfMemory, "out of memory: sorting ring points");
    }
  }
  Columns& columns = state.columns;
  columns.size = static_cast<uint32_t>(total);
  if (total == 0) return Status();
  const size_t hash_slots = HashColumnSlots(total);
  const size_t node_slots = NodeColumnSlots(total);
  if (!columns.hash.Allocate(hash_slots) || !columns.low.Allocate(hash_slots) ||
      !columns.node.Allocate(node_slots)) {
    return Status(StatusCode::kOutOfMemory,
                  "out of memory allocating ring columns (" + std::to_string(total) + " points)");
  }
  for (uint64_t i = 0; i < total; ++i) {
    columns.hash[i] = static_cast<uint32_t>(keys[i].hi >> 32);
    columns.low[i] = static_cast<uint32_t>(keys[i].hi);
    columns.node[i] = static_cast<uint16_t>(keys[i].lo);
  }
  std::fill(columns.hash.data() + total, columns.hash.data() + hash_slots, UINT32_MAX);
  std::fill(columns.low.data() + total, columns.low.data() + hash_slots, UINT32_MAX);
  std::fill(columns.node.data() + total, columns.node.data() + node_slots, columns.node[0]);
  if (!BuildColumnsIndex(columns)) {
    return Status(StatusCode::kOutOfMemory, "out of memory building the search index");
  }
  return Status();
}

// Envoy's Maglev table: the columns of `state`, filled by MaglevFill.
Status BuildMaglevTable(const RingOptions& options, RingState& state) {
  const uint64_t m = options.maglev.table_size;
  std::vector<std::string_view> keys;
  keys.reserve(state.nodes.size());
  for (const NodeInfo& node : state.nodes) keys.push_back(node.address.host);
  Columns& columns = state.columns;
  columns.size = static_cast<uint32_t>(m);
  if (!columns.node.Allocate(m)) {
    return Status(StatusCode::kOutOfMemory,
                  "out of memory allocating a maglev table of " + std::to_string(m) + " entries");
  }
  MaglevFill(keys, EnvoyNormalizedWeights(state.nodes), std::span<uint16_t>(columns.node.data(), m));
  return Status();
}

}  // namespace program
}  // namespace chash::internal
