// The points that collisions dropped, kept beside the columns so that a
// lookup under a node mask can answer exactly as the ring of the available
// nodes would (include/chash/failover.h).
//
//   struct CollisionTable {    // c = losers: points dropped by the dedup
//     uint32_t hash[c];        // ascending; the losers of one hash adjacent
//     uint16_t node[c];        // parallel; at one hash in tie-break order
//   };                         // (the best-ranked loser first)
//
// At a hash where several points coincide the columns keep the best-ranked
// one; the others are listed here, each distinct (hash, node) once (a node
// whose own chain repeats a hash adds nothing). 6 bytes a loser; not part of
// the 6-byte columns, and counted on its own line (MemoryUsage).
#ifndef CHASH_ENGINE_COLLISION_TABLE_H_
#define CHASH_ENGINE_COLLISION_TABLE_H_

#include <cstdint>
#include <span>
#include <vector>

namespace chash::internal {

struct CollisionTable {
  std::vector<uint32_t> hash;
  std::vector<uint16_t> node;
  // A table that lives in a mapped snapshot: these instead of the vectors
  // (which stay empty).
  std::span<const uint32_t> borrowed_hash;
  std::span<const uint16_t> borrowed_node;

  std::span<const uint32_t> hashes() const noexcept {
    return borrowed_hash.empty() ? std::span<const uint32_t>(hash) : borrowed_hash;
  }
  std::span<const uint16_t> nodes() const noexcept {
    return borrowed_node.empty() ? std::span<const uint16_t>(node) : borrowed_node;
  }
  // The table's bytes wherever they live, in the vectors or in a mapped
  // snapshot, as the columns count theirs: 6 bytes a loser at least.
  uint64_t allocated_bytes() const noexcept {
    return hash.capacity() * sizeof(uint32_t) + node.capacity() * sizeof(uint16_t) +
           borrowed_hash.size_bytes() + borrowed_node.size_bytes();
  }
};

}  // namespace chash::internal

#endif  // CHASH_ENGINE_COLLISION_TABLE_H_
