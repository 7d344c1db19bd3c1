// The ring's storage: two parallel columns in ring order, and above them the
// small search index of a 16-ary S+ tree (the "wide Eytzinger" layout of
// Algorithmica's S-tree: nodes of one cache line, numbered in BFS order).
//
//   struct Columns {               // n = kept points (after collisions)
//     uint32_t hash[R16(n + 1)];   // ascending hashes: index i is the i-th
//                                  // point in ring order. 64-byte aligned, so
//                                  // leaf block b = hash[16b .. 16b+15] is one
//                                  // cache line. Slot n and the rounding tail:
//                                  // UINT32_MAX, the sentinel: no key hash is
//                                  // above it, so a descent ends at a slot <= n.
//     uint16_t node[R32(n + 1)];   // parallel to hash[]; leaf block b's nodes
//                                  // are half of one cache line. Slot n and the
//                                  // tail: the node of hash[0], the wrap-around
//                                  // answer for a key above every point.
//     SearchIndex index;           // search_index.h: levels 1..L above the
//                                  // leaves (the max key of each block below)
//                                  // and a slot table; 6.7% of hash[] plus
//                                  // n/128 entries at most (or 32 KiB).
//   };
//
// 6 bytes per kept point plus one sentinel slot and at most one cache line of
// rounding per column (one 4 KiB page for columns mapped from the OS); no
// per-point side table. Because hash[] is in ring order, the failover walk
// is a plain index increment.
//
// The other programs' rings use the same columns:
//   - haproxy, ketama-md5, varnish-shard keep every point, equal hashes
//     included, in ring order and then their program's insertion order (a
//     lookup's first point >= h is the program's, and so is the point before
//     it and the walk); nothing is dropped, so there is no collision table.
//     varnish-shard's sentinel node is its LAST point's: a key above every
//     point goes there (no wrap), with no branch.
//   - envoy-ring's points are 64-bit:
//       uint32_t hash[R16(n + 1)];  // the high halves, as above (the index is
//                                   // built over them; equal high halves
//                                   // are adjacent, ordered by `low`)
//       uint32_t low[R16(n + 1)];   // the low halves, parallel; sentinel
//                                   // UINT32_MAX, so (hash, low) at slot n
//                                   // is 2^64 - 1
//       uint16_t node[R32(n + 1)];  // as above
//     10 bytes a point (Envoy's RingEntry: 24). A lookup searches hash[] as
//     any ring does, then steps over the points with the same high half and
//     a smaller low half (points are uniform: about n / 2^32 of them).
//   - envoy-maglev is a table, not a ring: node[] holds its M entries (u16
//     node ids, 2 bytes an entry against Envoy's 16-byte host pointer), size
//     = M; hash[], low[] and the index are empty. A lookup reads node[h % M].
#ifndef CHASH_ENGINE_LAYOUT_COLUMNS_H_
#define CHASH_ENGINE_LAYOUT_COLUMNS_H_

#include <cstdint>

#include "layout/aligned_array.h"
#include "layout/search_index.h"

namespace chash::internal {

struct Columns {
  AlignedArray<uint32_t> hash;
  AlignedArray<uint16_t> node;
  AlignedArray<uint32_t> low;  // envoy-ring only
  SearchIndex index;
  uint32_t size = 0;  // n: kept points; the arrays hold n + 1 slots (0 if n == 0)

  // The hash, low and node columns; index.allocated_bytes() is reported apart.
  uint64_t allocated_bytes() const noexcept {
    return hash.allocated_bytes() + node.allocated_bytes() + low.allocated_bytes();
  }
};

// Slots the hash column needs for n points: n + 1 rounded up to a leaf block.
inline constexpr size_t HashColumnSlots(size_t n) noexcept { return (n + 1 + 15) / 16 * 16; }
// Slots the node column needs: n + 1 rounded up to a cache line of u16.
inline constexpr size_t NodeColumnSlots(size_t n) noexcept { return (n + 1 + 31) / 32 * 32; }

}  // namespace chash::internal

#endif  // CHASH_ENGINE_LAYOUT_COLUMNS_H_
