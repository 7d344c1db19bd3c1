// The ketama point chains of a flavor ring, as sort keys.
#ifndef CHASH_ENGINE_BUILD_POINT_CHAINS_H_
#define CHASH_ENGINE_BUILD_POINT_CHAINS_H_

#include <cstdint>
#include <span>

#include "builder/columns_builder.h"

namespace chash::internal {

// One node's chain: `count` points, each the CRC32 of the previous point's
// hash (4 little-endian bytes, 0 before the first) continued from the raw
// CRC state after the node's HOST "\0" PORT bytes (tests/reference/COMPATIBILITY.md §1).
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

// The same keys, sorted ascending, made on up to `threads` threads: the
// chains are split into one run per thread and generated twice, first to
// count each run's points per bucket (the top bits of the hash: CRC32 chains
// are uniform, so buckets are even), then to write each point into its
// bucket's slice; then every bucket is sorted on its own (Highway VQSort, one
// sorter a thread; buckets of ~32K keys, at most 2^10 buckets). A set of u64
// keys has one sorted order, so `keys` comes out bit-identical whatever the
// thread count. Memory: `keys` (`total` = Σ count slots) plus bucket counters
// (8 bytes x threads x at most 2^10 buckets), one distinct count a bucket and
// the sorters' scratch.
// `parts` receives one part of the sorted keys a thread, cut at bucket
// boundaries (no run of equal hashes crosses one), with each part's number
// of distinct hashes, counted while its buckets were in cache: what
// BuildColumnsFromSortedKeys lays out on as many threads. False: out of
// memory.
bool GenerateSortedPointKeys(std::span<const PointChain> chains, uint64_t* keys, uint64_t total,
                             unsigned threads, SortedKeyParts& parts) noexcept;

}  // namespace chash::internal

#endif  // CHASH_ENGINE_BUILD_POINT_CHAINS_H_
