// The lookup rules of the other programs beyond "the first point >= x":
// HAProxy's nearest point, Varnish's clamped bisection, Envoy's 64-bit
// points. Scalar steps around the SIMD lower bound (simd/search.h), which
// Ring's lookups (ring/ring.cc) and the masked walks (routing/masked_walk.h)
// share; each is O(1) past that search but Varnish's rare bisection (O(log n)).
#ifndef CHASH_ENGINE_ROUTING_LOOKUP_RULES_H_
#define CHASH_ENGINE_ROUTING_LOOKUP_RULES_H_

#include <cstdint>

#include "layout/search_index.h"
#include "simd/search.h"

namespace chash::internal {

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

#endif  // CHASH_ENGINE_ROUTING_LOOKUP_RULES_H_
