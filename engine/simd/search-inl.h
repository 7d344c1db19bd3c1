// Per-target lookup kernels, compiled once for every Highway target by
// foreach_target.h (see search.cc). Re-includable: the include guard toggles
// per target.
//
// The descent is the branch-free Eytzinger search of Khuong & Morin (2017):
// every level does k = 2k + (hash[k] < x), a fixed number of times, then the
// trailing "went right" steps are stripped to recover the lower bound.
#if defined(CHASH_ENGINE_SIMD_SEARCH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CHASH_ENGINE_SIMD_SEARCH_INL_H_
#undef CHASH_ENGINE_SIMD_SEARCH_INL_H_
#else
#define CHASH_ENGINE_SIMD_SEARCH_INL_H_
#endif

#include <bit>
#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace chash {
namespace HWY_NAMESPACE {

// Slot of the first hash >= x, or 0 if x is above every hash (the caller's
// wrap-around: node[0] holds the smallest point's node). n >= 1.
// O(log n), branch-free; reads one hash per level.
HWY_INLINE uint32_t LowerBoundSlot(const uint32_t* HWY_RESTRICT hash, uint32_t n,
                                   uint32_t x) {
  const int levels = std::bit_width(n);
  uint32_t k = 1;
  // Levels 0..levels-2 are complete, so every k read there is <= n.
  for (int level = 0; level + 1 < levels; ++level) {
    k = 2 * k + static_cast<uint32_t>(hash[k] < x);
  }
  // The last level may be partial: a missing slot (k > n) counts as "go
  // right", which the stripping below undoes exactly.
  const uint32_t readable = k <= n ? k : 0;
  k = 2 * k + static_cast<uint32_t>((k > n) | (hash[readable] < x));
  return k >> (std::countr_one(k) + 1);
}

HWY_INLINE uint32_t NodeForHash(const uint32_t* HWY_RESTRICT hash,
                                const uint16_t* HWY_RESTRICT node, uint32_t n,
                                uint32_t x) {
  return node[LowerBoundSlot(hash, n, x)];
}

}  // namespace HWY_NAMESPACE
}  // namespace chash
HWY_AFTER_NAMESPACE();

#endif  // CHASH_ENGINE_SIMD_SEARCH_INL_H_
