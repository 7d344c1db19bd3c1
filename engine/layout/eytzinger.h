// Index arithmetic of the 1-based implicit binary tree behind the columns
// (see columns.h). Pure functions of the slot index and the size n; nothing
// is stored per point.
#ifndef CHASH_ENGINE_LAYOUT_EYTZINGER_H_
#define CHASH_ENGINE_LAYOUT_EYTZINGER_H_

#include <bit>
#include <cstdint>

namespace chash::internal {

// Slot of the smallest element: the leftmost descent from the root. n >= 1.
inline uint32_t EytzingerFirst(uint32_t n) noexcept {
  return uint32_t{1} << (std::bit_width(n) - 1);
}

// Slot of the in-order successor of `slot`, or 0 if `slot` holds the largest
// element. O(1): one shift each way, no loop.
inline uint32_t EytzingerNext(uint32_t slot, uint32_t n) noexcept {
  const uint64_t right = uint64_t{slot} * 2 + 1;
  if (right <= n) {
    // Leftmost descendant of the right child: shift left while still <= n.
    const int shift = static_cast<int>(std::bit_width(n) - std::bit_width(right));
    uint64_t leftmost = right << shift;
    if (leftmost > n) leftmost >>= 1;
    return static_cast<uint32_t>(leftmost);
  }
  // Climb while we are a right child, then once more: the first ancestor of
  // which we are in the left subtree.
  return slot >> (std::countr_one(slot) + 1);
}

// Number of levels of the tree (the depth of the deepest slot + 1).
inline int EytzingerLevels(uint32_t n) noexcept { return static_cast<int>(std::bit_width(n)); }

}  // namespace chash::internal

#endif  // CHASH_ENGINE_LAYOUT_EYTZINGER_H_
