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

// ---- The lookup rules beyond the first point >= x --------------------------------

// haproxy's nearest point: of the first point >= x (wrapping to slot 0) and
// the point before it (wrapping to slot n - 1), the nearer, the one before
// on a tie: dp = x - prev <= dn = next - x, both mod 2^32. With equal hashes
// kept in insertion order (layout/columns.h) the one before is the newest
// of its hash and the one after the oldest, as in HAProxy's tree. `slot`:
// the lower bound of x, 0..n.
inline uint32_t NearestOfSlot(const SearchView& view, uint32_t x, uint32_t slot) {
  const uint32_t n = view.size;
  const uint32_t next = slot == n ? 0 : slot;
  const uint32_t prev = (slot == 0 ? n : slot) - 1;
  const uint32_t* hash = view.level[0];
  return x - hash[prev] <= hash[next] - x ? prev : next;
}
inline uint32_t DispatchNearestSlot(const SearchView& view, uint32_t x) {
  return NearestOfSlot(view, x, DispatchLowerBoundSlot(view, x));
}

// varnish-shard's slot for x, from its lower bound `slot` (0..n): Varnish's
// shard_lookup bisection, which is the first point >= x, else the last
// point, except where its probes decide otherwise: on a ring of two points
// its first probe is the last index, which it returns; and a probe that
// lands on a point equal to x returns that point, which among several
// equal points need not be the first. The bisection runs only then.
inline uint32_t VarnishSlot(const uint32_t* hash, uint32_t n, uint32_t x, uint32_t slot) {
  if (n == 2) return 1;
  if (slot + 1 < n && hash[slot] == x && hash[slot + 1] == x) {
    uint32_t low = 0, high = n;
    while (true) {
      const uint32_t i = (low + high) / 2;
      if (hash[i] == x) return i;
      if (i == n - 1) return n - 1;
      if (hash[i] < x && hash[i + 1] >= x) return i + 1;
      if (hash[i] > x) {
        if (i == 0) return 0;
        high = i;
      } else {
        low = i;
      }
    }
  }
  return slot == n ? n - 1 : slot;
}

// envoy-ring: the slot of the first 64-bit point >= x, 0..n (n: past the
// last; the sentinel (2^32 - 1, 2^32 - 1) there ends the step loop), from
// the lower bound `slot` of x's high half.
inline uint32_t Slot64OfHighSlot(const SearchView& view, const uint32_t* low, uint64_t x,
                                 uint32_t slot) {
  const uint32_t high = static_cast<uint32_t>(x >> 32);
  const uint32_t low_x = static_cast<uint32_t>(x);
  const uint32_t* hash = view.level[0];
  while (hash[slot] == high && low[slot] < low_x) ++slot;
  return slot;
}
inline uint32_t DispatchLowerBoundSlot64(const SearchView& view, const uint32_t* low, uint64_t x) {
  return Slot64OfHighSlot(view, low, x,
                          DispatchLowerBoundSlot(view, static_cast<uint32_t>(x >> 32)));
}

}  // namespace chash::internal

#endif  // CHASH_ENGINE_SIMD_SEARCH_H_
