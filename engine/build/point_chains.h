// The ketama point chains of a flavour ring, as sort keys.
#ifndef CHASH_ENGINE_BUILD_POINT_CHAINS_H_
#define CHASH_ENGINE_BUILD_POINT_CHAINS_H_

#include <cstdint>
#include <span>

namespace chash::internal {

// One node's chain: `count` points, each the CRC32 of the previous point's
// hash (4 little-endian bytes, 0 before the first) continued from the raw
// CRC state after the node's HOST "\0" PORT bytes (compat-spec.md §1).
struct PointChain {
  uint32_t base_state;
  uint64_t count;
  uint32_t rank;  // tie-break rank of the node
  uint32_t node;
};

// Writes the chains' points as PointSortKey()s into `keys`, chain after
// chain (Σ count keys). Each point depends on the one before, so a lone chain
// waits on its table lookups; four chains are hashed interleaved instead.
void GeneratePointKeys(std::span<const PointChain> chains, uint64_t* keys) noexcept;

}  // namespace chash::internal

#endif  // CHASH_ENGINE_BUILD_POINT_CHAINS_H_
