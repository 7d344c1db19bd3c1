// The reference continuum: the oracle every chash lookup is checked against.
//
// A deliberately plain transliteration of nginx's ngx_http_upstream_init_chash
// and pingora-ketama's Continuum::new: a vector of (hash, node) points, a
// sort, the tie-break, lower_bound with wrap-around. It shares no code with
// the engine: its own address parsing (reference_address.h), its own bitwise
// CRC32, its own validation, no Highway, no layout tricks. Slow on
// purpose; keep it boring enough to check line by line against the peers.
#ifndef CHASH_ENGINE_REFERENCE_REFERENCE_RING_H_
#define CHASH_ENGINE_REFERENCE_REFERENCE_RING_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chash/ring.h"

namespace chash::reference {

// zlib's crc32(crc, data, len), one bit at a time.
uint32_t BitwiseCrc32(uint32_t crc, const void* data, size_t len);

struct Point {
  uint32_t hash;
  uint32_t node;
};

struct Server {
  std::string address;
  uint32_t weight;
};

class ReferenceRing {
 public:
  static constexpr uint32_t kNoNode = Ring::kNoNode;

  // Same acceptance and the same StatusCode as RingBuilder for every input.
  static Result<ReferenceRing> Build(Flavor flavor, uint32_t point_multiple,
                                     const std::vector<Server>& servers,
                                     uint64_t max_points = kDefaultMaxPoints);
  // Same acceptance and StatusCode as BuildRingFromPoints.
  static Result<ReferenceRing> FromPoints(uint32_t num_nodes, std::vector<RawPoint> points,
                                          std::vector<uint32_t> tie_rank = {},
                                          uint64_t max_points = kDefaultMaxPoints);

  // Index in points() of the first point with hash >= `hash`, 0 past the end.
  // Precondition: !points().empty().
  size_t FindPoint(uint32_t hash) const;
  uint32_t FindNodeByHash(uint32_t hash) const;
  uint32_t FindNode(std::string_view key) const;
  // The nodes of `count` successive points from FindPoint(hash) (node_iter).
  std::vector<uint32_t> Walk(uint32_t hash, size_t count) const;
  // Each node once, in ring order from FindPoint(hash).
  std::vector<uint32_t> DistinctWalk(uint32_t hash) const;

  const std::vector<Point>& points() const { return points_; }  // sorted, deduplicated
  // The points the deduplication dropped: at each hash with several
  // contenders, every node but the winner, each once, in tie-break order
  // (hashes ascending). Ring::collision_losers() must list the same.
  const std::vector<Point>& collision_losers() const { return collision_losers_; }
  uint64_t points_generated() const { return points_generated_; }
  uint32_t num_nodes() const { return num_nodes_; }

 private:
  std::vector<Point> points_;
  std::vector<Point> collision_losers_;
  uint64_t points_generated_ = 0;
  uint32_t num_nodes_ = 0;
};

}  // namespace chash::reference

#endif  // CHASH_ENGINE_REFERENCE_REFERENCE_RING_H_
