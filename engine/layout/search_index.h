// The search index above the hash column (columns.h): the internal levels of
// a 16-ary S+ tree whose leaves are the hash column itself, and a prefix
// table that skips its cached top levels.
//
//   level 0          the hash column: blocks of 16 hashes, one cache line each
//   level l >= 1     key j = the last (largest) key of block j of level l - 1,
//                    so the first key >= x at level l names the block of level
//                    l - 1 that holds the first key >= x there. Each level is
//                    64-byte aligned and padded with UINT32_MAX to whole
//                    blocks plus one more block (a 16-key window may start at
//                    any key position). Levels are stored top-down (BFS).
//   level L (root)   at most 16 keys.
//
// A descent tracks pos, the position of the first key >= x at the current
// level: pos(l - 1) = 16 * pos(l) + (keys < x in block pos(l) of level l - 1),
// one SIMD compare and count per level; pos(0) is the point's slot.
//
// The prefix table enters the tree below the root: CRC32 hashes are uniform,
// so the top bits of x bound pos at the entry level. Entry p is the position
// there of the first key >= p << (32 - bits); a query counts the keys < x in
// the 16-key window starting at table[x >> shift]. The build checks that no
// bucket holds more than 15 keys of the entry level (then the window always
// holds the answer); it sizes buckets for about two keys, and falls back to a
// higher level or to none when a table would be too big or a bucket too full
// (clustered raw points). No table is the one-entry table {0} at the root.
//
// Sizes: the levels are 1/15 of the hash column (4.4% of the 6-byte points);
// the table at most max(1% of the columns, kSmallTableBytes).
#ifndef CHASH_ENGINE_LAYOUT_SEARCH_INDEX_H_
#define CHASH_ENGINE_LAYOUT_SEARCH_INDEX_H_

#include <cstddef>
#include <cstdint>

#include "layout/aligned_array.h"

namespace chash::internal {

inline constexpr int kBlockKeys = 16;
// 16^8 = 2^32 > kHardMaxPoints + 1: at most 7 levels above the leaves.
inline constexpr int kMaxIndexLevels = 7;
// A table this small costs nothing worth a budget (half of a 64 KiB L1d).
inline constexpr size_t kSmallTableBytes = 32 << 10;

// Everything a descent reads, as plain pointers (valid while the ring lives).
struct SearchView {
  const uint32_t* level[kMaxIndexLevels + 1];  // level[0]: the hash column
  const uint16_t* node;                        // the node column
  const uint32_t* table;                       // prefix table (or {0})
  uint32_t entry_level;                        // the level table entries index
  uint32_t table_shift;                        // 32 - bits: uint64_t{x} >> shift
  uint32_t size;                               // n, the kept points
};

class SearchIndex {
 public:
  // Builds the levels and the prefix table over a hash column of n points
  // (slots 0..n-1 ascending, slot n and the tail UINT32_MAX). The table may
  // take max(table_budget_bytes, kSmallTableBytes). False: out of memory.
  bool Build(const uint32_t* hash, uint32_t n, size_t table_budget_bytes) noexcept;

  // The index as a snapshot stores it (include/chash/snapshot.h, section 7):
  // levels 1..L root first in one array, then the prefix table.
  const uint32_t* level_keys() const noexcept { return keys_.data(); }
  size_t level_key_count() const noexcept { return keys_.size(); }
  const uint32_t* table() const noexcept { return table_.data(); }
  size_t table_entries() const noexcept { return table_.size(); }
  // Level keys an index over n points holds, and its levels L.
  static size_t LevelKeyCount(uint32_t n, int& levels) noexcept;

  // Takes a stored index over the hash column `hash` of n points after
  // checking that it is exactly an index Build could have made: the levels
  // n implies, each key the last key of its block below, the padding
  // UINT32_MAX, an entry level below the root with a table of at most 2^24
  // entries (or no table: entry level L, the table {0}), each entry the
  // position at the entry level of its bucket's first key, and no bucket of
  // more than 15 keys. A descent over it then answers exactly as over the
  // built index. Reads the levels, every 16th hash and the table once and
  // allocates nothing: the arrays are borrowed (they must outlive this
  // index). nullptr on success, else what is wrong (a static string); the
  // index is then unchanged.
  const char* AdoptStored(const uint32_t* hash, uint32_t n, const uint32_t* keys,
                          size_t key_count, uint32_t entry_level, uint32_t table_bits,
                          const uint32_t* table, size_t table_entries) noexcept;

  // The view of a ring whose columns are `hash` and `node`; valid while this
  // index and the columns live.
  SearchView View(const uint32_t* hash, const uint16_t* node, uint32_t n) const noexcept;

  int levels() const noexcept { return levels_; }  // L: internal levels
  int entry_level() const noexcept { return entry_level_; }
  int table_bits() const noexcept { return 32 - table_shift_; }
  size_t table_bytes() const noexcept { return table_.allocated_bytes(); }
  size_t level_bytes() const noexcept { return keys_.allocated_bytes(); }
  uint64_t allocated_bytes() const noexcept { return level_bytes() + table_bytes(); }

 private:
  bool BuildTable(const uint32_t* keys, size_t len, int bits) noexcept;

  AlignedArray<uint32_t> keys_;                 // levels 1..L, root first
  size_t level_offset_[kMaxIndexLevels + 1] = {};  // of level l in keys_
  int levels_ = 0;
  AlignedArray<uint32_t> table_;  // {0} when there is no prefix table
  int entry_level_ = 0;
  uint32_t table_shift_ = 32;
};

}  // namespace chash::internal

#endif  // CHASH_ENGINE_LAYOUT_SEARCH_INDEX_H_
