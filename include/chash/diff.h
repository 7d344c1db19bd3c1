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
