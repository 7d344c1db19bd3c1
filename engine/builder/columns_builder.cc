#include "builder/columns_builder.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "hwy/contrib/sort/vqsort.h"
#include "out_of_memory.h"

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

// The keys a PointKeyBuffer placed in the columns' hash-column memory.
uint64_t* KeysInColumns(Columns& columns) noexcept {
  return columns.hash.is_os_mapping() ? reinterpret_cast<uint64_t*>(columns.hash.data())
                                      : nullptr;
}

Status ColumnsOutOfMemory(size_t kept) {
  return Status(StatusCode::kOutOfMemory,
                "out of memory allocating ring columns (" + std::to_string(kept) + " points)");
}

}  // namespace

bool PointKeyBuffer::Allocate(size_t count, Columns& columns) noexcept {
  // Two u32 slots per key, and at least the hash column's final size.
  const size_t slots = std::max(2 * std::max<size_t>(count, 1), HashColumnSlots(count));
  if (slots * sizeof(uint32_t) >= kHugePageThreshold) {
    if (!columns.hash.Allocate(slots)) return false;
    keys_ = KeysInColumns(columns);
    if (keys_ != nullptr) return true;
    columns.hash.Allocate(0);  // no OS mappings on this platform
  }
  if (!own_.Allocate(std::max<size_t>(count, 1))) return false;
  keys_ = own_.data();
  return true;
}

Status BuildColumnsFromKeys(uint64_t* keys, size_t count, Columns& columns,
                            CollisionTable* losers) {
  if (!SortKeys(keys, count)) {
    return internal::OutOfMemory("sorting ring points");
  }
  return BuildColumnsFromSortedKeys(keys, count, columns, losers);
}

Status BuildColumnsFromSortedKeys(uint64_t* keys, size_t count, Columns& columns,
                                  CollisionTable* losers) {
  size_t kept = 0;
  try {
    kept = DropCollisions(keys, count, losers);
    if (losers != nullptr) {
      losers->hash.shrink_to_fit();
      losers->node.shrink_to_fit();
    }
  } catch (const std::bad_alloc&) {
    return internal::OutOfMemory("recording collided points");
  }
  columns.size = static_cast<uint32_t>(kept);
  const bool in_place = keys == KeysInColumns(columns);
  if (kept == 0) {
    columns.hash.Allocate(0);
    columns.node.Allocate(0);
    return Status();
  }
  const size_t hash_slots = HashColumnSlots(kept);
  const size_t node_slots = NodeColumnSlots(kept);
  if (!columns.node.Allocate(node_slots)) return ColumnsOutOfMemory(kept);
  uint16_t* node = columns.node.data();
  if (in_place) {
    // hash[i] (bytes 4i..4i+3) only overwrites keys[j] with j <= i/2, all
    // read already; memcpy keeps the two views of the memory apart.
    auto* hash_bytes = reinterpret_cast<unsigned char*>(keys);
    for (size_t i = 0; i < kept; ++i) {
      uint64_t key;
      std::memcpy(&key, keys + i, sizeof key);
      node[i] = SortKeyNode(key);
      const uint32_t hash = SortKeyHash(key);
      std::memcpy(hash_bytes + i * sizeof hash, &hash, sizeof hash);
    }
    AlignedArray<uint32_t> memory = std::move(columns.hash);
    columns.hash.AdoptMemory(std::move(memory), hash_slots);
  } else {
    if (!columns.hash.Allocate(hash_slots)) return ColumnsOutOfMemory(kept);
    uint32_t* hash = columns.hash.data();
    for (size_t i = 0; i < kept; ++i) {
      hash[i] = SortKeyHash(keys[i]);
      node[i] = SortKeyNode(keys[i]);
    }
  }
  uint32_t* hash = columns.hash.data();
  // The sentinel and the rounding tails (columns.h): no query is above
  // UINT32_MAX, and past the last point the answer wraps to the first.
  std::fill(hash + kept, hash + hash_slots, UINT32_MAX);
  std::fill(node + kept, node + node_slots, node[0]);
  if (!BuildColumnsIndex(columns)) return ColumnsOutOfMemory(kept);
  return Status();
}

bool BuildColumnsIndex(Columns& columns) noexcept {
  if (columns.size == 0) return true;
  const size_t table_budget = columns.allocated_bytes() / 100;
  return columns.index.Build(columns.hash.data(), columns.size, table_budget);
}

}  // namespace chash::internal
