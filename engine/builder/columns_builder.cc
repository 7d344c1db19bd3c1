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

// One pass over the sorted keys: the first key of each equal-hash run goes to
// slot k of the columns (hash_bytes + 4k, node[k]); the others go to `losers`
// (if given) in key order, minus exact repeats of the previous key (a node
// whose chain repeats a hash contends only once). hash_bytes may be `keys`
// itself: slot k's 4 bytes overwrite keys[k / 2], read already (k <= i), and
// memcpy keeps the two views of the memory apart. Writes at most `slots`
// slots; returns the number of distinct hashes (more than `slots`: the
// columns were sized for fewer). Throws std::bad_alloc if `losers` cannot
// grow.
size_t LayOutFirstOfEachHash(const uint64_t* keys, size_t count, unsigned char* hash_bytes,
                             uint16_t* node, size_t slots, CollisionTable* losers) {
  size_t kept = 0;
  uint64_t previous = 0;
  for (size_t i = 0; i < count; ++i) {
    uint64_t key;
    std::memcpy(&key, keys + i, sizeof key);
    const uint32_t hash = SortKeyHash(key);
    if (i == 0 || hash != SortKeyHash(previous)) {
      if (kept < slots) {
        node[kept] = SortKeyNode(key);
        std::memcpy(hash_bytes + kept * sizeof hash, &hash, sizeof hash);
      }
      ++kept;
    } else if (losers != nullptr && key != previous) {
      losers->hash.push_back(hash);
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

size_t CountDistinctHashes(const uint64_t* keys, size_t count) noexcept {
  size_t distinct = count == 0 ? 0 : 1;
  for (size_t i = 1; i < count; ++i) distinct += SortKeyHash(keys[i]) != SortKeyHash(keys[i - 1]);
  return distinct;
}

Status BuildColumnsFromKeys(uint64_t* keys, size_t count, Columns& columns,
                            CollisionTable* losers) {
  if (!SortKeys(keys, count)) {
    return internal::OutOfMemory("sorting ring points");
  }
  return BuildColumnsFromSortedKeys(keys, count, columns, losers);
}

Status BuildColumnsFromSortedKeys(uint64_t* keys, size_t count, Columns& columns,
                                  CollisionTable* losers, size_t distinct_hashes) {
  const size_t kept =
      distinct_hashes == kCountDistinctHashes ? CountDistinctHashes(keys, count) : distinct_hashes;
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
  if (!in_place && !columns.hash.Allocate(hash_slots)) return ColumnsOutOfMemory(kept);
  unsigned char* hash_bytes = in_place ? reinterpret_cast<unsigned char*>(keys)
                                       : reinterpret_cast<unsigned char*>(columns.hash.data());
  try {
    if (losers != nullptr && count > kept) {
      // At most count - kept losers (exact repeats are not listed): reserved
      // at once, so that no doubling vector peaks beside the node column.
      losers->hash.reserve(losers->hash.size() + (count - kept));
      losers->node.reserve(losers->node.size() + (count - kept));
    }
    if (const size_t distinct = LayOutFirstOfEachHash(keys, count, hash_bytes, node, kept, losers);
        distinct != kept) {
      // A caller's wrong count (a builder bug), caught before any lookup.
      return Status(StatusCode::kBadArgument,
                    "sorted keys hold " + std::to_string(distinct) +
                        " distinct hashes, the caller counted " + std::to_string(kept));
    }
    if (losers != nullptr) {
      losers->hash.shrink_to_fit();
      losers->node.shrink_to_fit();
    }
  } catch (const std::bad_alloc&) {
    return internal::OutOfMemory("recording collided points");
  }
  if (in_place) {
    AlignedArray<uint32_t> memory = std::move(columns.hash);
    columns.hash.AdoptMemory(std::move(memory), hash_slots);
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
