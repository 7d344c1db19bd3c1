// From generated points to columns: the part of a build shared by flavor
// rings and raw-point rings.
#ifndef CHASH_ENGINE_BUILD_COLUMNS_BUILDER_H_
#define CHASH_ENGINE_BUILD_COLUMNS_BUILDER_H_

#include <cstddef>
#include <cstdint>

#include "chash/status.h"
#include "collision_table.h"
#include "layout/columns.h"

namespace chash::internal {

// A point as one sortable u64: hash in the top 32 bits, so that ascending
// order is ring order; then the node's tie-break rank, so that among equal
// hashes the winner sorts first; then the node id. An unstable sort of these
// keys is therefore deterministic.
inline uint64_t PointSortKey(uint32_t hash, uint32_t rank, uint32_t node) noexcept {
  return (uint64_t{hash} << 32) | (uint64_t{rank} << 16) | node;
}
inline uint32_t SortKeyHash(uint64_t key) noexcept { return static_cast<uint32_t>(key >> 32); }
inline uint16_t SortKeyNode(uint64_t key) noexcept { return static_cast<uint16_t>(key); }

// Room for the sort keys of one build. A large build places its keys where
// the hash column of `columns` will live (an OS mapping, see aligned_array.h)
// so that BuildColumnsFromKeys writes the hash column over the sorted keys
// and returns the rest of them to the OS: the build then peaks at 10 bytes a
// point (8 for the key, 2 for the node column) instead of 14. Small builds
// get a buffer of their own.
class PointKeyBuffer {
 public:
  // False if the memory cannot be had.
  bool Allocate(size_t count, Columns& columns) noexcept;
  uint64_t* data() noexcept { return keys_; }

 private:
  AlignedArray<uint64_t> own_;
  uint64_t* keys_ = nullptr;
};

// The number of distinct hashes among sorted keys (a key starts a new run
// unless its hash is the previous key's).
size_t CountDistinctHashes(const uint64_t* keys, size_t count) noexcept;

// Sorts `keys` in place (Highway VQSort), keeps the first key of each run of
// equal hashes and lays the survivors out in `columns` (columns.h), search
// index included. `keys` is clobbered; if it came from a PointKeyBuffer for
// these columns it becomes the hash column. kOutOfMemory if the columns
// cannot be allocated.
// If `losers` is given, it receives the dropped keys in sorted order (so in
// tie-break order within a hash), each distinct key once: the exact-masking
// side table (collision_table.h).
Status BuildColumnsFromKeys(uint64_t* keys, size_t count, Columns& columns,
                            CollisionTable* losers = nullptr);
// The same for keys already in ascending order (GenerateSortedPointKeys).
// `distinct_hashes` is their number of distinct hashes if the caller knows
// it (GenerateSortedPointKeys counts them while the buckets are in cache);
// kCountDistinctHashes: read the keys once more to count them. One pass over
// the keys then writes the columns.
inline constexpr size_t kCountDistinctHashes = SIZE_MAX;
Status BuildColumnsFromSortedKeys(uint64_t* keys, size_t count, Columns& columns,
                                  CollisionTable* losers = nullptr,
                                  size_t distinct_hashes = kCountDistinctHashes);

// Builds the search index of columns whose hash and node columns are laid
// out (sentinels included): the last step of BuildColumnsFromKeys, and what
// a snapshot load runs instead of reading an index from the file. False:
// out of memory.
bool BuildColumnsIndex(Columns& columns) noexcept;

}  // namespace chash::internal

#endif  // CHASH_ENGINE_BUILD_COLUMNS_BUILDER_H_
