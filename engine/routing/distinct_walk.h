// The one rule of a walk over distinct nodes without a mask, shared by
// NodeWalk (failover.h; its unmasked case) and Ring::WalkDistinct's
// DistinctNodeWalk (ring.h; NodeWalk's order kept under 1.0's type).
#ifndef CHASH_ENGINE_ROUTING_DISTINCT_WALK_H_
#define CHASH_ENGINE_ROUTING_DISTINCT_WALK_H_

#include <cstdint>

#include "chash/ring.h"

namespace chash::internal {

// The next node of the cursor's walk not marked in `seen` (bit n of word
// n / 64), which it then marks; Ring::kNoNode once `nodes_left` nodes have
// come or `points_left` points have been walked. A node id >= num_nodes (a
// damaged mapped column) is passed over, never used as an index. `seen`
// holds (num_nodes + 63) / 64 words. Cost: the points walked.
inline uint32_t NextUnseenNode(PointCursor& cursor, uint64_t* seen, uint32_t num_nodes,
                               uint64_t& points_left, uint32_t& nodes_left) noexcept {
  while (nodes_left > 0 && points_left > 0) {
    const uint32_t node = cursor.Next();
    --points_left;
    if (node >= num_nodes) continue;
    uint64_t& word = seen[node / 64];
    const uint64_t bit = uint64_t{1} << (node % 64);
    if ((word & bit) != 0) continue;
    word |= bit;
    --nodes_left;
    return node;
  }
  return Ring::kNoNode;
}

}  // namespace chash::internal

#endif  // CHASH_ENGINE_ROUTING_DISTINCT_WALK_H_
