// Everything a Ring owns. Private to the engine.
#ifndef CHASH_ENGINE_RING_STATE_H_
#define CHASH_ENGINE_RING_STATE_H_

#include <memory>
#include <vector>

#include "chash/ring.h"
#include "ring/collision_table.h"
#include "hash/program_hashes.h"
#include "layout/columns.h"

namespace chash::internal {

struct RingState {
  Columns columns;
  CollisionTable losers;        // the points collisions dropped (exact masking)
  SearchView view = {};  // of `columns`, set when the Ring takes the state
  std::vector<NodeInfo> nodes;  // one per node id
  uint32_t nodes_with_points = 0;
  std::vector<uint64_t> owns_points;  // bit per node id: owns a kept point
  std::vector<uint64_t> has_points;   // bit per node id: a kept or a lost point
  uint64_t points_generated = 0;
  Flavor flavor = Flavor::kNginx;
  uint32_t point_multiple = kDefaultPointMultiple;
  TieBreak tie_break = TieBreak::kConfigOrder;
  bool raw = false;
  double build_seconds = 0;
  // The options of the build (flavor options included; defaults for raw and
  // loaded rings), how the ring answers a hash and how it hashes keys.
  RingOptions options;
  LookupRule rule = LookupRule::kSuccessor;
  KeyHasher key_hasher;
  // varnish-shard: where Varnish's bisection answers other than the first
  // point >= the key, clamped (routing/lookup_rules.h, VarnishSlot): two points, or
  // a hash that several points share. Such rings leave the node-column path.
  bool varnish_bisection = false;
  // What borrowed columns live in (a mapped snapshot file); kept alive as
  // long as the ring. Null for built rings.
  std::shared_ptr<const void> backing;
};

// The slot of the first point whose hash is >= `hash`, 0..num_points()
// (num_points(): none is), on a ring of 32-bit points. For the masked walks,
// which start from it by their rule (routing/masked_walk.h).
uint32_t LowerBoundSlot(const Ring& ring, uint32_t hash) noexcept;

struct RingFactory {
  static Ring Make(std::unique_ptr<RingState> state) noexcept {
    return Ring(std::move(state));
  }
  // The state of a ring (null for the default-constructed ring): the
  // snapshot writer reads the columns directly.
  static const RingState* StateOf(const Ring& ring) noexcept { return ring.state_.get(); }
};

}  // namespace chash::internal

#endif  // CHASH_ENGINE_RING_STATE_H_
