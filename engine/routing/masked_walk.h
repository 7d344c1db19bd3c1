// The masked walk shared by masked, atomically-masked and bounded-load
// lookups (include/chash/failover.h explains the exactness rule).
//
// Written against the public Ring / PointCursor API only, so it does not
// depend on the column layout (which the search kernels may change).
#ifndef CHASH_ENGINE_ROUTING_MASKED_WALK_H_
#define CHASH_ENGINE_ROUTING_MASKED_WALK_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "chash/ring.h"
#include "ring/ring_state.h"

namespace chash::internal {

// Walks the points of the subset ring (the available nodes' own ring) from
// the point a lookup of `hash` lands on, in ring order, and returns the node
// of the first one that `accept` takes; Ring::kNoNode after one full turn.
//
// At each of the full ring's hashes, the subset ring's point (if any) belongs
// to the column's winner when it is available, else to the first available
// loser of that hash, the losers being in tie-break order. The loser index is
// positioned by one binary search the first time a winner is unavailable and
// then advances in step with the cursor (it restarts at 0 when the cursor
// wraps), so a walk of k points costs O(k + losers passed + log losers).
//
// A walk that finds nothing would take one full turn: O(points) for every
// key, a storm of CPU when a mask or the loads leave no node that can take a
// key (a mask that only covers ids outside this ring, only drained nodes up,
// every node at capacity). So once a walk has passed max(kMinStepsBeforeScan,
// num_nodes) points, it checks every node once, O(num_nodes), and stops with
// kNoNode if none both has a point and is taken by is_up and accept. This
// at most doubles a long walk and bounds a fruitless one by O(num_nodes)
// instead of O(points) (points are ~160 x weight x nodes). is_up and accept
// must be pure predicates of the node.
inline constexpr uint64_t kMinStepsBeforeScan = 64;

template <typename IsUp, typename Accept>
bool AnyNodeCanTake(const Ring& ring, const IsUp& is_up, const Accept& accept) noexcept {
  for (uint32_t node = 0; node < ring.num_nodes(); ++node) {
    if (ring.has_points(node) && is_up(node) && accept(node)) return true;
  }
  return false;
}

// The rings that keep every point (haproxy, varnish-shard, ketama-md5: no
// collision table). Positions are ring-order slots 0..n-1; a scan gives up
// with kNoNode once it has passed max(kMinStepsBeforeScan, num_nodes)
// points and no node can take the key (AnyNodeCanTake), as WalkAvailable.
template <typename IsUp, typename Accept>
class KeptPointScan {
 public:
  KeptPointScan(const Ring& ring, const IsUp& is_up, const Accept& accept) noexcept
      : ring_(ring),
        is_up_(is_up),
        accept_(accept),
        n_(ring.num_points()),
        scan_at_(std::max<uint64_t>(kMinStepsBeforeScan, ring.num_nodes())) {}

  // The first position from `from` on, `direction` +1 or -1, at most
  // `limit` of them (wrapping around the ring), whose node is up (and,
  // with `accepting`, accepted); n if none.
  uint64_t Find(uint64_t from, int direction, uint64_t limit, bool accepting) noexcept {
    uint64_t position = from % n_;
    for (uint64_t step = 0; step < limit; ++step) {
      if (++steps_ == scan_at_ && !(accepting ? AnyNodeCanTake(ring_, is_up_, accept_)
                                              : AnyNodeCanTake(ring_, is_up_, Always))) {
        return n_;
      }
      const uint32_t node = ring_.At(position).node();
      if (is_up_(node) && (!accepting || accept_(node))) return position;
      position = direction > 0 ? (position + 1 == n_ ? 0 : position + 1)
                               : (position == 0 ? n_ - 1 : position - 1);
    }
    return n_;
  }

 private:
  static bool Always(uint32_t) noexcept { return true; }
  const Ring& ring_;
  const IsUp& is_up_;
  const Accept& accept_;
  const uint64_t n_;
  const uint64_t scan_at_;
  uint64_t steps_ = 0;
};

// Varnish's bisection (routing/lookup_rules.h, VarnishSlot) over the subset ring of
// the available points, where it differs from the first available point >=
// the key, clamped: the subset has two points (answer: its second), or the
// key equals a hash that two available points share (answer: the one its
// probes meet first). Returns the position, or n when neither holds. The
// subset is not materialized (masked lookups allocate nothing): two points
// are counted from the weights when replicas is 1 (with more, two points
// are one backend's, and the answer is the same), and the bisection, O(n)
// a probe, runs only for a key equal to a shared hash (about one key in
// 2^32 / shared hashes).
template <typename IsUp>
uint64_t VarnishSubsetQuirk(const Ring& ring, const IsUp& is_up, uint32_t key,
                            uint64_t lower) noexcept {
  const uint64_t n = ring.num_points();
  const auto up_at = [&](uint64_t position) { return is_up(ring.At(position).node()); };
  // The position of the i-th available point (i from 0).
  const auto nth = [&](uint64_t i) {
    for (uint64_t position = 0; position < n; ++position) {
      if (up_at(position) && i-- == 0) return position;
    }
    return n;
  };
  if (ring.options().varnish.replicas == 1) {
    uint64_t weight = 0;
    for (uint32_t node = 0; node < ring.num_nodes() && weight <= 2; ++node) {
      if (is_up(node)) weight += ring.node(node).weight;
    }
    if (weight == 2) {
      const uint64_t second = nth(1);
      if (second < n) return second;  // two backends of one point each
    }
  }
  uint32_t shared = 0;
  for (uint64_t position = lower; position < n && ring.At(position).hash() == key; ++position) {
    shared += up_at(position) ? 1 : 0;
  }
  if (shared < 2) return n;
  uint64_t m = 0;
  for (uint64_t position = 0; position < n; ++position) m += up_at(position) ? 1 : 0;
  uint64_t low = 0, high = m;
  while (true) {
    const uint64_t i = (low + high) / 2;
    const uint64_t at = nth(i);
    const uint32_t point = ring.At(at).hash();
    if (point == key) return at;
    if (i == m - 1) return at;
    const uint64_t next = nth(i + 1);
    if (point < key && ring.At(next).hash() >= key) return next;
    if (point > key) {
      if (i == 0) return at;
      high = i;
    } else {
      low = i;
    }
  }
}

// haproxy and varnish-shard: the subset ring's point for the key (the
// nearest available point; the first available point at or after the key,
// else the last available one), then HAProxy's and Varnish's walk on from
// it (the next point, wrapping) to the first point `accept` takes.
template <typename IsUp, typename Accept>
uint32_t WalkAvailableKept(const Ring& ring, uint32_t hash, const IsUp& is_up,
                           const Accept& accept) noexcept {
  const uint64_t n = ring.num_points();
  KeptPointScan<IsUp, Accept> scan(ring, is_up, accept);
  const uint64_t lower = LowerBoundSlot(ring, hash);  // 0..n
  uint64_t start = n;
  if (ring.lookup_rule() == LookupRule::kNearest) {
    // Both neighbours in the tree of the available nodes: the first
    // available point from the lower bound on (wrapping), the first before
    // it (wrapping): the same point when it is the only one.
    const uint64_t next = scan.Find(lower == n ? 0 : lower, +1, n, false);
    if (next == n) return Ring::kNoNode;
    const uint64_t prev = scan.Find(lower == 0 ? n - 1 : lower - 1, -1, n, false);
    const uint32_t dp = hash - ring.At(prev).hash();
    const uint32_t dn = ring.At(next).hash() - hash;
    start = dp <= dn ? prev : next;
  } else {  // kSuccessorClamped
    if (lower < n) start = scan.Find(lower, +1, n - lower, false);
    if (start == n && lower > 0) start = scan.Find(lower - 1, -1, lower, false);
    if (start == n) return Ring::kNoNode;
    if (const uint64_t quirk = VarnishSubsetQuirk(ring, is_up, hash, lower); quirk < n) {
      start = quirk;
    }
  }
  const uint32_t node = ring.At(start).node();
  if (accept(node)) return node;
  const uint64_t taken = scan.Find(start + 1, +1, n - 1, true);
  return taken == n ? Ring::kNoNode : ring.At(taken).node();
}

// is_up(node) -> bool: the mask. accept(node) -> bool: stop here?
template <typename IsUp, typename Accept>
uint32_t WalkAvailable(const Ring& ring, uint32_t hash, const IsUp& is_up,
                       const Accept& accept) noexcept {
  if (ring.empty()) return Ring::kNoNode;
  if (ring.lookup_rule() == LookupRule::kNearest ||
      ring.lookup_rule() == LookupRule::kSuccessorClamped) {
    return WalkAvailableKept(ring, hash, is_up, accept);
  }
  PointCursor cursor = ring.WalkFromHash(hash);
  // The common case, the key's own point taken: no walk state to set up.
  // (If its node is up but not accepted, the loop below moves on from it.)
  if (const uint32_t node = cursor.node(); is_up(node) && accept(node)) return node;
  const CollisionLosers losers = ring.collision_losers();
  const uint32_t* loser_hash = losers.hashes.data();
  const uint16_t* loser_node = losers.nodes.data();
  const size_t num_losers = losers.hashes.size();
  constexpr size_t kUnpositioned = ~size_t{0};
  size_t at = kUnpositioned;  // first loser with hash >= the cursor's
  uint32_t previous_hash = cursor.hash();
  const uint64_t points = ring.num_points();
  const uint64_t scan_at = std::max<uint64_t>(kMinStepsBeforeScan, ring.num_nodes());
  for (uint64_t step = 0; step < points; ++step, cursor.Advance()) {
    if (step == scan_at && !AnyNodeCanTake(ring, is_up, accept)) return Ring::kNoNode;
    const uint32_t point_hash = cursor.hash();
    if (point_hash < previous_hash) at = 0;  // wrapped to the smallest hash
    previous_hash = point_hash;
    uint32_t node = cursor.node();
    if (!is_up(node)) {
      node = Ring::kNoNode;
      if (num_losers == 0) continue;
      if (at == kUnpositioned) {
        at = static_cast<size_t>(std::lower_bound(loser_hash, loser_hash + num_losers, point_hash) -
                                 loser_hash);
      }
      while (at < num_losers && loser_hash[at] < point_hash) ++at;
      for (size_t i = at; i < num_losers && loser_hash[i] == point_hash; ++i) {
        if (is_up(loser_node[i])) {
          node = loser_node[i];
          break;
        }
      }
      if (node == Ring::kNoNode) continue;
    }
    if (accept(node)) return node;
  }
  return Ring::kNoNode;
}

}  // namespace chash::internal

#endif  // CHASH_ENGINE_ROUTING_MASKED_WALK_H_
