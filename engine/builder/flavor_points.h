// The other programs' flavors (HAProxy, MD5 ketama, Varnish's shard
// director, Envoy's ring and Maglev table): their options, how each reads a
// node, how many points each node gets and how the points are made.
// Each program's part is its own file (program_points.h names them).
// tests/reference/COMPATIBILITY.md states each program's rules; the
// reference ring (tests/reference/reference_programs.cc) is the plain model
// the tests and fuzzers hold this code to.
#ifndef CHASH_ENGINE_BUILD_FLAVOR_POINTS_H_
#define CHASH_ENGINE_BUILD_FLAVOR_POINTS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chash/ring.h"
#include "flavors.h"  // IsProgramFlavor: the flavors this file builds
#include "hash/program_hashes.h"

namespace chash::internal {

struct RingState;

// n is a prime (Maglev's table sizes). O(sqrt(n)) divisions.
bool IsPrime(uint64_t n) noexcept;

// libmemcached's KETAMA and KETAMA_SPY: 100 points a server, each the key
// hash of its label; the other ketama variants make 4 points an MD5 digest.
constexpr bool IsUnweightedKetama(KetamaVariant variant) noexcept {
  return variant == KetamaVariant::kLibmemcachedUnweighted ||
         variant == KetamaVariant::kLibmemcachedSpy;
}
constexpr bool IsSpy(KetamaVariant variant) noexcept {
  return variant == KetamaVariant::kLibmemcachedSpy ||
         variant == KetamaVariant::kLibmemcachedSpyWeighted;
}

// HAProxy's weight range (SRV_UWGHT_RANGE) and points per weight unit
// (BE_WEIGHT_SCALE), and its server ids' range (`id` is an int > 0).
inline constexpr uint32_t kHaproxyMaxWeight = 256;
inline constexpr uint32_t kHaproxyPointsPerWeight = 16;
inline constexpr uint32_t kHaproxyMaxServerId = 0x7FFFFFFF;
// Envoy's bounds on ring sizes and Maglev table sizes (their protos'
// validation rules: lte 8388608, lte 5000011).
inline constexpr uint64_t kEnvoyMaxRingSize = 8388608;
inline constexpr uint64_t kMaglevMaxTableSize = 5000011;
// libketama's serverinfo.addr is char[22]; twemproxy formats "name-k" into
// char[86] (KETAMA_MAX_HOSTLEN) and hashes what fits.
inline constexpr size_t kLibketamaMaxAddress = 21;
inline constexpr size_t kTwemproxyMaxLabel = 85;
inline constexpr size_t kMaxOpaqueBytes = 4096;

// The option checks of ValidateRingOptions for these flavors, and that the
// options of the flavors a ring does not have stay at their defaults.
// Throws std::bad_alloc (messages).
Status ValidateProgramOptionsOrThrow(const RingOptions& options);

// What a program hashes for a node given with its fields (NodeOptions):
// the address, or `replaced`, what a field makes of it (varnish-shard's
// name; Envoy's hash_key, else with hash_hostname the hostname, else the
// address as Envoy prints it); `rest` is the node without the fields
// `replaced` took. kBadArgument, naming the field and the flavors that
// read it (FlavorRow::node_fields), for a field the flavor does not read,
// and for hash_hostname without a hostname. Allocates only where a field
// replaces the address (and for an error); throws std::bad_alloc.
struct HashedNode {
  std::optional<std::string> replaced;
  NodeOptions rest;
};
Result<HashedNode> ResolveNodeFields(const RingOptions& options, std::string_view address,
                                     const NodeOptions& node);

// A node as the flavor reads it: the address text, the weight's range, the
// node options it takes. `host` of the result is what the points are made
// from (address.h); the caller adds the node's label to messages. Throws
// std::bad_alloc.
Result<NodeAddress> ParseProgramNode(const RingOptions& options, std::string_view address,
                                     uint32_t weight, const NodeOptions& node);

// Varnish's point count for a backend of REAL weight `weight` (an integer
// weight too, in a ring with a real one): trunc(replicas x max(w, 1))
// (vmod_directors counts a weight below 1 as 1). kBadArgument for a weight
// that is not a finite number >= 0, kTooManyPoints above 2^32 - 1.
Result<uint32_t> VarnishPointCount(uint32_t replicas, double weight);

// Points a node of this weight generates, as far as the node alone says:
// exact for haproxy, libmemcached's unweighted ketama and varnish-shard
// (before Varnish's cap of (2^32 - 2) / backends); 0 for the flavors whose
// counts depend on every node (checked by Build).
uint64_t NodePointsAlone(const RingOptions& options, uint32_t weight) noexcept;

// HAProxy's automatic server ids (NodeOptions::server_id): fills every id
// that is 0. Ids given are distinct (RingBuilder::Add checks). Throws
// std::bad_alloc.
void AssignHaproxyServerIds(std::vector<NodeInfo>& nodes);

// The key hash a ketama ring uses: KetamaOptions::key_hash, kDefault
// resolved to its variant's (md5, one-at-a-time unweighted, fnv1a_64
// twemproxy).
KetamaKeyHash ResolvedKetamaKeyHash(const KetamaOptions& options) noexcept;

// The ring's key hasher: the flavor's key hash, constant 0 where the
// program does not hash with one server (libmemcached, twemproxy, HAProxy).
KeyHasher ProgramKeyHasher(const RingOptions& options, uint32_t weighted_nodes) noexcept;

// Each node's point count as its program computes it (0 for weight 0),
// and the total. For envoy-maglev the table size.
struct PointCounts {
  std::vector<uint64_t> per_node;
  uint64_t total = 0;
};
PointCounts CountProgramPoints(const RingOptions& options, const std::vector<NodeInfo>& nodes);

// Envoy's normalized host weights of integer weights (thread_aware_lb_impl.cc
// normalizeHostWeights without localities): weight x 1.0 / sum, 0 for weight 0.
std::vector<double> EnvoyNormalizedWeights(const std::vector<NodeInfo>& nodes);

// Envoy's ring: each host's entry count from its normalized weight (0: not
// on the ring), in host order: the Ring constructor's scale and targets.
// Callers that normalize as Envoy does with locality weights (the
// --envoy-cluster reader) compare these counts with their integer weights'.
std::vector<uint64_t> EnvoyRingEntries(const EnvoyRingOptions& options,
                                       const std::vector<double>& normalized);

// Envoy's Maglev table of hosts `keys` (their hash keys, distinct) with
// their normalized weights (0: no entry), in `table` (its size is the
// table's, a prime; at least one host of weight > 0 leaves it all filled):
// the host index of each entry. O(table x hosts) at worst, allocation of a
// bit a table entry.
void MaglevFill(const std::vector<std::string_view>& keys, const std::vector<double>& normalized,
                std::span<uint16_t> table);

// Builds the columns (or the Maglev table) of `state` from its nodes, whose
// server ids are assigned; state.points_generated, rule, key hasher and
// multiple are set. kTooManyPoints over options.max_points, kBadWeight or
// kTooManyNodes for the limits only the whole set shows, kOutOfMemory.
// Throws std::bad_alloc.
Status BuildProgramRingOrThrow(const RingOptions& options, RingState& state, unsigned threads);

// The label libmemcached and twemproxy give a server "host[:port]"; the
// point strings are label + "-" + k.
std::string KetamaLabel(const RingOptions& options, std::string_view host, std::string_view port);

}  // namespace chash::internal

#endif  // CHASH_ENGINE_BUILD_FLAVOR_POINTS_H_
