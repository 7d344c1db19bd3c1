// Building a ring from nodes already read (RingBuilder::Build, and
// BuildAvailableRing, which rebuilds a ring's own nodes).
#ifndef CHASH_ENGINE_BUILD_BUILD_NODES_H_
#define CHASH_ENGINE_BUILD_BUILD_NODES_H_

#include <cstdint>
#include <vector>

#include "chash/ring.h"

namespace chash::internal {

// Builds the ring of `nodes` (parsed and checked by RingBuilder::Add, or a
// ring's own) with `options`; points_generated: the sum RingBuilder::Add
// keeps (weight x multiple for nginx, pingora and resty). On success the
// nodes are moved into the ring and `nodes` is left empty; on an error,
// kOutOfMemory included, `nodes` is unchanged.
Result<Ring> BuildRingFromNodes(const RingOptions& options, std::vector<NodeInfo>& nodes,
                                uint64_t points_generated);

}  // namespace chash::internal

#endif  // CHASH_ENGINE_BUILD_BUILD_NODES_H_
