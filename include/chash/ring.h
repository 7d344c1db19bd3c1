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
// S+ tree index above them (MemoryUsage::index_bytes). Envoy's 64-bit ring
// adds a u32 column of the points' low halves (10 bytes a point); Envoy's
// Maglev is a table of u16 node ids (2 bytes an entry).
// A Ring is immutable after Build and move-only; publish a new one with
// std::shared_ptr<const Ring> and an atomic swap.
//
// Other programs' rings (HAProxy, libmemcached, twemproxy, libketama,
// Varnish, Envoy) are flavors too, each with its options (chash/flavors.h):
//
//   chash::RingBuilder haproxy({.flavor = chash::Flavor::kHaproxy,
//                               .haproxy = {.hash_function = chash::HaproxyHash::kDjb2}});
//   haproxy.Add("10.0.0.1:80", 1, {.server_id = 3});   // `server s1 10.0.0.1:80 id 3`
//   chash::RingBuilder envoy({.flavor = chash::Flavor::kEnvoyRing,
//                             .envoy_ring = {.minimum_ring_size = 4096}});
//   ring.FindNode("/url");                              // each flavor hashes keys its way
#ifndef CHASH_RING_H_
#define CHASH_RING_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "chash/address.h"
#include "chash/flavors.h"
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

struct NodeInfo {
  NodeAddress address;  // written text and hashed bytes; empty for raw rings
  uint32_t weight = 0;  // 0 = drained: the node keeps its id but owns no points
  // haproxy: the server's id (HAProxy's puid), given (NodeOptions) or
  // assigned as HAProxy assigns it; its points come from it. 0 otherwise.
  uint32_t server_id = 0;
};

// What a node has beside its address and weight, for the flavors that need it.
struct NodeOptions {
  // haproxy: the server's `id` keyword, 1..2,147,483,647. 0 (not given):
  // assigned at Build as HAProxy assigns it: going through the servers in
  // order with a counter that starts at 1, a server without an id takes the
  // first id at or above the counter that no server of the list has (given
  // ids included, later ones too), and the counter becomes one past it;
  // every server with an id moves the counter one up.
  uint32_t server_id = 0;
  // ketama-md5 with the twemproxy variant: the server's name (the last
  // field of a twemproxy server line, `host:port:weight name`), which its
  // points are made from instead of host[:port]. varnish-shard: the
  // backend's ident (else its VCL name), which the ring hashes and answers
  // (Ring::address) instead of the address. 1..4,096 bytes.
  std::string_view name = {};
  // Envoy's rings (envoy-ring, envoy-maglev), as Envoy picks what a host
  // hashes (its hashKey): the envoy.lb `hash_key` metadata when not empty;
  // else, with hash_hostname (the cluster's use_hostname_for_hashing), the
  // host's `hostname`, which must not be empty; else the address as Envoy
  // prints it ("A.B.C.D:PORT", "[IPV6]:PORT" as inet_ntop writes it; a
  // label that is no IP address as written). The text hashed is what
  // Ring::address answers.
  std::string_view hostname = {};
  std::string_view hash_key = {};
  bool hash_hostname = false;
  // varnish-shard: Varnish's REAL weight (vmod_directors' add_backend
  // `weight`, a finite number >= 0), given instead of the integer weight
  // (which is then 0). A ring with one counts every backend's points as
  // Varnish does, trunc(replicas x max(w, 1)), an integer weight w too (0
  // included: Varnish drains no backend by weight); it is built with
  // replicas 1 and these counts as its weights (Ring::node's weight).
  std::optional<double> real_weight = {};
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
// allocation. On the other programs' rings it is their own walk: HAProxy's
// next tree node, Varnish's idx + 1, Envoy's ring retry (attempt a is a
// steps on); an envoy-maglev ring has no points to walk: its cursor goes
// through the table's entries in index order (Maglev retries rehash instead:
// Ring::FindNodeForAttempt).
class PointCursor {
 public:
  PointCursor() = default;  // an empty walk

  bool empty() const noexcept { return size_ == 0; }
  // Node and hash of the current point; Ring::kNoNode and 0 on an empty
  // cursor. hash() is the high 32 bits of an envoy-ring point and the entry
  // index of an envoy-maglev entry; hash64() the whole 64-bit point (the
  // same as hash() on the other rings).
  uint32_t node() const noexcept;
  uint32_t hash() const noexcept;
  uint64_t hash64() const noexcept;
  // Index of the current point in ring order, 0..num_points()-1 (0 on an
  // empty cursor): resty.chash's position.
  uint32_t position() const noexcept { return slot_; }
  // Moves to the next point, wrapping from the largest hash to the smallest.
  void Advance() noexcept;
  // pingora NodeIterator::next: the current node, then Advance().
  // Ring::kNoNode on an empty ring.
  uint32_t Next() noexcept;

  friend bool operator==(const PointCursor& a, const PointCursor& b) noexcept {
    return a.nodes_ == b.nodes_ && a.slot_ == b.slot_;
  }

 private:
  friend class Ring;
  PointCursor(const uint32_t* hashes, const uint32_t* low, const uint16_t* nodes, uint32_t size,
              uint32_t slot) noexcept
      : hashes_(hashes), low_(low), nodes_(nodes), size_(size), slot_(slot) {}

  const uint32_t* hashes_ = nullptr;  // null on an envoy-maglev ring
  const uint32_t* low_ = nullptr;     // envoy-ring: the points' low halves
  const uint16_t* nodes_ = nullptr;
  uint32_t size_ = 0;
  uint32_t slot_ = 0;  // index in ring order, 0..size-1
};

// Each node once, in ring order from a key's point: the failover order users
// otherwise build by hand over node_iter. It is NodeWalk (failover.h) without
// a mask, by the same code, kept as the type 1.0 returns: it holds its own
// 8 KiB seen-set; no heap allocation. All the Next() calls of one walk
// together visit each point at most once (O(num_points) in total).
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
  // point; kNoNode on an empty ring. O(|key| + log n). On the other
  // programs' rings: the node their program picks for the key, the key
  // hashed as KeyHash does and looked up by lookup_rule().
  uint32_t FindNode(std::string_view key) const noexcept;
  // The same for a precomputed hash. On rings of 2^20 points or more, O(1)
  // for uniform hashes: two slot-table entries, then a 32-hash window with
  // its node line (fetched together). Otherwise, and when the window does
  // not decide, O(log16 n): one SIMD compare per index level below the slot
  // table's entry, then the leaf line and the node line. The hash is a u32
  // key hash of the ring's flavor; envoy-ring and envoy-maglev rings hash
  // keys to 64 bits and answer kNoNode here: use FindNodeByHash64.
  uint32_t FindNodeByHash(uint32_t hash) const noexcept;

  // The key's hash as the ring's program computes it: CRC32 (nginx,
  // pingora, resty), HAProxy's function and avalanche, ketama-md5's key hash
  // (KetamaKeyHash; twemproxy and libmemcached answer 0 for a ring of one
  // node and twemproxy 0 for an empty key, as they do), varnish-shard's
  // SHA-256 (the last 4 bytes, little-endian: by=URL and .key()), Envoy's
  // XXH64 (seed 0). 32-bit flavors' hashes are below 2^32. O(|key|).
  uint64_t KeyHash(std::string_view key) const noexcept;
  // Node of a key hash of any flavor (KeyHash's values): the 64-bit lookup
  // of envoy-ring and envoy-maglev; on 32-bit rings FindNodeByHash, and
  // kNoNode for a hash above 2^32 - 1 (no key hashes there). The batch form
  // answers as FindNodesByHash.
  uint32_t FindNodeByHash64(uint64_t hash) const noexcept;
  size_t FindNodesByHash64(std::span<const uint64_t> hashes,
                           std::span<uint32_t> out) const noexcept;
  // The node the program picks on retry `attempt` (0: the first pick,
  // FindNodeByHash64) when it retries without being told which node
  // failed: envoy-ring the entry `attempt` places on ((index + attempt) mod
  // ring size); envoy-maglev table[(hash ^ (2^64 - attempt)) mod size]; every
  // other ring the node of the point `attempt` steps on along Walk (HAProxy
  // and Varnish walk on to the next distinct server instead: WalkDistinct).
  uint32_t FindNodeForAttempt(uint64_t hash, uint32_t attempt) const noexcept;

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

  // Failover walk starting at the point FindNode would answer with (the
  // nearest point on haproxy rings, the last point above the last one on
  // varnish-shard rings, entry hash mod size on envoy-maglev rings).
  // WalkFromHash takes a u32 hash (an empty cursor on envoy-ring and
  // envoy-maglev rings); WalkFromHash64 any KeyHash value.
  PointCursor Walk(std::string_view key) const noexcept;
  PointCursor WalkFromHash(uint32_t hash) const noexcept;
  PointCursor WalkFromHash64(uint64_t hash) const noexcept;
  // The point with the smallest hash (where a full ring-order scan starts).
  PointCursor Begin() const noexcept { return At(0); }
  // The cursor at ring-order index `position`; an empty cursor when
  // position >= num_points(). O(1).
  PointCursor At(uint64_t position) const noexcept;

  // Distinct-node failover order starting at the key's point: Varnish's
  // shard director walk (healthy=CHOSEN takes its first healthy backend,
  // alt=k its k-th), HAProxy's redispatch order.
  DistinctNodeWalk WalkDistinct(std::string_view key) const noexcept;
  DistinctNodeWalk WalkDistinctFromHash(uint32_t hash) const noexcept;
  DistinctNodeWalk WalkDistinctFromHash64(uint64_t hash) const noexcept;

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
  // Points per weight unit: the multiple of nginx, pingora and resty rings;
  // 16 on haproxy rings, `replicas` on varnish-shard rings; 0 where the
  // program has none (ketama-md5, envoy-ring, envoy-maglev, raw points).
  uint32_t point_multiple() const noexcept;
  TieBreak tie_break() const noexcept;
  bool is_raw() const noexcept;  // built from raw points, no addresses
  // The options the ring was built with (the flavor's own included); a raw
  // or empty ring's are the defaults.
  const RingOptions& options() const noexcept;
  LookupRule lookup_rule() const noexcept;
  // 32, or 64 for envoy-ring and envoy-maglev rings (KeyHash's width).
  uint32_t key_hash_bits() const noexcept;

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

  // The paths of the rings the fused kernels do not answer:
  // FindNodeByKeyHashAndRule hashes `key` with the flavor's own key hash
  // and finds it by FindNodeByHash64 (every ring whose FindNode is not the
  // fused CRC32 kernel); FindNodeByHashAndRule resolves the lower-bound
  // slot by the ring's lookup rule (every ring whose FindNodeByHash is not
  // the node column alone). Hidden: private, and not in 1.0's symbol list.
  __attribute__((visibility("hidden"))) uint32_t FindNodeByKeyHashAndRule(
      std::string_view key) const noexcept;
  __attribute__((visibility("hidden"))) uint32_t FindNodeByHashAndRule(
      uint32_t hash) const noexcept;
  // 1.0 exported these two under the names below (libchash.so.1.symbols):
  // they forward to the two above, are called by nothing, and go at 2.0.
  uint32_t FindNodeOther(std::string_view key) const noexcept;
  uint32_t FindNodeByHashOther(uint32_t hash) const noexcept;
  PointCursor CursorAt(uint32_t slot) const noexcept;

  // Cached from state_ for the lookup path (the state never moves).
  const uint32_t* hashes_ = nullptr;
  const uint16_t* nodes_ = nullptr;
  const internal::SearchView* view_ = nullptr;
  uint32_t size_ = 0;
  // size_ where FindNode may take the fused CRC32 kernel (nginx, pingora,
  // resty, raw points), and where FindNodeByHash answers from the node
  // column alone (those and ketama-md5, varnish-shard); 0 elsewhere (and
  // on an empty ring): one branch decides each path.
  uint32_t fused_crc32_size_ = 0;
  uint32_t column_lookup_size_ = 0;
  bool wide_ = false;  // 64-bit key hashes (envoy-ring, envoy-maglev)
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
//
// The other programs' flavors read the address as their program does and
// check their program's limits:
//   haproxy        any text of 1..4,096 bytes without whitespace or control
//                  bytes (what the tool prints back; HAProxy's points come
//                  from the server id, NodeOptions::server_id); weight
//                  0..256; a server id given twice is kDuplicateNode.
//   ketama-md5     libmemcached, twemproxy: HOST[:PORT] or [IPV6][:PORT]
//                  (PORT 1..65535, default KetamaOptions::default_port),
//                  labelled as the program labels it (address.h); libketama:
//                  the text as written, at most 21 bytes (its addr[22]).
//                  twemproxy labels longer than 85 bytes with their point
//                  number (its KETAMA_MAX_HOSTLEN truncates them) are
//                  kBadAddress at Build. Weight 0 drains a server: it is out
//                  of the weight total and the server count, as a line the
//                  program never saw.
//   varnish-shard  the backend's name (its `ident`), 1..4,096 bytes; weight x
//                  replicas points.
//   envoy-ring, envoy-maglev  the host's key (its address as Envoy prints
//                  it, "10.0.0.1:8080" or "[2001:db8::1]:80", its metadata
//                  hash_key or its hostname), 1..4,096 bytes, hashed as
//                  given. Weight 0 leaves the host out of the host set
//                  (Envoy's weights are 1 or more); the weights of the hosts
//                  left must add up to at most 4,294,967,295 (Envoy refuses
//                  more: kBadWeight at Build). An envoy-maglev table smaller
//                  than the host set is filled as Envoy fills it: the first
//                  table_size hosts in key order get one entry each, the
//                  others none.
// A weighted ketama ring's, an envoy-ring's and an envoy-maglev table's
// point counts depend on every node, so Build checks max_points against
// what it generates.
class RingBuilder {
 public:
  // Allocates nothing; invalid options are reported by Add and Build.
  explicit RingBuilder(RingOptions options = {}) noexcept;

  Status Add(std::string_view address, uint32_t weight);
  // The same with what the flavor reads beside the address (NodeOptions);
  // kBadArgument for an option the flavor does not take.
  Status Add(std::string_view address, uint32_t weight, const NodeOptions& node);
  size_t size() const noexcept { return nodes_.size(); }
  // Points the nodes added so far generate; for the flavors whose counts
  // depend on every node (weighted ketama, envoy-ring, envoy-maglev) an
  // upper bound until Build.
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
  Status AddNode(std::string_view address, uint32_t weight, const NodeOptions& node);
  // Kept for libchash.so.0's exports (tests/abi): the node without options.
  Status AddNode(std::string_view address, uint32_t weight);

  RingOptions options_;
  std::vector<NodeInfo> nodes_;
  std::unordered_map<std::string, uint32_t> node_by_hashed_bytes_;
  std::unordered_map<uint32_t, uint32_t> node_by_server_id_;  // haproxy: given ids
  uint64_t points_generated_ = 0;
  // varnish-shard with a real weight (NodeOptions::real_weight): every
  // node's weight is its point count, and Build uses replicas 1.
  bool weights_are_points_ = false;
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
