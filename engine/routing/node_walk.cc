// NodeWalk: the failover order over distinct (available) nodes.
#include <algorithm>
#include <cstring>

#include "chash/failover.h"
#include "routing/distinct_walk.h"
#include "routing/masked_walk.h"

namespace chash {

NodeWalk::NodeWalk(const Ring& ring, const NodeMask* mask, uint32_t hash,
                   std::span<uint64_t> seen) noexcept {
  if (ring.empty() || seen.size() < SeenWords(ring)) return;
  ring_ = &ring;
  mask_ = mask;
  cursor_ = ring.WalkFromHash(hash);
  seen_ = seen.data();
  std::fill(seen.begin(), seen.begin() + static_cast<ptrdiff_t>(SeenWords(ring)), 0);
  points_ = ring.num_points();
  previous_hash_ = cursor_.hash();
  if (mask == nullptr) {
    reachable_ = ring.nodes_with_points();
    counted_ = true;
  }
}

uint32_t NodeWalk::Next() noexcept {
  if (ring_ == nullptr) return Ring::kNoNode;
  const Ring& ring = *ring_;
  const uint32_t num_nodes = ring.num_nodes();
  if (mask_ == nullptr) {  // Ring::WalkDistinct's walk
    uint64_t points_left = points_ - steps_;
    uint32_t nodes_left = reachable_ - found_;
    const uint32_t node =
        internal::NextUnseenNode(cursor_, seen_, num_nodes, points_left, nodes_left);
    steps_ = points_ - points_left;
    found_ = reachable_ - nodes_left;
    if (node == Ring::kNoNode) ring_ = nullptr;  // done: later calls answer at once
    return node;
  }
  const uint64_t count_at = std::max<uint64_t>(internal::kMinStepsBeforeScan, num_nodes);
  const CollisionLosers losers = ring.collision_losers();
  while (steps_ < points_) {
    if (counted_ && found_ >= reachable_) break;
    if (!counted_ && steps_ >= count_at) {
      // Every node the walk can still yield: available, with a kept or a
      // lost point. A walk with none left stops here, not after a turn.
      uint32_t reachable = 0;
      for (uint32_t node = 0; node < num_nodes; ++node) {
        reachable += ring.has_points(node) && mask_->available(node) ? 1 : 0;
      }
      reachable_ = reachable;
      counted_ = true;
      continue;
    }
    const uint32_t hash = cursor_.hash();
    if (hash < previous_hash_) loser_at_ = 0;  // wrapped to the smallest hash
    previous_hash_ = hash;
    uint32_t node = cursor_.node();
    cursor_.Advance();
    ++steps_;
    if (mask_ != nullptr && !mask_->available(node)) {
      node = Ring::kNoNode;
      const size_t n = losers.hashes.size();
      if (n == 0) continue;
      if (loser_at_ == kUnpositioned) {
        loser_at_ = static_cast<size_t>(
            std::lower_bound(losers.hashes.begin(), losers.hashes.end(), hash) -
            losers.hashes.begin());
      }
      while (loser_at_ < n && losers.hashes[loser_at_] < hash) ++loser_at_;
      for (size_t i = loser_at_; i < n && losers.hashes[i] == hash; ++i) {
        if (mask_->available(losers.nodes[i])) {
          node = losers.nodes[i];
          break;
        }
      }
      if (node == Ring::kNoNode) continue;
    }
    if (node >= num_nodes) continue;  // a damaged mapped column: never an index
    uint64_t& word = seen_[node / 64];
    const uint64_t bit = uint64_t{1} << (node % 64);
    if ((word & bit) != 0) continue;
    word |= bit;
    ++found_;
    return node;
  }
  ring_ = nullptr;  // done: later calls answer at once
  return Ring::kNoNode;
}

}  // namespace chash
