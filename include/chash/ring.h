// The consistent-hash ring: build it once with validation, then look keys up
// from any number of threads.
//
//   chash::RingBuilder builder({.flavor = chash::Flavor::kPingoraV2,
//                               .point_multiple = 16});
//   builder.Add("10.0.0.1:443", 625);           // returns a Status
//   chash::Result<chash::Ring> ring = std::move(builder).Build();
//   uint32_t node = ring.value().FindNode("/some/url");
//
// Points are stored as two columns in ring order (a u32 hash column and a
// u16 node column: exactly 6 bytes a point), searched through a small 16-ary
// S+ tree index above them (MemoryUsage::index_bytes).
// A Ring is immutable after Build and move-only; publish a new one with
// std::shared_ptr<const Ring> and an atomic swap.
#ifndef CHASH_RING_H_
#define CHASH_RING_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "chash/address.h"
#include "chash/status.h"

// Public API: exported from libchash.so (built with hidden visibility).
#pragma GCC visibility push(default)
namespace chash {

namespace internal {
struct RingState;
struct RingFactory;
struct SearchView;
}  // namespace internal

// Node ids are u16 in the point column (pingora v2's 6-byte point), so a ring
// holds at most 65,536 nodes. pingora v1 silently wraps beyond that; chash
// refuses with kTooManyNodes.
inline constexpr uint32_t kMaxNodes = 65536;

// 160: nginx ngx_http_upstream_init_chash, pingora DEFAULT_POINT_MULTIPLE.
inline constexpr uint32_t kDefaultPointMultiple = 160;

// Default cap on generated points (Σ weight x multiple): 2^30 points is 6 GiB
// of columns and a 10 GiB peak while building. Raise it in RingOptions up to
// kHardMaxPoints.
inline constexpr uint64_t kDefaultMaxPoints = uint64_t{1} << 30;
// 2^31 - 1 keeps every slot index and index position inside u32.
inline constexpr uint64_t kHardMaxPoints = (uint64_t{1} << 31) - 1;

// Which point survives when several points share one hash.
enum class TieBreak : uint8_t {
  kConfigOrder,   // the node added first (nginx, chash's pingora v1)
  kAddressOrder,  // the smallest socket address (pingora v2)
  kExplicitRank,  // a caller-given rank per node (raw-point rings)
  // The smallest id by bytes (memcmp, then the shorter first): chash's resty
  // rule. resty.chash's own winner follows Lua's table order, which differs
  // between processes and starts; this rule does not depend on any order.
  kIdOrder,
};

struct RingOptions {
  Flavor flavor = Flavor::kNginx;
  // Points per weight unit. nginx and pingora v1 fix it at 160; pingora v2
  // and resty take any value >= 1 (resty.chash itself uses 160).
  uint32_t point_multiple = kDefaultPointMultiple;
  uint64_t max_points = kDefaultMaxPoints;
  // Threads Build() may use, the caller's included: 0 = the CPUs this
  // process may run on (its affinity mask, bounded by its cgroup's CPU
  // quota; at most 64); values above 256 count as 256. The ring is
  // bit-identical whatever the count (a tested guarantee); 1 keeps
  // the build on the calling thread (a proxy that must not take every core
  // while it serves).
  uint32_t build_threads = 0;
};

// The tie-break a flavor uses: kConfigOrder for nginx and pingora-v1,
// kAddressOrder for pingora-v2, kIdOrder for resty.
TieBreak FlavorTieBreak(Flavor flavor) noexcept;

// Whether a flavor takes a point multiple other than 160: pingora-v2 and
// resty do; nginx and pingora-v1 fix it at kDefaultPointMultiple.
bool FlavorTakesPointMultiple(Flavor flavor) noexcept;

// The one check of RingOptions that RingBuilder::Add and Build, the C API's
// chash_builder_new and chash_builder_set_max_points, and the chash tool
// make: a known flavor (kBadArgument), a point multiple >= 1 and 160 for a
// flavor that fixes it (kBadMultiple), max_points in 1..kHardMaxPoints
// (kBadArgument); build_threads takes any value. OK, or the error whose
// message callers pass on (prefixed with their own context). Allocates only
// the message of an error (kOutOfMemory if that fails).
Status ValidateRingOptions(const RingOptions& options) noexcept;

struct NodeInfo {
  NodeAddress address;  // written text and hashed bytes; empty for raw rings
  uint32_t weight = 0;  // 0 = drained: the node keeps its id but owns no points
};

struct MemoryUsage {
  uint64_t column_bytes = 0;  // the hash and node columns, as allocated
  uint64_t other_bytes = 0;   // node table, names, bookkeeping: O(nodes)
  uint64_t index_bytes = 0;   // the search index above the columns: S+ tree
                              // levels (~4.4% of the columns) and the slot
                              // table (<= n/128 entries, or 32 KiB: <= 0.5%)
  // The points collisions dropped, kept for exact masked lookups
  // (Ring::collision_losers): 6 bytes a loser, outside the columns.
  uint64_t collision_table_bytes = 0;
};

// The points that collisions dropped from the columns. At a hash several
// nodes' points share, the columns keep the best-ranked one (the tie-break);
// the other contenders are listed here in tie-break order, each distinct
// (hash, node) once. A ring of a subset of the nodes keeps, at that hash, the
// first available contender: this is what makes masked lookups exact.
struct CollisionLosers {
  std::span<const uint32_t> hashes;  // ascending; one hash's losers adjacent
  std::span<const uint16_t> nodes;   // parallel; best-ranked loser first
};

class Ring;

// A cursor over the points in ring (sorted-hash) order: the failover walk of
// pingora's node_iter and nginx's `hp->hash++`. It cycles forever; after
// num_points() steps it is back where it started. Cheap to copy; valid while
// its Ring lives. Each step is O(1) amortized, O(log n) worst case; no
// allocation.
class PointCursor {
 public:
  PointCursor() = default;  // an empty walk

  bool empty() const noexcept { return size_ == 0; }
  // Node and hash of the current point; Ring::kNoNode and 0 on an empty
  // cursor.
  uint32_t node() const noexcept;
  uint32_t hash() const noexcept;
  // Index of the current point in ring order, 0..num_points()-1 (0 on an
  // empty cursor): resty.chash's position.
  uint32_t position() const noexcept { return slot_; }
  // Moves to the next point, wrapping from the largest hash to the smallest.
  void Advance() noexcept;
  // pingora NodeIterator::next: the current node, then Advance().
  // Ring::kNoNode on an empty ring.
  uint32_t Next() noexcept;

  friend bool operator==(const PointCursor& a, const PointCursor& b) noexcept {
    return a.hashes_ == b.hashes_ && a.slot_ == b.slot_;
  }

 private:
  friend class Ring;
  PointCursor(const uint32_t* hashes, const uint16_t* nodes, uint32_t size,
              uint32_t slot) noexcept
      : hashes_(hashes), nodes_(nodes), size_(size), slot_(slot) {}

  const uint32_t* hashes_ = nullptr;
  const uint16_t* nodes_ = nullptr;
  uint32_t size_ = 0;
  uint32_t slot_ = 0;  // index in ring order, 0..size-1
};

// Each node once, in ring order from a key's point: the failover order users
// otherwise build by hand over node_iter. Holds an 8 KiB seen-set; no heap
// allocation. All the Next() calls of one walk together visit each point at
// most once (O(num_points) in total).
class DistinctNodeWalk {
 public:
  // The next node not yet returned; Ring::kNoNode once every node that owns
  // points has been returned (at once on an empty ring).
  uint32_t Next() noexcept;

 private:
  friend class Ring;
  DistinctNodeWalk(PointCursor cursor, uint32_t nodes_with_points,
                   uint64_t points) noexcept;

  PointCursor cursor_;
  uint32_t remaining_nodes_ = 0;
  uint64_t remaining_points_ = 0;
  std::array<uint64_t, kMaxNodes / 64> seen_{};
};

class Ring {
 public:
  static constexpr uint32_t kNoNode = 0xFFFFFFFFu;

  Ring() noexcept;  // the empty ring: every lookup answers kNoNode
  Ring(Ring&&) noexcept;
  Ring& operator=(Ring&&) noexcept;
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  ~Ring();

  // ---- Lookups: thread-safe, noexcept, no allocation -----------------------

  // Node of the first point with hash >= CRC32(key), wrapping to the first
  // point; kNoNode on an empty ring. O(|key| + log n).
  uint32_t FindNode(std::string_view key) const noexcept;
  // The same for a precomputed hash. On rings of 2^20 points or more, O(1)
  // for uniform hashes: two slot-table entries, then a 32-hash window with
  // its node line (fetched together). Otherwise, and when the window does
  // not decide, O(log16 n): one SIMD compare per index level below the slot
  // table's entry, then the leaf line and the node line.
  uint32_t FindNodeByHash(uint32_t hash) const noexcept;

  // Batch forms: out[i] = FindNodeByHash(hashes[i]) / FindNode(keys[i]) for
  // i < n = min(input size, out.size()); returns n. An `out` shorter than
  // the input is a caller's bug: the inputs past it are not looked up (and
  // nothing is written past `out`), in every build; the check is one compare
  // a call. The kernel is read once a call (one target for the whole
  // batch); groups of lookups descend level by level with each next line
  // prefetched, so many cache misses are in flight at once.
  size_t FindNodesByHash(std::span<const uint32_t> hashes,
                         std::span<uint32_t> out) const noexcept;
  size_t FindNodes(std::span<const std::string_view> keys,
                   std::span<uint32_t> out) const noexcept;

  // Failover walk starting at the point FindNode would answer with.
  PointCursor Walk(std::string_view key) const noexcept;
  PointCursor WalkFromHash(uint32_t hash) const noexcept;
  // The point with the smallest hash (where a full ring-order scan starts).
  PointCursor Begin() const noexcept { return WalkFromHash(0); }
  // The cursor at ring-order index `position`; an empty cursor when
  // position >= num_points(). O(1).
  PointCursor At(uint64_t position) const noexcept;

  // Distinct-node failover order starting at the key's point.
  DistinctNodeWalk WalkDistinct(std::string_view key) const noexcept;
  DistinctNodeWalk WalkDistinctFromHash(uint32_t hash) const noexcept;

  // ---- Shape -------------------------------------------------------------------

  bool empty() const noexcept { return size_ == 0; }
  uint32_t num_nodes() const noexcept;
  // Points kept after collisions were dropped.
  uint64_t num_points() const noexcept { return size_; }
  // Σ weight x multiple: points before deduplication.
  uint64_t points_generated() const noexcept;
  // Points dropped because another point had the same hash.
  uint64_t collisions() const noexcept { return points_generated() - num_points(); }
  uint32_t nodes_with_points() const noexcept;
  // Whether node `id` owns at least one kept point (false past num_nodes()).
  bool owns_points(uint32_t id) const noexcept;
  // Whether node `id` has any point, kept or dropped by a collision: the
  // nodes that some subset of the nodes (a masked lookup) can answer with.
  bool has_points(uint32_t id) const noexcept;
  // The points collisions dropped, in ring order then tie-break order. Empty
  // when there were no collisions. No allocation; valid while the ring lives.
  CollisionLosers collision_losers() const noexcept;

  Flavor flavor() const noexcept;
  uint32_t point_multiple() const noexcept;
  TieBreak tie_break() const noexcept;
  bool is_raw() const noexcept;  // built from raw points, no addresses

  // Node `id`: its address and weight. For an id past num_nodes() (e.g.
  // kNoNode, the answer of an empty ring) an empty NodeInfo: empty address
  // texts, weight 0. Valid while the ring lives.
  const NodeInfo& node(uint32_t id) const noexcept;
  MemoryUsage memory_usage() const noexcept;
  // Wall time of the Build that made this ring, in seconds.
  double build_seconds() const noexcept;

 private:
  friend struct internal::RingFactory;
  explicit Ring(std::unique_ptr<internal::RingState> state) noexcept;
  void CacheColumns() noexcept;

  // Cached from state_ for the lookup path (the state never moves).
  const uint32_t* hashes_ = nullptr;
  const uint16_t* nodes_ = nullptr;
  const internal::SearchView* view_ = nullptr;
  uint32_t size_ = 0;
  std::unique_ptr<internal::RingState> state_;
};

// Collects nodes, validating each as it is added, then builds the ring.
//
// Add validates, in this order, and names the node ("node 12 '10.0.0.1:0'")
// in any error: the options (kBadMultiple), the node count (kTooManyNodes
// past 65,536), the address for the flavor (kBadAddress), a node that hashes
// the same bytes as an earlier one (kDuplicateNode: it would own an identical
// point chain), weight x multiple over 2^32-1 and the running total over
// max_points (kTooManyPoints); kOutOfMemory if the node cannot be stored. A
// failed Add leaves the builder unchanged. Weight 0 is accepted: a drained
// node that keeps its id but owns no points. Add allocates the node's
// address texts and a table entry; its error messages allocate too (an
// error that cannot allocate its message reports kOutOfMemory).
class RingBuilder {
 public:
  // Allocates nothing; invalid options are reported by Add and Build.
  explicit RingBuilder(RingOptions options = {}) noexcept;

  Status Add(std::string_view address, uint32_t weight);
  size_t size() const noexcept { return nodes_.size(); }
  uint64_t points_generated() const noexcept { return points_generated_; }

  // Builds the ring. An empty builder gives the empty ring. On success the
  // builder is left empty (as newly made with the same options); on an
  // error, kOutOfMemory included, it keeps its nodes, so Build can be
  // called again.
  // Cost: O(points) time (Highway VQSort included); at peak 10 bytes a
  // generated point for rings of 512K points and more (the sort keys become
  // the hash column), 14 below that.
  Result<Ring> Build() &&;

 private:
  Status AddNode(std::string_view address, uint32_t weight);

  RingOptions options_;
  std::vector<NodeInfo> nodes_;
  std::unordered_map<std::string, uint32_t> node_by_hashed_bytes_;
  uint64_t points_generated_ = 0;
};

// A point given directly, for tests, fuzzers and users with their own point
// generator. `node` is u32 so that ids past the u16 range can be refused.
struct RawPoint {
  uint32_t hash;
  uint32_t node;
};

// Builds a ring from raw points. Collisions are resolved by `tie_rank`
// (tie_rank[node]: the smaller rank wins; a permutation of 0..num_nodes-1) or,
// if it is empty, by node id (the smaller id wins: configuration order).
// Errors: num_nodes > kMaxNodes (kTooManyNodes), a point's node >= num_nodes
// (kBadNodeId), more than max_points points (kTooManyPoints), a tie_rank that
// is not such a permutation (kBadArgument), kOutOfMemory.
Result<Ring> BuildRingFromPoints(uint32_t num_nodes, std::span<const RawPoint> points,
                                 std::span<const uint32_t> tie_rank = {},
                                 uint64_t max_points = kDefaultMaxPoints);

}  // namespace chash
#pragma GCC visibility pop

#endif  // CHASH_RING_H_
