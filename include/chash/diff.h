// Exact ring diff: the share of the 2^32 key hashes whose backend differs
// between two rings, overall and per backend, with no sampling.
//
//   chash::RingDiff diff = chash::DiffRings(old_ring, new_ring).value();  // after .ok()
//   printf("%.4f%% of keys move\n", 100 * diff.moved_fraction());
//
// Each ring maps the hash space to nodes piecewise: the hashes in (previous
// point, point] go to the point's node, and those above the last point wrap
// to the first. Merging the two sorted point sequences cuts the space into
// intervals on which both answers are constant, so the diff is a sum of
// interval lengths: exact, O(points of both rings), no allocation beyond
// the per-node table. Nodes are matched across rings by BackendIdentity
// (identity.h), so the rings may differ in flavor, multiple, node order and
// membership. An empty ring answers no node: against a non-empty ring every
// hash moves.
//
// The other programs' rings (haproxy .. envoy-maglev) diff by their own
// lookup rules (the nearest point, the clamp at the last point, 64-bit
// points, a Maglev table's entries), exactly whenever both rings hash a key
// to the same value: the same key hash (CRC-32 is nginx's, pingora's,
// resty's and HAProxy's crc32 without avalanche; two ketama rings with one
// key hash; Envoy's XXH64) and, for two Maglev tables, one table size. On
// 64-bit rings the counts are in units of 2^32 of the 2^64 hashes (each
// total exact to one unit). Otherwise, for rings that hash keys differently
// (e.g. nginx's CRC-32 against libmemcached's MD5, or a ring against a
// table), where no interval of hashes means the same keys on both, a key's
// two answers are taken as independent draws from each ring's exact shares:
// moved = 1 - Σ_backend old share x new share, moved_out = old x (1 - new),
// moved_in = new x (1 - old); `exact` is then false.
#ifndef CHASH_DIFF_H_
#define CHASH_DIFF_H_

#include <cstdint>
#include <string>
#include <vector>

#include "chash/ring.h"

// Public API: exported from libchash.so (built with hidden visibility).
#pragma GCC visibility push(default)
namespace chash {

inline constexpr uint64_t kKeySpace = uint64_t{1} << 32;  // CRC32 key hashes

struct NodeDiff {
  std::string backend;                // BackendIdentity, the matching key
  std::string address;                // as written: the old ring's, else the new's
  uint32_t old_node = Ring::kNoNode;  // id in each ring; kNoNode if absent
  uint32_t new_node = Ring::kNoNode;
  // Key hashes (of kKeySpace) the backend owns on each ring, and those that
  // change hands: moved_out = owned on the old ring, another backend's on
  // the new; moved_in = owned on the new ring, another backend's on the old.
  uint64_t old_hashes = 0;
  uint64_t new_hashes = 0;
  uint64_t moved_out = 0;
  uint64_t moved_in = 0;
};

struct RingDiff {
  uint64_t moved_hashes = 0;    // key hashes whose backend differs
  // False when the rings hash keys differently: the figures are expected
  // values for keys whose two hashes are independent (see above).
  bool exact = true;
  std::vector<NodeDiff> nodes;  // the old ring's nodes in id order, then the new-only ones

  double moved_fraction() const noexcept {
    return static_cast<double>(moved_hashes) / static_cast<double>(kKeySpace);
  }
  // During a RingMigration that sends `rollout` (0..1) of the keys through the
  // new ring: the expected fraction of keys whose backend differs from the
  // old ring's. Expected, not exact: the migration picks keys by a hash of
  // their bytes independent of CRC32, so a moved interval is rolled out in
  // proportion. Per node, scale moved_out / moved_in the same way; a node's
  // expected share is (1 - rollout) * old + rollout * new.
  double moved_fraction_at(double rollout) const noexcept { return rollout * moved_fraction(); }
};

// O(old points + new points + nodes log nodes). Thread-safe (reads only).
// Allocates O(nodes); kOutOfMemory if that fails.
Result<RingDiff> DiffRings(const Ring& old_ring, const Ring& new_ring);

}  // namespace chash
#pragma GCC visibility pop

#endif  // CHASH_DIFF_H_
