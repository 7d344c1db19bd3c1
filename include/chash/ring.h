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
// Varnish, Envoy) are flavors too, each with its options here:
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

// ---- The options of the other programs' flavors ------------------------------
// Each struct is read by its flavor only; the others leave it at its
// defaults (ValidateRingOptions refuses a changed one: kBadArgument). The
// defaults are each program's own.

// HAProxy `hash-type consistent <function> [avalanche]`: the key hash.
enum class HaproxyHash : uint8_t { kSdbm, kDjb2, kWt6, kCrc32 };
// Which HAProxy computes a server's points (HAProxy's `hash-key id`, the
// default and the only choice before 3.0):
enum class HaproxyServerKey : uint8_t {
  // full_hash(id x 4096 + j): HAProxy 2.x and 3.3 on (and 3.0-3.2 builds
  // with commit 03e9a5a1e, "BUG/MAJOR: lb-chash: fix key calculation").
  kId,
  // full_hash(full_hash(id) + j): HAProxy 3.0-3.2 without that fix.
  kIdUnfixed30,
};
struct HaproxyOptions {
  // `hash-type consistent` alone means sdbm with avalanche; naming a
  // function (`hash-type consistent sdbm`) drops the avalanche unless
  // `avalanche` follows it.
  HaproxyHash hash_function = HaproxyHash::kSdbm;
  bool avalanche = true;
  HaproxyServerKey server_key = HaproxyServerKey::kId;

  friend bool operator==(const HaproxyOptions&, const HaproxyOptions&) = default;
};

// Which program's MD5 ketama ring (points from MD5 digests, 4 points a
// digest, except libmemcached's unweighted KETAMA).
enum class KetamaVariant : uint8_t {
  // libmemcached MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED (and KETAMA with any
  // server of weight > 1): floor(float(weight/total x 40 x servers)) x 4
  // points from MD5("label-k"); keys MD5 by default.
  kLibmemcachedWeighted,
  // libmemcached MEMCACHED_BEHAVIOR_KETAMA: 100 points a server, each the
  // key hash of "label-k"; keys one-at-a-time by default. Weights 0 or 1:
  // a server of weight > 1 turns libmemcached's weighted continuum on while
  // the key hash stays, which is kLibmemcachedWeighted with key_hash
  // kOneAtATime (or the hash configured); chash refuses the weight and says so.
  kLibmemcachedUnweighted,
  // twemproxy (nutcracker) `distribution: ketama`: as the weighted
  // libmemcached ring, labels from the server's name; keys by the pool's
  // `hash:` (fnv1a_64 by default).
  kTwemproxy,
  // libketama (RJ/ketama): floorf(memory/total x 40 x servers) x 4 points
  // from MD5("address-k"), the address as written; keys MD5.
  kLibketama,
  // libmemcached MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA_SPY: as
  // kLibmemcachedUnweighted, from the labels "/host:port-k" (the port always
  // written). Weights 0 or 1.
  kLibmemcachedSpy,
  // KETAMA_SPY with a server of weight > 1, which turns libmemcached's
  // weighted continuum on: the weighted ring's MD5 points of the spy labels;
  // keys one-at-a-time by default (the hash the mode set stays).
  kLibmemcachedSpyWeighted,
};
// The key hash of a ketama ring: twemproxy's `hash:` names (libmemcached's
// hashkit functions of the same names agree with them: kMd5 and
// kOneAtATime are the two libmemcached's KETAMA modes use).
enum class KetamaKeyHash : uint8_t {
  kDefault,     // the variant's: MD5, except one-at-a-time (unweighted)
                // and fnv1a_64 (twemproxy)
  kMd5,         // little-endian u32 of MD5(key)[0..3]
  kOneAtATime,  // Jenkins one-at-a-time, bytes sign-extended
  kFnv1a64,     // twemproxy's "fnv1a_64": 32-bit FNV-1a from 0x84222325, prime 0x1b3
  kFnv1_64,     // low 32 bits of the 64-bit FNV-1
  kFnv1_32,
  kFnv1a32,
  kCrc32a,  // CRC-32/IEEE
  kCrc32,   // libmemcached's "crc32": bits 16..30 of the CRC-32, 0..32767
  // twemproxy 0.5's "crc16": the CRC-16/XMODEM table step in a 32-bit
  // state never masked to 16 bits (crc = crc << 8 ^ T[(crc >> 8 ^ b) & 0xff])
  kCrc16,
  kHsieh,    // Paul Hsieh's SuperFastHash (from 0)
  kMurmur,   // MurmurHash2, seed 0xdeadbeef x length
  kJenkins,  // Jenkins lookup3 hashlittle, initval 13
  // libmemcached's "murmur3": MurmurHash3_x86_32, seed 0xdeadbeef x length
  // (not in twemproxy)
  kMurmur3,
};
struct KetamaOptions {
  KetamaVariant variant = KetamaVariant::kLibmemcachedWeighted;
  KetamaKeyHash key_hash = KetamaKeyHash::kDefault;
  // The port a server written without one gets, and the port libmemcached
  // and twemproxy leave out of a server's label (both programs: 11211).
  uint32_t default_port = 11211;
  // twemproxy's `hash_tag: "XY"`: a key holding X and then, at least one
  // byte further on, Y, hashes only the bytes between the first X and the
  // first Y after it. Both '\0': no tag (the default). twemproxy only.
  std::array<char, 2> hash_tag{};

  friend bool operator==(const KetamaOptions&, const KetamaOptions&) = default;
};

struct VarnishOptions {
  // Points a backend of weight 1 gets (vmod_directors' `replicas`, 67 by
  // default); a backend of weight w gets replicas x w.
  uint32_t replicas = 67;

  friend bool operator==(const VarnishOptions&, const VarnishOptions&) = default;
};

// Envoy's ring_hash_lb_config.hash_function: how the points are hashed
// (keys are hashed with XXH64 whatever this says: Envoy's hash policy).
enum class EnvoyHash : uint8_t { kXxHash, kMurmurHash2 };
struct EnvoyRingOptions {
  uint64_t minimum_ring_size = 1024;     // 1..8,388,608 (Envoy's bound)
  uint64_t maximum_ring_size = 8388608;  // minimum_ring_size..8,388,608
  EnvoyHash hash_function = EnvoyHash::kXxHash;

  friend bool operator==(const EnvoyRingOptions&, const EnvoyRingOptions&) = default;
};

struct MaglevOptions {
  // A prime 2..5,000,011 (Envoy's bound; smaller than the host count
  // too, as Envoy takes it); Envoy's default 65,537.
  uint64_t table_size = 65537;

  friend bool operator==(const MaglevOptions&, const MaglevOptions&) = default;
};

struct RingOptions {
  Flavor flavor = Flavor::kNginx;
  // Points per weight unit. nginx and pingora v1 fix it at 160; pingora v2
  // and resty take any value >= 1 (resty.chash itself uses 160). The other
  // flavors take none: leave it at 160 (they count their points their way,
  // e.g. haproxy 16 a weight unit, varnish-shard `replicas`).
  uint32_t point_multiple = kDefaultPointMultiple;
  uint64_t max_points = kDefaultMaxPoints;
  // Threads Build() may use, the caller's included: 0 = the CPUs this
  // process may run on (its affinity mask, bounded by its cgroup's CPU
  // quota; at most 64); values above 256 count as 256. The ring is
  // bit-identical whatever the count (a tested guarantee); 1 keeps
  // the build on the calling thread (a proxy that must not take every core
  // while it serves).
  uint32_t build_threads = 0;
  HaproxyOptions haproxy = {};
  KetamaOptions ketama = {};
  VarnishOptions varnish = {};
  EnvoyRingOptions envoy_ring = {};
  MaglevOptions maglev = {};
};

// How a ring answers a key hash h. Every flavor's rule is its program's.
enum class LookupRule : uint8_t {
  // The first point >= h, else the first point: nginx, pingora, resty,
  // ketama-md5, envoy-ring.
  kSuccessor,
  // The first point >= h, else the LAST point (no wrap): varnish-shard.
  kSuccessorClamped,
  // The nearer of the first point >= h and the point before it, both
  // wrapping, the one before on a tie: haproxy.
  kNearest,
  // table[h mod table size]: envoy-maglev.
  kTable,
};

// The tie-break a flavor uses: kConfigOrder for nginx and pingora-v1 and
// every flavor after resty, kAddressOrder for pingora-v2, kIdOrder for resty.
TieBreak FlavorTieBreak(Flavor flavor) noexcept;

// Whether a flavor takes a point multiple other than 160: pingora-v2 and
// resty do; nginx and pingora-v1 fix it at kDefaultPointMultiple, and the
// other flavors take none (RingOptions::point_multiple stays 160).
bool FlavorTakesPointMultiple(Flavor flavor) noexcept;

// The flavor's lookup rule.
LookupRule FlavorLookupRule(Flavor flavor) noexcept;

// Whether a lookup under a node mask can answer exactly what the program
// answers with only the available nodes by skipping the others' points:
// true when a node's points do not depend on the other nodes (nginx,
// pingora, resty, haproxy, varnish-shard, libmemcached's unweighted ketama);
// false when they do (the weighted ketama variants rescale every count by
// the total weight and the live servers, Envoy's ring by the smallest
// weight, Maglev refills its table): those programs rebuild, and masked and
// bounded-load lookups on such a ring are refused (failover.h). The exact
// answer is then the ring built from the available nodes: BuildAvailableRing.
bool FlavorMasksExactly(const RingOptions& options) noexcept;

// The one check of RingOptions that RingBuilder::Add and Build, the C API's
// chash_builder_new and chash_builder_set_max_points, and the chash tool
// make: a known flavor (kBadArgument), a point multiple >= 1 and 160 for a
// flavor that fixes it or takes none (kBadMultiple), max_points in
// 1..kHardMaxPoints (kBadArgument), and the options of the flavor: haproxy
// enums in range; ketama-md5 a known variant and key hash, default_port
// 1..65535; varnish-shard replicas >= 1; envoy-ring 1 <= minimum_ring_size
// <= maximum_ring_size <= 8,388,608 (Envoy accepted a minimum of 0 and then
// chose no host: envoyproxy/envoy#31724); envoy-maglev a prime table size
// 2..5,000,011; the options of other flavors at their defaults
// (kBadArgument, naming the option). build_threads takes any value. OK, or
// the error whose message callers pass on (prefixed with their own context).
// Allocates only the message of an error (kOutOfMemory if that fails).
Status ValidateRingOptions(const RingOptions& options) noexcept;

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
  // points are made from instead of host[:port]. 1..4,096 bytes.
  std::string_view name = {};
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

  // The flavor's own key hash, then its lookup rule (every ring whose
  // FindNode is not the fused CRC32 kernel). Named "Other" in 1.0's
  // exported symbols: the name stays until 2.0.
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
