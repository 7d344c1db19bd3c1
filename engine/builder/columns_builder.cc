#include "builder/columns_builder.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "builder/parallel.h"
#include "builder/sorted_keys.h"
#include "util/out_of_memory.h"

namespace chash::internal {
namespace {

// Where one part's layout writes, and what it found.
struct PartOutput {
  unsigned char* hash_bytes;  // slot k's 4 bytes at hash_bytes + 4k
  uint16_t* node;             // slot k at node[k]
  size_t slots;               // the slots the plan gives the part
  uint32_t* loser_hash;       // room for `loser_room` losers, or nullptr
  uint16_t* loser_node;
  size_t loser_room;
  size_t distinct = 0;  // out: distinct hashes seen (more than `slots`: a wrong plan)
  size_t losers = 0;    // out: losers written
};

// One pass over sorted keys: the first key of each equal-hash run goes to
// the part's next slot; the others go to its losers (if any) in key order,
// minus exact repeats of the previous key (a node whose chain repeats a hash
// contends only once). hash_bytes may be `keys` itself: slot k's 4 bytes
// overwrite keys[k / 2], read already (k <= i), and memcpy keeps the two
// views of the memory apart. Writes at most `slots` slots and `loser_room`
// losers, so a wrong plan is found (distinct != slots) without a write past
// either.
void LayOutFirstOfEachHash(const uint64_t* keys, size_t count, PartOutput& out) noexcept {
  size_t kept = 0;
  size_t losers = 0;
  uint64_t previous = 0;
  for (size_t i = 0; i < count; ++i) {
    uint64_t key;
    std::memcpy(&key, keys + i, sizeof key);
    const uint32_t hash = SortKeyHash(key);
    if (i == 0 || hash != SortKeyHash(previous)) {
      if (kept < out.slots) {
        out.node[kept] = SortKeyNode(key);
        std::memcpy(out.hash_bytes + kept * sizeof hash, &hash, sizeof hash);
      }
      ++kept;
    } else if (out.loser_hash != nullptr && key != previous) {
      if (losers < out.loser_room) {
        out.loser_hash[losers] = hash;
        out.loser_node[losers] = SortKeyNode(key);
      }
      ++losers;
    }
    previous = key;
  }
  out.distinct = kept;
  out.losers = losers;
}

// Why `parts` cannot describe these sorted keys, or "" if it can.
std::string PartsProblem(const uint64_t* keys, size_t count, const SortedKeyParts& parts) {
  const size_t n = parts.parts();
  if (n == 0 || parts.slot_begin.size() != n + 1 || parts.key_begin.front() != 0 ||
      parts.slot_begin.front() != 0 || parts.key_begin.back() != count) {
    return "the parts do not cover the " + std::to_string(count) + " sorted keys";
  }
  for (size_t p = 0; p < n; ++p) {
    const uint64_t keys_in = parts.key_begin[p + 1] - parts.key_begin[p];
    if (parts.key_begin[p + 1] < parts.key_begin[p] ||
        parts.slot_begin[p + 1] < parts.slot_begin[p] ||
        parts.slot_begin[p + 1] - parts.slot_begin[p] > keys_in) {
      return "part " + std::to_string(p) + " has more slots than keys or runs backwards";
    }
    const uint64_t cut = parts.key_begin[p];
    if (cut > 0 && cut < count && SortKeyHash(keys[cut - 1]) == SortKeyHash(keys[cut])) {
      return "part " + std::to_string(p) + " starts inside a run of equal hashes";
    }
  }
  return "";
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
  if (!SortKeysInPlace(keys, count)) {
    return internal::OutOfMemory("sorting ring points");
  }
  return BuildColumnsFromSortedKeys(keys, count, columns, losers);
}

SortedKeyParts OnePart(uint64_t count, uint64_t distinct) {
  return SortedKeyParts{{0, count}, {0, distinct}};
}

Status BuildColumnsFromSortedKeys(uint64_t* keys, size_t count, Columns& columns,
                                  CollisionTable* losers, const SortedKeyParts* given_parts) {
  SortedKeyParts counted;
  const SortedKeyParts& parts = given_parts == nullptr ? counted : *given_parts;
  std::vector<PartOutput> out;
  try {
    if (given_parts == nullptr) counted = OnePart(count, CountDistinctHashes(keys, count));
    if (std::string problem = PartsProblem(keys, count, parts); !problem.empty()) {
      return Status(StatusCode::kBadArgument, std::move(problem));
    }
    out.resize(parts.parts());
  } catch (const std::bad_alloc&) {
    return internal::OutOfMemory("laying out ring columns");
  }
  const size_t kept = parts.slot_begin.back();
  const size_t part_count = parts.parts();
  columns.size = static_cast<uint32_t>(kept);
  const bool in_place = keys == KeysInColumns(columns);
  if (kept == 0) {
    if (count != 0) {
      return Status(StatusCode::kBadArgument,
                    std::to_string(count) + " sorted keys, the caller counted 0 distinct hashes");
    }
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
  const size_t losers_before = losers != nullptr ? losers->hash.size() : 0;
  try {
    if (losers != nullptr) {
      // At most count - kept losers (exact repeats are not listed): sized at
      // once, so that no doubling vector peaks beside the node column; each
      // part writes from its own offset and the gaps close below.
      losers->hash.resize(losers_before + (count - kept));
      losers->node.resize(losers_before + (count - kept));
    }
  } catch (const std::bad_alloc&) {
    return internal::OutOfMemory("recording collided points");
  }
  size_t loser_offset = losers_before;
  for (size_t p = 0; p < part_count; ++p) {
    const size_t first_key = parts.key_begin[p];
    const size_t first_slot = parts.slot_begin[p];
    const size_t slots = parts.slot_begin[p + 1] - first_slot;
    const size_t room = parts.key_begin[p + 1] - first_key - slots;
    // In place, part p > 0 stages its hashes over its own keys: the slots
    // below its first key still hold keys of the parts before it.
    unsigned char* part_hashes = in_place && p > 0
                                     ? reinterpret_cast<unsigned char*>(keys + first_key)
                                     : hash_bytes + first_slot * sizeof(uint32_t);
    out[p] = {part_hashes,
              node + first_slot,
              slots,
              losers != nullptr ? losers->hash.data() + loser_offset : nullptr,
              losers != nullptr ? losers->node.data() + loser_offset : nullptr,
              room};
    loser_offset += room;
  }
  ParallelFor(static_cast<unsigned>(part_count), static_cast<unsigned>(part_count),
              [&](unsigned p) {
                const size_t first_key = parts.key_begin[p];
                LayOutFirstOfEachHash(keys + first_key, parts.key_begin[p + 1] - first_key,
                                      out[p]);
              });
  size_t distinct = 0;
  bool plan_holds = true;
  for (const PartOutput& part : out) {
    distinct += part.distinct;
    plan_holds = plan_holds && part.distinct == part.slots;
  }
  if (!plan_holds) {
    // A caller's wrong count (a builder bug), caught before any lookup.
    if (losers != nullptr) {
      losers->hash.resize(losers_before);
      losers->node.resize(losers_before);
    }
    return Status(StatusCode::kBadArgument,
                  "sorted keys hold " + std::to_string(distinct) +
                      " distinct hashes, the caller counted " + std::to_string(kept));
  }
  // In order: part p's final slots end at part p + 1's first slot, below
  // where part p + 1 staged its hashes (4 bytes a slot over 8 a key).
  for (size_t p = 1; in_place && p < part_count; ++p) {
    std::memmove(hash_bytes + parts.slot_begin[p] * sizeof(uint32_t), out[p].hash_bytes,
                 out[p].slots * sizeof(uint32_t));
  }
  if (losers != nullptr) {
    size_t end = losers_before;
    for (const PartOutput& part : out) {
      // Forward, to an offset at or below the part's own: std::copy is safe.
      const size_t from = static_cast<size_t>(part.loser_hash - losers->hash.data());
      std::copy_n(losers->hash.begin() + from, part.losers, losers->hash.begin() + end);
      std::copy_n(losers->node.begin() + from, part.losers, losers->node.begin() + end);
      end += part.losers;
    }
    losers->hash.resize(end);
    losers->node.resize(end);
    try {
      losers->hash.shrink_to_fit();
      losers->node.shrink_to_fit();
    } catch (const std::bad_alloc&) {
      return internal::OutOfMemory("recording collided points");
    }
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
  return columns.index.Build(columns.hash.data(), columns.size);
}

}  // namespace chash::internal
