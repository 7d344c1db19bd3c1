// The ring's storage: two parallel columns in Eytzinger (BFS) order.
//
//   struct Columns {              // n = kept points (after collisions)
//     uint32_t hash[n + 1];       // 64-byte aligned. Slot 0: 0, never compared.
//                                 // Slots 1..n: the point hashes laid out as an
//                                 // implicit binary search tree: the children
//                                 // of slot k are 2k and 2k+1, and an in-order
//                                 // walk visits the hashes in ascending order.
//     uint16_t node[n + 1];       // 64-byte aligned, parallel to hash[].
//                                 // Slot 0: the node of the SMALLEST point, the
//                                 // answer when a key is above every point
//                                 // (the wrap-around), so the descent needs no
//                                 // branch for it.
//   };
//
// 6 bytes per kept point plus one sentinel slot and at most one cache line of
// rounding per column; no per-point side table. Everything else the lookups
// and walks need (the in-order successor of a slot, the first slot) is
// computed from the slot index (eytzinger.h).
//
// Why this order: slots 16k..16k+15 (the descendants of k four levels down)
// share one cache line, so a descent can prefetch four levels ahead, and the
// top levels of every descent hit the same few lines, which stay cached.
#ifndef CHASH_ENGINE_LAYOUT_COLUMNS_H_
#define CHASH_ENGINE_LAYOUT_COLUMNS_H_

#include <cstdint>

#include "layout/aligned_array.h"

namespace chash::internal {

struct Columns {
  AlignedArray<uint32_t> hash;
  AlignedArray<uint16_t> node;
  uint32_t size = 0;  // n: kept points; the arrays hold n + 1 slots (0 if n == 0)

  uint64_t allocated_bytes() const noexcept {
    return hash.allocated_bytes() + node.allocated_bytes();
  }
};

}  // namespace chash::internal

#endif  // CHASH_ENGINE_LAYOUT_COLUMNS_H_
