#include <bit>
#include <cmath>
#include <cstdio>
#include <new>
#include <string>

#include "builder/flavor_points.h"
#include "flavors.h"
#include "chash/stats.h"
#include "fleet/hash_runs.h"
#include "identity/throwing_cores.h"
#include "util/json_text.h"
#include "util/out_of_memory.h"

namespace chash {
namespace internal {

std::vector<uint64_t> NodeHashSharesOrThrow(const Ring& ring) {
  if (UsesHashRuns(ring)) return ScaleShares(ExactNodeShares(ring), SpaceBits(ring));
  std::vector<uint64_t> shares(ring.num_nodes(), 0);
  if (ring.empty()) return shares;
  // A point owns the hashes above its predecessor up to and including its
  // own; the first point also owns everything above the last point (wrap).
  PointCursor cursor = ring.Begin();
  const uint32_t first_hash = cursor.hash();
  const uint32_t first_node = cursor.node();
  uint32_t prev_hash = first_hash;
  for (uint64_t i = 1; i < ring.num_points(); ++i) {
    cursor.Advance();
    shares[cursor.node()] += cursor.hash() - prev_hash;
    prev_hash = cursor.hash();
  }
  shares[first_node] += (uint64_t{1} << 32) - prev_hash + first_hash;
  return shares;
}

}  // namespace internal

std::vector<uint64_t> NodeHashShares(const Ring& ring) noexcept {
  try {
    return internal::NodeHashSharesOrThrow(ring);
  } catch (...) {
    return {};
  }
}

double PredictedCv(uint64_t nodes, double points_per_node) {
  if (nodes == 0) return 0;
  const double n = static_cast<double>(nodes);
  return std::sqrt((n - 1) / (n * points_per_node + 1));
}

namespace internal {

// What the ring's own program allocates for the same ring, from its
// sources (tests/reference/COMPATIBILITY.md): 0 for nginx, pingora, resty
// and raw rings (not computed).
uint64_t ProgramStructureBytes(const Ring& ring, uint64_t live_nodes) {
  if (!UsesHashRuns(ring)) return 0;
  const uint64_t points = ring.num_points();
  switch (ring.flavor()) {
    case Flavor::kHaproxy:
      return 48 * points;  // struct tree_occ: a server pointer and an eb32_node
    case Flavor::kKetamaMd5: {
      const KetamaVariant variant = ring.options().ketama.variant;
      if (variant == KetamaVariant::kLibketama) return 28 * points;  // mcs {u32, char[22]}
      // libmemcached and twemproxy allocate their 8-byte {index, value}
      // items for (live + 10) servers x 160 points (x 100 unweighted).
      const uint64_t per_server = IsUnweightedKetama(variant) ? 100 : 160;
      return 8 * (live_nodes + 10) * per_server;
    }
    case Flavor::kVarnishShard:
      return 8 * points;  // struct shard_circlepoint {u32 point; unsigned host}
    case Flavor::kEnvoyRing:
      return 24 * points;  // RingEntry {u64 hash; HostConstSharedPtr}
    case Flavor::kEnvoyMaglev: {
      // Envoy 1.29 on: the compact table (bit_width(N) bits an entry and a
      // 16-byte host pointer a host) when it is smaller than the original
      // table of 16-byte host pointers (maglev_lb.cc shouldUseCompactTable).
      const uint64_t original = 16 * points;
      const uint64_t compact = 16 * live_nodes + std::bit_width(live_nodes) * points / 8;
      return std::min(original, compact);
    }
    CHASH_CRC32_FLAVOR_CASES:
      break;
  }
  return 0;
}

RingStats ComputeRingStatsOrThrow(const Ring& ring) {
  RingStats stats;
  stats.nodes = ring.num_nodes();
  stats.points_generated = ring.points_generated();
  stats.points = ring.num_points();
  stats.collisions = ring.collisions();
  const MemoryUsage memory = ring.memory_usage();
  stats.column_bytes = memory.column_bytes;
  stats.other_bytes = memory.other_bytes;
  stats.collision_table_bytes = memory.collision_table_bytes;
  stats.index_bytes = memory.index_bytes;
  stats.bytes_per_point =
      stats.points == 0 ? 0 : static_cast<double>(stats.column_bytes) / stats.points;

  uint64_t weighted_nodes = 0;
  double total_weight = 0;
  for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
    if (ring.node(id).weight > 0) {
      ++weighted_nodes;
      total_weight += ring.node(id).weight;
    }
  }
  stats.program_bytes = ProgramStructureBytes(ring, weighted_nodes);
  stats.program_bytes_per_point =
      stats.points == 0 ? 0 : static_cast<double>(stats.program_bytes) / stats.points;
  stats.cv_predicted =
      weighted_nodes == 0
          ? 0
          : PredictedCv(weighted_nodes, static_cast<double>(stats.points_generated) /
                                            static_cast<double>(weighted_nodes));
  if (weighted_nodes == 0 || ring.empty()) return stats;

  const std::vector<uint64_t> shares = NodeHashSharesOrThrow(ring);
  double sum = 0, sum_sq = 0;
  stats.min_share_ratio = INFINITY;
  for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
    const uint32_t weight = ring.node(id).weight;
    if (weight == 0) continue;
    const double share = static_cast<double>(shares[id]) / 4294967296.0;  // shares: of 2^32
    const double ratio = share / (weight / total_weight);
    sum += ratio;
    sum_sq += ratio * ratio;
    stats.max_share_ratio = std::max(stats.max_share_ratio, ratio);
    stats.min_share_ratio = std::min(stats.min_share_ratio, ratio);
  }
  const double count = static_cast<double>(weighted_nodes);
  const double mean = sum / count;
  const double variance = std::max(0.0, sum_sq / count - mean * mean);
  stats.cv_measured = std::sqrt(variance) / mean;
  return stats;
}

}  // namespace internal

RingStats ComputeRingStats(const Ring& ring) noexcept {
  try {
    return internal::ComputeRingStatsOrThrow(ring);
  } catch (...) {
    RingStats stats;  // the fields that need no allocation, the shares unknown
    stats.nodes = ring.num_nodes();
    stats.points_generated = ring.points_generated();
    stats.points = ring.num_points();
    stats.collisions = ring.collisions();
    stats.cv_measured = stats.max_share_ratio = stats.min_share_ratio = std::nan("");
    return stats;
  }
}

Result<std::string> RingStatsJson(const RingStats& s) {
  char buffer[1024];
  std::snprintf(buffer, sizeof buffer,
                "{\"nodes\":%u,\"points_generated\":%llu,\"points\":%llu,"
                "\"collisions\":%llu,\"column_bytes\":%llu,\"other_bytes\":%llu,"
                "\"index_bytes\":%llu,\"collision_table_bytes\":%llu,\"bytes_per_point\":%s,"
                "\"cv_predicted\":%s,\"cv_measured\":%s,"
                "\"max_share_ratio\":%s,\"min_share_ratio\":%s}",
                s.nodes, static_cast<unsigned long long>(s.points_generated),
                static_cast<unsigned long long>(s.points),
                static_cast<unsigned long long>(s.collisions),
                static_cast<unsigned long long>(s.column_bytes),
                static_cast<unsigned long long>(s.other_bytes),
                static_cast<unsigned long long>(s.index_bytes),
                static_cast<unsigned long long>(s.collision_table_bytes),
                internal::JsonNumberText(s.bytes_per_point).text,
                internal::JsonNumberText(s.cv_predicted).text, internal::JsonNumberText(s.cv_measured).text,
                internal::JsonNumberText(s.max_share_ratio).text, internal::JsonNumberText(s.min_share_ratio).text);
  return internal::CatchOutOfMemory("the ring stats as JSON", [&]() -> Result<std::string> {
    std::string json(buffer);
    if (s.program_bytes > 0) {
      // Only the other programs' rings have these fields (the object of an
      // nginx, pingora or resty ring is unchanged).
      char more[128];
      std::snprintf(more, sizeof more, ",\"program_bytes\":%llu,\"program_bytes_per_point\":%s}",
                    static_cast<unsigned long long>(s.program_bytes),
                    internal::JsonNumberText(s.program_bytes_per_point).text);
      json.pop_back();
      json += more;
    }
    return json;
  });
}

}  // namespace chash
