// From generated points to columns: the part of a build shared by flavor
// rings and raw-point rings.
#ifndef CHASH_ENGINE_BUILD_COLUMNS_BUILDER_H_
#define CHASH_ENGINE_BUILD_COLUMNS_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "chash/status.h"
#include "ring/collision_table.h"
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
// Sorted keys cut into parts that a run of equal hashes never crosses: part
// p holds keys [key_begin[p], key_begin[p + 1]), and its distinct hashes go
// to slots [slot_begin[p], slot_begin[p + 1]) of the columns. Both vectors
// hold parts + 1 entries, from 0 to the key count and to the number of
// distinct hashes.
struct SortedKeyParts {
  std::vector<uint64_t> key_begin;
  std::vector<uint64_t> slot_begin;
  size_t parts() const noexcept { return key_begin.empty() ? 0 : key_begin.size() - 1; }
};
// One part: all `count` keys, `distinct` distinct hashes.
SortedKeyParts OnePart(uint64_t count, uint64_t distinct);

// The same for keys already in ascending order (GenerateSortedPointKeys).
// `parts` (GenerateSortedPointKeys makes them) lays the parts out on one
// thread each: rings come out the same whatever the cut. nullptr: one part,
// its distinct hashes counted by one more read of the keys. kBadArgument
// (before any column is written past its end) if the parts do not describe
// the keys: counts that are not theirs, a cut inside a run of equal hashes.
// When the keys lie in the hash column's memory (PointKeyBuffer), part 0
// writes its hashes in place and the others stage theirs inside their own
// keys, then move them down, in order, once every part is done (4 bytes a
// point of part 1 and later: one memmove each).
Status BuildColumnsFromSortedKeys(uint64_t* keys, size_t count, Columns& columns,
                                  CollisionTable* losers = nullptr,
                                  const SortedKeyParts* parts = nullptr);

// Builds the search index of columns whose hash and node columns are laid
// out (sentinels included): the last step of BuildColumnsFromKeys, and what
// a snapshot load runs instead of reading an index from the file. False:
// out of memory.
bool BuildColumnsIndex(Columns& columns) noexcept;

}  // namespace chash::internal

#endif  // CHASH_ENGINE_BUILD_COLUMNS_BUILDER_H_
