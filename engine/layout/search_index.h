// The search index above the hash column (columns.h): the internal levels of
// a 16-ary S+ tree whose leaves are the hash column itself, and a slot table
// that a single lookup uses to land next to its answer.
//
//   level 0          the hash column: blocks of 16 hashes, one cache line each
//   level l >= 1     key j = the last (largest) key of block j of level l - 1,
//                    so the first key >= x at level l names the block of level
//                    l - 1 that holds the first key >= x there. Each level is
//                    64-byte aligned and padded with UINT32_MAX to whole
//                    blocks plus one more block (a 16-key window may start at
//                    any key position). Levels are stored top-down (BFS).
//   level L (root)   at most 16 keys.
//   slot table       2^b + 1 entries: entry p = the slot (level-0 position) of
//                    the first hash >= p << (32 - b); entry 2^b = n. A query x
//                    of bucket p = x >> (32 - b) has its answer in [table[p],
//                    table[p + 1]].
//
// A descent tracks pos, the position of the first key >= x at the current
// level: pos(l - 1) = 16 * pos(l) + (keys < x in block pos(l) of level l - 1),
// one SIMD compare and count per level; pos(0) is the point's slot. The
// position at level l of the first key >= y is slot(y) >> 4l, so the slot
// table enters the tree at any level: pos(e) = table[p] >> 4e plus the keys
// < x in the 16-key window there. The entry level e is the lowest level (at
// least 2 once level 1 outgrows 256 KiB: batches load their entry windows
// unprefetched, so those must stay cached) at which no bucket spans more
// than 15 keys (then that window always holds the
// answer); it is derived from the table, never stored.
//
// A single lookup on a ring of kInterpolationMinPoints or more (one query,
// a miss a step when the ring is cold) does not descend: CRC32 points are uniform, so inside a bucket of k points the slot
// of x is about table[p] + k * (x's offset in the bucket); the error's
// deviation is at most sqrt(k) / 2. It counts the kWindowKeys hashes centred
// on that guess: two round trips for a cold ring (the entry, then the
// window's hash lines with its node line). A count that does not decide the
// answer (the guess off by more than half a window: about 0.6% of uniform
// queries at 128-256 points a bucket; clustered raw points more) falls back
// to the descent. Batches descend: they overlap many misses, and one leaf
// line a query is less to fetch than a window's two or three.
//
// Sizes: the levels are 1/15 of the hash column (0.27 of the 6 bytes a
// point); the table about n/128 to n/256 entries (0.016-0.031 bytes a
// point), or up to kSmallTableBytes for rings under about 1M points.
#ifndef CHASH_ENGINE_LAYOUT_SEARCH_INDEX_H_
#define CHASH_ENGINE_LAYOUT_SEARCH_INDEX_H_

#include <cstddef>
#include <cstdint>

#include "layout/aligned_array.h"

namespace chash::internal {

inline constexpr int kBlockKeys = 16;
// A single lookup's window (see above): two 64-byte blocks' worth of keys.
inline constexpr uint32_t kWindowKeys = 32;
// Rings of at least this many points take the window for single lookups;
// smaller ones descend: their index and columns stay cached, where the
// descent's one leaf line is cheaper than the window's two or three (the
// crossover is measured in bench/README.md, "Layout lab").
inline constexpr uint32_t kInterpolationMinPoints = 1u << 20;
// Tests and fuzzers lower it (to 0) to reach the window on small rings.
// Read when a view is made (a ring takes its state); not for production.
void SetInterpolationMinPoints(uint32_t points) noexcept;
// 16^8 = 2^32 > kHardMaxPoints + 1: at most 7 levels above the leaves.
inline constexpr int kMaxIndexLevels = 7;
// A table this small costs nothing worth a budget (half of a 64 KiB L1d).
inline constexpr size_t kSmallTableBytes = 32 << 10;

// Everything a lookup reads, as plain pointers (valid while the ring lives).
// A single lookup's fields, level[0] included, share the first cache line.
struct SearchView {
  const uint32_t* table;                       // slot table, 2^b + 1 entries
  const uint16_t* node;                        // the node column
  uint32_t table_shift;                        // 32 - b: x >> table_shift
  uint32_t offset_mask;                        // 2^(32 - b) - 1: x's offset in its bucket
  uint32_t window_last;                        // the last slot a window may start at
  uint32_t size;                               // n, the kept points
  uint32_t entry_level;                        // e: where a descent enters
  uint32_t entry_shift;                        // 4 e: table[p] >> entry_shift
  uint32_t entry_last;                         // the last position at level e (n >> 4e; n if e = 0)
  bool interpolate;                            // the window first (kInterpolationMinPoints)
  const uint32_t* level[kMaxIndexLevels + 1];  // level[0]: the hash column
};
static_assert(offsetof(SearchView, level) + sizeof(uint32_t*) <= 64);

class SearchIndex {
 public:
  // Builds the levels and the slot table over a hash column of n >= 1
  // points (slots 0..n-1 ascending, slot n and the tail UINT32_MAX).
  // False: out of memory.
  bool Build(const uint32_t* hash, uint32_t n) noexcept;

  // The slot table's bits b for n points: about 128-256 points a bucket, at
  // least min(13, bits for n + 1) (a table of 32 KiB costs nothing), at most 24.
  static int TableBitsFor(uint32_t n) noexcept;

  // The index as a snapshot stores it (include/chash/snapshot.h, section 7,
  // layout 2): levels 1..L root first in one array, then the slot table.
  const uint32_t* level_keys() const noexcept { return keys_.data(); }
  size_t level_key_count() const noexcept { return keys_.size(); }
  const uint32_t* table() const noexcept { return table_.data(); }
  size_t table_entries() const noexcept { return table_.size(); }
  // Level keys an index over n points holds, and its levels L.
  static size_t LevelKeyCount(uint32_t n, int& levels) noexcept;

  // Takes a stored index over the hash column `hash` of n >= 1 points after
  // checking that it is exactly the index Build makes: the levels n
  // implies, each key the last key of its block below, the padding
  // UINT32_MAX, the table bits TableBitsFor(n), 2^b + 1 entries, each the
  // slot of its bucket's first hash (entry 2^b = n). Lookups over it then
  // answer exactly as over the built index. Reads the levels, every 16th
  // hash, two hashes an entry and the table once and allocates nothing: the
  // arrays are borrowed (they must outlive this index). nullptr on success,
  // else what is wrong (a static string); the index is then unchanged.
  const char* AdoptStored(const uint32_t* hash, uint32_t n, const uint32_t* keys,
                          size_t key_count, uint32_t table_bits, const uint32_t* table,
                          size_t table_entries) noexcept;

  // The view of a ring whose columns are `hash` and `node`; valid while this
  // index and the columns live.
  SearchView View(const uint32_t* hash, const uint16_t* node, uint32_t n) const noexcept;

  int levels() const noexcept { return levels_; }  // L: internal levels
  int entry_level() const noexcept { return entry_level_; }  // derived, not stored
  int table_bits() const noexcept { return 32 - table_shift_; }
  size_t table_bytes() const noexcept { return table_.allocated_bytes(); }
  size_t level_bytes() const noexcept { return keys_.allocated_bytes(); }
  uint64_t allocated_bytes() const noexcept { return level_bytes() + table_bytes(); }

 private:
  // The lowest level at which no bucket of table_ spans more than 15 keys.
  int EntryLevelOfTable(uint32_t n) const noexcept;

  AlignedArray<uint32_t> keys_;                 // levels 1..L, root first
  size_t level_offset_[kMaxIndexLevels + 1] = {};  // of level l in keys_
  int levels_ = 0;
  AlignedArray<uint32_t> table_;  // the slot table, 2^b + 1 entries
  int entry_level_ = 0;
  uint32_t table_shift_ = 32;
};

}  // namespace chash::internal

#endif  // CHASH_ENGINE_LAYOUT_SEARCH_INDEX_H_
