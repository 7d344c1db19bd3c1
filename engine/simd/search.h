// Entry points of the per-target lookup kernels. Each call reads the active
// target once (the best one this CPU supports, or the one ForceTarget
// chose; simd/search.cc), then runs the whole batch there.
#ifndef CHASH_ENGINE_SIMD_SEARCH_H_
#define CHASH_ENGINE_SIMD_SEARCH_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "layout/search_index.h"

// The single-lookup entry points (Ring::FindNode and FindNodeByHash, each
// target's LowerBoundSlotImpl and FindNodeByKeyImpl) start on a cache line:
// a cold lookup then fetches the fewest code lines, whatever else their
// files hold (a function 16 bytes into a line once cost a cold key lookup
// a line more).
#define CHASH_LINE_ALIGNED __attribute__((aligned(64)))

namespace chash::internal {

// Slot of the first point with hash >= x, or view.size if there is none (the
// wrap-around; the node column's sentinel there holds slot 0's node).
// view.size >= 1 for all of these. One lookup at a time: the kernel of the
// chosen target through one cached pointer (HWY_DYNAMIC_DISPATCH would also
// call into libhwy for the chosen target on every lookup). ForceTarget
// re-resolves it.
using LowerBoundSlotFunction = uint32_t (*)(const SearchView&, uint32_t);
extern std::atomic<LowerBoundSlotFunction> lower_bound_slot_kernel;
inline uint32_t DispatchLowerBoundSlot(const SearchView& view, uint32_t x) {
  return lower_bound_slot_kernel.load(std::memory_order_relaxed)(view, x);
}
inline uint32_t DispatchFindNodeByHash(const SearchView& view, uint32_t x) {
  return view.node[DispatchLowerBoundSlot(view, x)];
}
// Node of one key: its CRC32 inlined into the search (carry-less multiply on
// x86 targets from SSE4 on; elsewhere a call to the best CRC32), through one
// cached pointer as above. One kernel instead of a CRC call then a search
// call leaves fewer instructions a lookup, so the core keeps more
// independent lookups in flight.
using FindNodeByKeyFunction = uint32_t (*)(const SearchView&, const char*, size_t);
extern std::atomic<FindNodeByKeyFunction> find_node_by_key_kernel;
inline uint32_t DispatchFindNodeByKey(const SearchView& view, std::string_view key) {
  return find_node_by_key_kernel.load(std::memory_order_relaxed)(view, key.data(), key.size());
}
// out[i] = node of hashes[i]; groups of lookups descend together.
void DispatchFindNodesByHash(const SearchView& view, const uint32_t* hashes, size_t count,
                             uint32_t* out);
// The same for keys, CRC32 included.
void DispatchFindNodes(const SearchView& view, const std::string_view* keys, size_t count,
                       uint32_t* out);
// out[i] = LowerBoundSlot of hashes[i] (0..view.size), for the rules that
// read more than the slot's node (nearest, 64-bit points).
void DispatchFindSlotsByHash(const SearchView& view, const uint32_t* hashes, size_t count,
                             uint32_t* out);
// words[4 i + j] = word j of MD5(messages[i]) (the digest's bytes 4j..4j+3,
// little-endian), for i < count: the messages a SIMD lane each
// (hash/md5_lanes-inl.h). For batches; one message is faster through
// Md5 (hash/program_hashes.h).
void DispatchMd5Messages(const std::string_view* messages, size_t count, uint32_t* words);

}  // namespace chash::internal

#endif  // CHASH_ENGINE_SIMD_SEARCH_H_
