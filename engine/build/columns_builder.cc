#include "build/columns_builder.h"

#include <algorithm>
#include <new>

#include "hwy/contrib/sort/vqsort.h"
#include "layout/eytzinger.h"

namespace chash::internal {
namespace {

// Highway's vectorized quicksort (hwy::Sorter, the 1.0.3 API). Its scratch
// buffer is allocated by the constructor and written by every sort, so each
// build has its own (concurrent builds must not share one).
bool SortKeys(uint64_t* keys, size_t count) noexcept {
  if (count < 2) return true;
  try {
    const hwy::Sorter sorter;
    sorter(keys, count, hwy::SortAscending());
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

// Compacts `keys` to the first key of each equal-hash run; returns the count.
// The others go to `losers` (if given) in key order, minus exact repeats of
// the previous key: a node whose chain repeats a hash contends only once.
// Throws std::bad_alloc if `losers` cannot grow.
size_t DropCollisions(uint64_t* keys, size_t count, CollisionTable* losers) {
  if (count == 0) return 0;
  size_t kept = 1;
  uint64_t previous = keys[0];
  for (size_t i = 1; i < count; ++i) {
    const uint64_t key = keys[i];
    if (SortKeyHash(key) != SortKeyHash(keys[kept - 1])) {
      keys[kept++] = key;
    } else if (losers != nullptr && key != previous) {
      losers->hash.push_back(SortKeyHash(key));
      losers->node.push_back(SortKeyNode(key));
    }
    previous = key;
  }
  return kept;
}

}  // namespace

Status BuildColumnsFromKeys(uint64_t* keys, size_t count, Columns& columns,
                            CollisionTable* losers) {
  if (!SortKeys(keys, count)) {
    return Status(StatusCode::kOutOfMemory, "out of memory while sorting ring points");
  }
  size_t kept = 0;
  try {
    kept = DropCollisions(keys, count, losers);
    if (losers != nullptr) {
      losers->hash.shrink_to_fit();
      losers->node.shrink_to_fit();
    }
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kOutOfMemory, "out of memory recording collided points");
  }
  columns.size = static_cast<uint32_t>(kept);
  if (kept == 0) {
    columns.hash.Allocate(0);
    columns.node.Allocate(0);
    return Status();
  }
  if (!columns.hash.Allocate(kept + 1) || !columns.node.Allocate(kept + 1)) {
    return Status(StatusCode::kOutOfMemory, "out of memory allocating ring columns (" +
                                                std::to_string(kept) + " points)");
  }
  // In-order traversal of the implicit tree receives the sorted points. Each
  // tree level is written left to right, so this is ~log2(n) sequential
  // streams rather than random writes.
  const uint32_t n = static_cast<uint32_t>(kept);
  uint32_t* hash = columns.hash.data();
  uint16_t* node = columns.node.data();
  uint32_t slot = EytzingerFirst(n);
  for (size_t i = 0; i < kept; ++i) {
    hash[slot] = SortKeyHash(keys[i]);
    node[slot] = SortKeyNode(keys[i]);
    slot = EytzingerNext(slot, n);
  }
  hash[0] = 0;
  node[0] = SortKeyNode(keys[0]);  // the wrap-around target
  // Zero the rounding tails so that no byte of the columns is indeterminate.
  std::fill(hash + kept + 1, hash + columns.hash.allocated_bytes() / sizeof(uint32_t), 0u);
  std::fill(node + kept + 1, node + columns.node.allocated_bytes() / sizeof(uint16_t),
            uint16_t{0});
  return Status();
}

}  // namespace chash::internal
