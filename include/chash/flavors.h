// Which program's ring a Ring reproduces, and the options each program's
// ring takes: the flavor, its name, the other programs' options, the tie
// and lookup rules, and the one check of them all (ValidateRingOptions).
// The engine's table of flavors (engine/flavors.h, engine/flavor_options.h)
// is the one place each flavor's facts are written; these are its public
// names. chash/ring.h and chash/address.h include this header.
#ifndef CHASH_FLAVORS_H_
#define CHASH_FLAVORS_H_

#include <array>
#include <cstdint>
#include <string_view>

#include "chash/status.h"

// Public API: exported from libchash.so (built with hidden visibility).
#pragma GCC visibility push(default)
namespace chash {

// Which program's ring to reproduce. Values are appended, never renumbered:
// a flavor's value is the byte snapshots and fingerprints write.
enum class Flavor : uint8_t {
  kNginx,      // nginx `hash $key consistent;` (1.22)
  kPingoraV1,  // pingora-ketama Continuum::new
  kPingoraV2,  // pingora-ketama Version::V2 { point_multiple }
  kResty,      // OpenResty lua-resty-balancer resty.chash (Apache APISIX's chash)
  // The rings below reproduce other programs; their options are in
  // RingOptions (below), their rules in tests/reference/COMPATIBILITY.md.
  kHaproxy,       // HAProxy `hash-type consistent` (2.x, 3.x)
  kKetamaMd5,     // MD5 ketama: libmemcached (weighted or not), twemproxy, libketama
  kVarnishShard,  // Varnish's shard director (vmod_directors, 6.x-7.x)
  kEnvoyRing,     // Envoy RING_HASH (64-bit points)
  kEnvoyMaglev,   // Envoy MAGLEV (a table, not a ring)
};

// "nginx", "pingora-v1", "pingora-v2", "resty", "haproxy", "ketama-md5",
// "varnish-shard", "envoy-ring", "envoy-maglev"; "unknown" past the enum.
std::string_view FlavorName(Flavor flavor) noexcept;
// The flavor FlavorName names so (every flavor); kBadArgument for any other
// name.
Result<Flavor> ParseFlavor(std::string_view name);

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

}  // namespace chash
#pragma GCC visibility pop

#endif  // CHASH_FLAVORS_H_
