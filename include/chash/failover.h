// Failover without rebuilds: lookups that skip unavailable nodes, and
// bounded-load lookups, on an unchanged ring.
//
//   chash::NodeMask up(ring.num_nodes());            // every node available
//   up.Set(3, false);                                 // node 3 is down
//   uint32_t node = chash::FindAvailableNode(ring, up, "/some/url");
//
//   chash::AvailabilityMask health(ring.num_nodes()); // one per ring, shared
//   health.Publish(up);                               // the health checker
//   uint32_t node = health.FindNode(ring, "/some/url");  // any worker thread
//
// Exactness. A masked lookup answers, for every key, exactly what the ring
// built from the available nodes alone would answer (the same servers file
// with the other lines removed, or the same raw points with the same tie
// ranks). Point chains do not depend on the other nodes and removing nodes
// keeps the relative tie-break order, so that subset ring holds exactly the
// full ring's hashes at which some available node has a point, and at each
// the best-ranked available contender. The walk therefore goes point by
// point in ring order from the key's point and, at each hash, takes the
// column's winner if it is available, else the first available loser of the
// collision table (Ring::collision_losers, kept in tie-break order), else
// moves on. This is also the rule for subset rings: one ring plus a mask per
// subset instead of one ring per subset.
//
// Cost. No available node: O(1), kNoNode. If the key's own point is
// available: one lookup plus one bit test.
// Otherwise each further point costs one step of the ring-order cursor plus
// a bit test; the collision table is searched once (O(log collisions)) and
// then followed in step. Bound: at most num_points() points and
// collision_losers() entries, i.e. one turn of the ring; kNoNode after that.
// With a fraction a of the points available the expected walk is about 1/a
// points. A walk that has passed max(64, num_nodes()) points checks every
// node once (O(num_nodes)) and answers kNoNode at once if no available node
// has a point (e.g. a mask whose available ids are all outside the ring),
// so a fruitless lookup costs O(num_nodes), not a turn of O(num_points). No
// allocation.
//
// The other programs' rings. A haproxy ring's masked answer is the nearest
// available point on either side (HAProxy's tree without the unavailable
// servers' nodes), a varnish-shard ring's the first available point at or
// after the key, else the last available point (its ring has no wrap); both
// programs keep every point, colliding ones included, in their insertion
// order, and so do these rings, so the walk needs no collision table. The
// programs whose point counts depend on every node rebuild when one goes:
// libmemcached and twemproxy (weighted ketama, libketama), Envoy's ring and
// Maglev table. Skipping points there would be chash's answer, not theirs,
// so on those rings (FlavorMasksExactly false) every masked lookup answers
// kMaskRefused, FindNodeBoundedLoad refuses with kBadArgument, and the exact
// answer is a lookup on BuildAvailableRing(ring, mask). Bounded loads walk
// each ring's own walk (PointCursor): HAProxy's next tree node, Varnish's
// idx + 1; envoy-ring and envoy-maglev refuse them even unmasked (Envoy's
// hash_balance_factor probes hosts in an order seeded by the hash, which
// chash does not reproduce).
#ifndef CHASH_FAILOVER_H_
#define CHASH_FAILOVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "chash/ring.h"
#include "chash/status.h"

// Public API: exported from libchash.so (built with hidden visibility).
#pragma GCC visibility push(default)
namespace chash {

// One bit a node id: set = available. A plain value; share a fixed one
// between threads freely, or publish changing ones through AvailabilityMask.
// Node ids at or past size() count as unavailable (a mask made for a smaller
// fleet never routes to nodes it does not know).
//
// Allocation: a mask holds ceil(size / 64) words on the heap. Making or
// copying one never throws: if the words cannot be allocated the mask covers
// no node (size() == 0, every lookup through it answers kNoNode: it fails
// closed). Create reports that as kOutOfMemory instead.
class NodeMask {
 public:
  NodeMask() noexcept = default;  // covers no node
  // `num_nodes` ids (clamped to kMaxNodes), all available or all not; size()
  // 0 if memory ran out.
  explicit NodeMask(uint32_t num_nodes, bool available = true) noexcept;
  // The same, or kOutOfMemory.
  static Result<NodeMask> Create(uint32_t num_nodes, bool available = true) noexcept;
  NodeMask(const NodeMask& other) noexcept;             // size() 0 if memory ran out
  NodeMask& operator=(const NodeMask& other) noexcept;  // likewise
  NodeMask(NodeMask&&) noexcept = default;
  NodeMask& operator=(NodeMask&&) noexcept = default;

  uint32_t size() const noexcept { return size_; }
  bool available(uint32_t node) const noexcept {
    return node < size_ && ((words_[node / 64] >> (node % 64)) & 1) != 0;
  }
  // Sets one node; false (and no change) if node >= size().
  bool Set(uint32_t node, bool available) noexcept;
  // O(1): kept up to date by Set. A lookup under a mask with no available
  // node answers kNoNode at once instead of walking a whole turn.
  uint32_t count_available() const noexcept { return available_; }

  // The bits, 64 ids a word, bit (id % 64) of word (id / 64); bits past
  // size() are zero.
  std::span<const uint64_t> words() const noexcept { return words_; }

  friend bool operator==(const NodeMask& a, const NodeMask& b) noexcept {
    return a.size_ == b.size_ && a.words_ == b.words_;
  }

 private:
  std::vector<uint64_t> words_;
  uint32_t size_ = 0;
  uint32_t available_ = 0;
};

// What masked and bounded-load lookups answer on a ring whose program
// rebuilds instead of skipping nodes (see above): not a node id (no ring has
// that many nodes) and not kNoNode (which means no available node).
inline constexpr uint32_t kMaskRefused = 0xFFFFFFFEu;

// Whether masked lookups on this ring answer as its program does:
// FlavorMasksExactly(ring.options()) (raw-point rings: true).
bool MasksExactly(const Ring& ring) noexcept;

// The ring of `ring`'s nodes that `mask` leaves available: the same nodes,
// ids and options, the others drained (weight 0, as if their lines were
// gone). It is what a program that rebuilds on a membership change answers
// (libmemcached and twemproxy ejecting a server, Envoy's healthy host set,
// Maglev); on the other rings lookups on it answer as masked lookups do.
// Node ids at or past mask.size() count as unavailable. Errors: those of
// RingBuilder::Build (an envoy-maglev table left with no host builds the
// empty ring), kBadArgument for a raw-point ring (its points cannot be
// regenerated), kOutOfMemory. Cost: a Build.
Result<Ring> BuildAvailableRing(const Ring& ring, const NodeMask& mask);

// ---- Masked lookups: thread-safe, noexcept, no allocation -------------------

// The node the ring of the available nodes would answer for this key hash;
// Ring::kNoNode when no available node owns a point (or the ring is empty);
// kMaskRefused on a ring that masks inexactly (MasksExactly false). The
// hash is a u32 key hash (FindAvailableNodeByHash64 takes any KeyHash).
uint32_t FindAvailableNodeByHash(const Ring& ring, const NodeMask& mask, uint32_t hash) noexcept;
uint32_t FindAvailableNodeByHash64(const Ring& ring, const NodeMask& mask, uint64_t hash) noexcept;
// The same for a key (hashed as Ring::FindNode hashes it).
uint32_t FindAvailableNode(const Ring& ring, const NodeMask& mask, std::string_view key) noexcept;
// Batch forms: the plain batch lookup, then a walk only for the keys whose
// node is unavailable. As Ring::FindNodes, they answer the first
// n = min(input size, out.size()) inputs and return n.
size_t FindAvailableNodesByHash(const Ring& ring, const NodeMask& mask,
                                std::span<const uint32_t> hashes,
                                std::span<uint32_t> out) noexcept;
size_t FindAvailableNodes(const Ring& ring, const NodeMask& mask,
                          std::span<const std::string_view> keys,
                          std::span<uint32_t> out) noexcept;

// ---- A mask replaced atomically while lookups run -----------------------------

// A NodeMask that one thread replaces while others look keys up through it.
// Readers take no lock and never see a torn mask: each lookup answers for
// exactly one published mask. Design: two buffers under seqlocks; Publish
// writes the buffer readers are not directed to, then redirects them. A
// reader never waits; it redoes its lookup only if two Publish calls
// complete while it runs, so its cost is unchanged unless masks change about
// as often as a lookup takes (~0.1-1 us). A writer publishing in a tight
// loop could starve readers: coalesce health changes, as health checkers do.
// Publish calls serialize on a mutex and cost O(size / 64).
// Reader cost over a NodeMask lookup: two loads of the sequence and a fence
// (free on x86, a dmb on ARM). Not copyable or movable.
// Allocation: the constructor allocates two buffers of ceil(size / 64)
// words and never throws: if they cannot be had, the mask covers no node
// (size() 0: lookups answer kNoNode, Publish refuses every mask). Create
// reports kOutOfMemory instead. Publish allocates nothing but its error
// message.
class AvailabilityMask {
 public:
  // `num_nodes` ids (clamped to kMaxNodes), every one available; version 0.
  explicit AvailabilityMask(uint32_t num_nodes) noexcept;
  static Result<std::unique_ptr<AvailabilityMask>> Create(uint32_t num_nodes) noexcept;
  AvailabilityMask(const AvailabilityMask&) = delete;
  AvailabilityMask& operator=(const AvailabilityMask&) = delete;

  uint32_t size() const noexcept { return size_; }

  // Replaces the mask; kBadArgument unless mask.size() == size(). Each
  // successful call increments version().
  Status Publish(const NodeMask& mask);
  // The current mask and its version, consistent with each other. Allocates
  // the copy; size() 0 if memory ran out.
  NodeMask Snapshot(uint64_t* version = nullptr) const noexcept;
  uint64_t version() const noexcept;

  // FindAvailableNode* through the current mask. The batch form answers
  // each key under one published mask (a batch may straddle a Publish); it
  // answers the first min(keys.size(), out.size()) keys and returns that.
  uint32_t FindNodeByHash(const Ring& ring, uint32_t hash) const noexcept;
  uint32_t FindNode(const Ring& ring, std::string_view key) const noexcept;
  size_t FindNodes(const Ring& ring, std::span<const std::string_view> keys,
                   std::span<uint32_t> out) const noexcept;

 private:
  struct Buffer {
    std::atomic<uint64_t> sequence{0};  // odd while Publish writes the words
    std::atomic<uint64_t> version{0};
    std::atomic<uint32_t> available{0};  // count_available() of the mask
    std::unique_ptr<std::atomic<uint64_t>[]> words;
  };
  template <typename Lookup>
  uint32_t ReadConsistent(const Lookup& lookup) const noexcept;

  uint32_t size_ = 0;
  uint32_t num_words_ = 0;
  Buffer buffers_[2];
  std::atomic<uint32_t> active_{0};
  std::mutex publish_mutex_;
  uint64_t next_version_ = 1;  // guarded by publish_mutex_
};

// ---- Bounded loads (Mirrokni, Thorup, Zadimoghaddam, SODA 2018) ---------------
//
// "Consistent Hashing with Bounded Loads": with m balls (the new one
// included) over n bins and a balance factor c > 1, every bin's capacity is
// ceil(c * m / n); a key goes to the first node of its walk whose load is
// below capacity, so no node ever holds more than capacity. HAProxy's
// hash-balance-factor walks this way (its capacity is per server, in
// proportion to weight: pass FindNodeUnderCapacity the rule you need);
// Envoy's hash_balance_factor bounds loads the same way but probes hosts in
// a shuffled order, which chash does not reproduce (refused below).

// ceil(c * (total_load + 1) / nodes), saturated to UINT64_MAX; 0 if nodes is
// 0 or c is not a finite number > 1. c is rounded to parts per million (the
// double's exact value times 10^6, to the nearest integer, halves away from
// zero) and the rest is exact integer arithmetic, so c = 1.1 means exactly
// 11/10.
uint64_t BoundedLoadCapacity(uint64_t total_load, uint32_t nodes, double balance_factor) noexcept;

// The first node, in the order of the (masked) walk from `hash`, whose load is
// below `capacity`; kNoNode if none is within one turn of the ring. Nodes at
// or past loads.size() are skipped. mask == nullptr: every node available.
// Hot-path form for callers that keep the total load themselves. Cost: as a
// masked lookup, walking past every node at capacity; when no available node
// with points is below capacity, O(num_nodes) after max(64, num_nodes) steps.
// kMaskRefused on envoy-ring and envoy-maglev rings, and with a mask on a
// ring that masks inexactly (MasksExactly).
uint32_t FindNodeUnderCapacity(const Ring& ring, uint32_t hash, std::span<const uint64_t> loads,
                               uint64_t capacity, const NodeMask* mask = nullptr) noexcept;
uint32_t FindNodeUnderCapacity(const Ring& ring, uint32_t hash, std::span<const uint32_t> loads,
                               uint64_t capacity, const NodeMask* mask = nullptr) noexcept;

// The bounded-load lookup in one call: n = the available nodes that own a
// kept point (every one of them is reachable from any key), total = their
// loads, capacity = BoundedLoadCapacity(total, n, c). Because the loads sum
// to less than n * capacity, some such node is below capacity and the walk
// finds it. Errors (kBadArgument): c not a finite number > 1, loads.size() <
// ring.num_nodes(), an envoy-ring or envoy-maglev ring, a mask on a ring
// that masks inexactly (the message says why and what to use instead).
// Ring::kNoNode if no available node owns a point.
// Cost: O(num_nodes) to sum the loads, then the walk. Allocates nothing but
// an error's message; kOutOfMemory if that cannot be allocated.
Result<uint32_t> FindNodeBoundedLoad(const Ring& ring, uint32_t hash,
                                     std::span<const uint64_t> loads, double balance_factor,
                                     const NodeMask* mask = nullptr);
Result<uint32_t> FindNodeBoundedLoad(const Ring& ring, uint32_t hash,
                                     std::span<const uint32_t> loads, double balance_factor,
                                     const NodeMask* mask = nullptr);

// ---- The failover order, each node once ---------------------------------------

// The nodes in the order the ring of the available nodes would walk them
// from a key's point, each once: the first is FindAvailableNodeByHash's
// answer, the next ones the failover order (at each hash, the winner if
// available, else its first available collision loser, as masked lookups
// rule). Without a mask, every node that owns a kept point, in ring order:
// Ring::WalkDistinct's walk, by the same code. The one walk behind retries
// over distinct nodes in C, the nginx modules, chash.resty and the Rust crate.
//
// The seen-set is the caller's: SeenWords(ring) words, e.g. on the stack, a
// request's pool or a Lua buffer; no allocation here. The ring, the mask and
// the words must outlive the walk; the mask must not change during it.
// Cost: all the Next() calls of one walk visit each point at most once
// (O(num_points) in all); a walk with nothing left to find stops after
// max(64, num_nodes) points with one O(num_nodes) count. Trivially
// destructible: drop it at any point.
class NodeWalk {
 public:
  static size_t SeenWords(const Ring& ring) noexcept { return (ring.num_nodes() + 63) / 64; }

  NodeWalk() noexcept = default;  // a walk that is done
  // `seen` must hold SeenWords(ring) words (a shorter span makes a walk that
  // is done at once); they are cleared here.
  NodeWalk(const Ring& ring, const NodeMask* mask, uint32_t hash,
           std::span<uint64_t> seen) noexcept;

  // The next node, or Ring::kNoNode when every reachable node has come.
  uint32_t Next() noexcept;

 private:
  static constexpr size_t kUnpositioned = ~size_t{0};
  const Ring* ring_ = nullptr;
  const NodeMask* mask_ = nullptr;
  PointCursor cursor_;
  uint64_t* seen_ = nullptr;
  uint64_t steps_ = 0;
  uint64_t points_ = 0;
  size_t loser_at_ = kUnpositioned;  // first collision loser at or after the cursor's hash
  uint32_t previous_hash_ = 0;
  uint32_t found_ = 0;
  uint32_t reachable_ = 0;   // nodes the walk can yield, once known
  bool counted_ = false;     // reachable_ known
};

}  // namespace chash
#pragma GCC visibility pop

#endif  // CHASH_FAILOVER_H_
