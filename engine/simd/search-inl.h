// Per-target lookup kernels, compiled once for every Highway target by
// foreach_target.h (see search.cc). Re-includable: the include guard toggles
// per target.
//
// A single lookup counts the kWindowKeys hashes around the slot its bucket
// of the slot table predicts (layout/search_index.h), and descends only when
// that count does not decide: a cold lookup is two round trips instead of
// the descent's three or four.
//
// The descent (batches, and the single lookups the window does not decide)
// walks the 16-ary S+ tree of layout/search_index.h: enter through the slot
// table, then one 64-byte block per level, each searched with one SIMD
// compare and a count (CountTrue) instead of four binary-search steps: it
// touches a quarter of a binary layout's lines, and fewer instructions per
// lookup let the core overlap more independent lookups. How this layout was
// chosen over the others measured: bench/README.md, "Layout lab".
#if defined(CHASH_ENGINE_SIMD_SEARCH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CHASH_ENGINE_SIMD_SEARCH_INL_H_
#undef CHASH_ENGINE_SIMD_SEARCH_INL_H_
#else
#define CHASH_ENGINE_SIMD_SEARCH_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "layout/search_index.h"

HWY_BEFORE_NAMESPACE();
namespace chash {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

// Number of the 16 keys at `keys` that are < x: one 64-byte block (aligned)
// or a window starting at any key (unaligned).
template <bool kAligned>
HWY_INLINE uint32_t CountLess16(const uint32_t* HWY_RESTRICT keys, uint32_t x) {
  const hn::CappedTag<uint32_t, internal::kBlockKeys> d;
  const size_t lanes = hn::Lanes(d);
  const auto vx = hn::Set(d, x);
#if HWY_TARGET == HWY_NEON || HWY_TARGET == HWY_SSSE3
  // NEON has no movemask and SSSE3 no popcnt (CountTrue would emulate it):
  // add up the all-ones (-1) lanes, reduce once.
  auto minus_count = hn::Zero(d);
  for (size_t i = 0; i < internal::kBlockKeys; i += lanes) {
    const auto v = kAligned ? hn::Load(d, keys + i) : hn::LoadU(d, keys + i);
    minus_count = hn::Add(minus_count, hn::VecFromMask(d, hn::Lt(v, vx)));
  }
  return 0u - hn::GetLane(hn::SumOfLanes(d, minus_count));
#else
  size_t count = 0;
  for (size_t i = 0; i < internal::kBlockKeys; i += lanes) {
    const auto v = kAligned ? hn::Load(d, keys + i) : hn::LoadU(d, keys + i);
    count += hn::CountTrue(d, hn::Lt(v, vx));
  }
  return static_cast<uint32_t>(count);
#endif
}

// Memory safety on any bytes. The slot table and the levels may come from a
// file (a stored index, kMap): every position read from them or counted in
// them is clamped to the last valid one of its level (n >> 4l at level l,
// n at the leaves: the sentinel slot), so damaged bytes can give a wrong
// answer but never a read outside the arrays. A sound index never reaches a
// clamp: each costs one min on the descent's chain.

// Position at the entry level of the first key >= x (slot table, then one
// 16-key window).
HWY_INLINE uint32_t EntryPosition(const internal::SearchView& v, uint32_t x) {
  const uint32_t start =
      HWY_MIN(v.table[x >> v.table_shift] >> v.entry_shift, v.size >> v.entry_shift);
  return HWY_MIN(start + CountLess16<false>(v.level[v.entry_level] + start, x), v.entry_last);
}

// Slot of the first point with hash >= x by descent (see LowerBoundSlot).
// One block per level; the node line is prefetched with the leaf line.
HWY_INLINE uint32_t DescendToSlot(const internal::SearchView& v, uint32_t x) {
  uint32_t pos = EntryPosition(v, x);
  if (v.entry_level == 0) return pos;
  for (uint32_t level = v.entry_level - 1; level != 0; --level) {
    pos = HWY_MIN(16 * pos + CountLess16<true>(v.level[level] + 16 * pos, x),
                  v.size >> (4 * level));
  }
  hwy::Prefetch(v.node + 16 * pos);
  return HWY_MIN(16 * pos + CountLess16<true>(v.level[0] + 16 * pos, x), v.size);
}

// Slot of the first point with hash >= x; v.size if x is above every point
// (the sentinel slot, whose node is the wrap-around answer). n >= 1.
//   The answer a lies in [lo, hi] = [table[p], table[p + 1]]. The window
// [w, w + W) starts half a window before the guess (not before lo, not past
// window_last); c = its keys < x. 0 < c < W: a = w + c. c = 0: a <= w, so
// a = w if w <= lo. c = W: a >= w + W, so a = w + W if w + W >= hi.
// Otherwise the guess was off by more than half a window: descend.
HWY_INLINE uint32_t LowerBoundSlot(const internal::SearchView& v, uint32_t x) {
  constexpr uint32_t kWindow = internal::kWindowKeys;
  if (v.interpolate) [[likely]] {
    const uint32_t* bucket = v.table + (x >> v.table_shift);
    const uint32_t lo = bucket[0], hi = bucket[1];
    const uint32_t offset = x & v.offset_mask;
    const uint32_t guess =
        lo + static_cast<uint32_t>((uint64_t{hi - lo} * offset) >> v.table_shift);
    hwy::Prefetch(v.node + guess);
    uint32_t w = guess - HWY_MIN(kWindow / 2, guess - lo);
    w = HWY_MIN(w, v.window_last);
    const uint32_t c = CountLess16<false>(v.level[0] + w, x) +
                       CountLess16<false>(v.level[0] + w + internal::kBlockKeys, x);
    // One branch, taken the same way for nearly every query: which of the
    // three cases decides varies from query to query (small rings' buckets
    // hold a point or none, so c is 0 or 1 at random).
    const bool inside = c - 1 < kWindow - 1;
    const bool at_lo = (c == 0) & (w <= lo);
    const bool at_hi = (c == kWindow) & (w + kWindow >= hi);
    if (inside | at_lo | at_hi) [[likely]] {
      return HWY_MIN(w + c, v.size);
    }
  }
  return DescendToSlot(v, x);
}

// out[j] = node of LowerBoundSlot(x[j]) (kSlots: the slot itself) for a
// group of kGroup queries that descend together, level by level: each
// query's next block is prefetched as soon as it is known and loaded one
// pass over the group later, so kGroup misses are in flight per level; at
// the leaves the node line is prefetched along with the hash line.
template <size_t kGroup, bool kSlots = false>
HWY_INLINE void FindNodesGroup(const internal::SearchView& v, const uint32_t* HWY_RESTRICT x,
                               uint32_t* HWY_RESTRICT out) {
  uint32_t pos[kGroup];
  const uint32_t entry = v.entry_level;
  if (entry == 0) {
    for (size_t j = 0; j < kGroup; ++j) {
      const uint32_t slot = EntryPosition(v, x[j]);
      out[j] = kSlots ? slot : v.node[slot];
    }
    return;
  }
  const uint32_t* below = v.level[entry - 1];
  for (size_t j = 0; j < kGroup; ++j) hwy::Prefetch(v.table + (x[j] >> v.table_shift));
  for (size_t j = 0; j < kGroup; ++j) {
    pos[j] = EntryPosition(v, x[j]);
    hwy::Prefetch(below + 16 * pos[j]);
    if (entry == 1) hwy::Prefetch(v.node + 16 * pos[j]);
  }
  for (uint32_t level = entry - 1; level != 0; --level) {
    const uint32_t* keys = v.level[level];
    below = v.level[level - 1];
    const uint32_t last = v.size >> (4 * level);
    for (size_t j = 0; j < kGroup; ++j) {
      pos[j] = HWY_MIN(16 * pos[j] + CountLess16<true>(keys + 16 * pos[j], x[j]), last);
      hwy::Prefetch(below + 16 * pos[j]);
      if (level == 1) hwy::Prefetch(v.node + 16 * pos[j]);
    }
  }
  for (size_t j = 0; j < kGroup; ++j) {
    const uint32_t slot =
        HWY_MIN(16 * pos[j] + CountLess16<true>(v.level[0] + 16 * pos[j], x[j]), v.size);
    out[j] = kSlots ? slot : v.node[slot];
  }
}

// Rings whose index and columns outgrow the L2 cache gain from more misses
// in flight; smaller ones from fewer live positions.
inline constexpr uint32_t kLargeGroupMinPoints = 1u << 17;

template <bool kSlots = false>
HWY_INLINE void FindNodesByHashSpan(const internal::SearchView& v,
                                    const uint32_t* HWY_RESTRICT hashes, size_t count,
                                    uint32_t* HWY_RESTRICT out) {
  size_t i = 0;
  if (v.size >= kLargeGroupMinPoints) {
    for (; i + 32 <= count; i += 32) FindNodesGroup<32, kSlots>(v, hashes + i, out + i);
  }
  for (; i + 16 <= count; i += 16) FindNodesGroup<16, kSlots>(v, hashes + i, out + i);
  for (; i + 4 <= count; i += 4) FindNodesGroup<4, kSlots>(v, hashes + i, out + i);
  for (; i < count; ++i) {
    const uint32_t slot = DescendToSlot(v, hashes[i]);
    out[i] = kSlots ? slot : v.node[slot];
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace chash
HWY_AFTER_NAMESPACE();

#endif  // CHASH_ENGINE_SIMD_SEARCH_INL_H_
