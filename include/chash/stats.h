// Ring statistics: what a ring costs and how evenly it spreads keys.
#ifndef CHASH_STATS_H_
#define CHASH_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "chash/ring.h"

// Public API: exported from libchash.so (built with hidden visibility).
#pragma GCC visibility push(default)
namespace chash {

struct RingStats {
  uint32_t nodes = 0;             // all nodes, drained ones included
  uint64_t points_generated = 0;  // Σ weight x multiple
  uint64_t points = 0;            // kept after collisions
  uint64_t collisions = 0;        // points_generated - points
  uint64_t column_bytes = 0;      // hash + node columns as allocated
  uint64_t other_bytes = 0;       // node table and bookkeeping
  uint64_t index_bytes = 0;       // search index above the columns (MemoryUsage)
  // Collided points kept for exact masked lookups (MemoryUsage); not in
  // column_bytes, so bytes_per_point stays the columns' 6 bytes a point.
  uint64_t collision_table_bytes = 0;
  double bytes_per_point = 0;     // column_bytes / points
  // CV(k) = sqrt((N-1)/(N*k+1)), N = nodes with weight > 0 and
  // k = points_generated / N (Cloudflare's formula; exact for equal weights).
  double cv_predicted = 0;
  // Over the nodes with weight > 0: r = (node's share of the 2^32 hashes) /
  // (its weight / total weight); cv_measured = stddev(r) / mean(r), exact.
  double cv_measured = 0;
  double max_share_ratio = 0;  // max r
  double min_share_ratio = 0;  // min r
  // The other programs' rings (haproxy .. envoy-maglev): what the program
  // itself allocates for this ring, from its sources
  // (tests/reference/COMPATIBILITY.md), against chash's column_bytes:
  // HAProxy 48 B a point, libmemcached and twemproxy 8 B an item for
  // (live servers + 10) x 160 items (x 100 unweighted), libketama 28 B a
  // point, Varnish 8, Envoy's ring 24, Maglev 16 B an entry or its compact
  // table (bit_width(hosts) bits an entry + 16 B a host) when smaller. 0 on
  // nginx, pingora, resty and raw rings (not computed).
  uint64_t program_bytes = 0;
  double program_bytes_per_point = 0;  // program_bytes / points (entries)
};

// Exact share of the 2^32 key hashes each node owns (counts sum to 2^32 on a
// non-empty ring), one a node id. One ring-order scan: O(points), allocates
// O(nodes); if that allocation fails, an empty vector (size() !=
// num_nodes() tells, on a ring with nodes).
//
// Each ring's own lookup rule decides (ring.h LookupRule): a HAProxy ring's
// nearest point splits every gap at its middle, a Varnish ring clamps at its
// last point, ties go as the ring answers them. The 64-bit rings
// (envoy-ring, envoy-maglev) own shares of 2^64 hashes, given here in units
// of 2^32 hashes, rounded so that they still sum to 2^32 (each within one
// unit); a Maglev entry owns the hashes h with h mod M = its index. Shares
// are of the hash space: a key hash that does not spread over it
// (twemproxy's 15-bit "crc32") leaves the keys' shares unlike these.
std::vector<uint64_t> NodeHashShares(const Ring& ring) noexcept;

// O(points) (one scan). Builds nothing; allocates O(nodes) for the shares.
// If that allocation fails, cv_measured, max_share_ratio and
// min_share_ratio are NaN (never NaN otherwise) and the byte counts 0.
RingStats ComputeRingStats(const Ring& ring) noexcept;

double PredictedCv(uint64_t nodes, double points_per_node);

// One JSON object with the field names above, on one line (program_bytes
// and program_bytes_per_point only when program_bytes > 0); a field that is
// not a finite number (the shares ComputeRingStats could not allocate) is
// null. kOutOfMemory if the text cannot be allocated: it is output a
// program writes to a file or a pipe, where an empty text would be a
// silently wrong answer, so it reports the failure instead.
Result<std::string> RingStatsJson(const RingStats& stats);

}  // namespace chash
#pragma GCC visibility pop

#endif  // CHASH_STATS_H_
