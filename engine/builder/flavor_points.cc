// The other programs' flavors, dispatched: each flavor_points.h call checks
// what every program shares and hands the rest to the program's own file
// (program_points.h). Sorting and laying out the 32-bit points is shared.
#include "builder/flavor_points.h"

#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "address/envoy_address.h"
#include "builder/columns_builder.h"
#include "builder/program_points.h"
#include "builder/sorted_keys.h"
#include "flavors.h"
#include "layout/aligned_array.h"
#include "ring/ring_state.h"

namespace chash::internal {

bool IsPrime(uint64_t n) noexcept {
  if (n < 2) return false;
  for (uint64_t d = 2; d * d <= n; ++d) {
    if (n % d == 0) return false;
  }
  return true;
}

namespace program {

const char* OpaqueProblem(std::string_view text, bool strict, bool no_nul) {
  if (text.empty()) return "empty";
  if (text.size() > kMaxOpaqueBytes) return "longer than 4,096 bytes";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (strict && (byte <= 0x20 || byte == 0x7F)) return "holds whitespace or a control byte";
    if (no_nul && byte == 0) return "holds a NUL byte, where the program's C string would end";
  }
  return nullptr;
}

Status BadAddress(std::string_view text, std::string_view why) {
  std::string shown(text.substr(0, 64));
  if (text.size() > 64) shown += "...";
  return Bad(StatusCode::kBadAddress, "'" + shown + "': " + std::string(why));
}

Result<NodeAddress> OpaqueNode(std::string_view address, bool strict, bool no_nul) {
  if (const char* why = OpaqueProblem(address, strict, no_nul)) return BadAddress(address, why);
  NodeAddress out;
  out.opaque_id = true;
  out.written.assign(address);
  out.host.assign(address);
  return out;
}

uint32_t WeightedNodes(const std::vector<NodeInfo>& nodes) {
  return static_cast<uint32_t>(
      std::count_if(nodes.begin(), nodes.end(), [](const NodeInfo& n) { return n.weight > 0; }));
}

uint64_t TotalWeight(const std::vector<NodeInfo>& nodes) {
  uint64_t total = 0;
  for (const NodeInfo& node : nodes) total += node.weight;
  return total;
}

std::vector<std::string> PointPrefixes(const std::vector<NodeInfo>& nodes,
                                       std::string_view separator) {
  std::vector<std::string> prefixes(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].weight == 0) continue;
    prefixes[i].reserve(nodes[i].address.host.size() + separator.size() + 24);
    prefixes[i] = nodes[i].address.host;
    prefixes[i] += separator;
  }
  return prefixes;
}

}  // namespace program

using program::Bad;

namespace {

std::string_view Name(Flavor flavor) { return FlavorName(flavor); }

bool IsTwemproxy(const RingOptions& options) noexcept {
  return options.flavor == Flavor::kKetamaMd5 &&
         options.ketama.variant == KetamaVariant::kTwemproxy;
}

}  // namespace

// ---- Options --------------------------------------------------------------------------

Status ValidateProgramOptionsOrThrow(const RingOptions& options) {
  const Flavor flavor = options.flavor;
  const auto only_for = [&](bool differs, std::string_view field, Flavor owner) -> Status {
    if (!differs || flavor == owner) return Status();
    return Bad(StatusCode::kBadArgument,
               std::string(field) + " options are for " + std::string(Name(owner)) + " rings; a " +
                   std::string(Name(flavor)) + " ring leaves them at their defaults");
  };
  for (const Status& status :
       {only_for(!(options.haproxy == HaproxyOptions{}), "haproxy", Flavor::kHaproxy),
        only_for(!(options.ketama == KetamaOptions{}), "ketama", Flavor::kKetamaMd5),
        only_for(!(options.varnish == VarnishOptions{}), "varnish", Flavor::kVarnishShard),
        only_for(!(options.envoy_ring == EnvoyRingOptions{}), "envoy_ring", Flavor::kEnvoyRing),
        only_for(!(options.maglev == MaglevOptions{}), "maglev", Flavor::kEnvoyMaglev)}) {
    if (!status.ok()) return status;
  }
  if (!IsProgramFlavor(flavor)) return Status();
  if (options.point_multiple != kDefaultPointMultiple) {
    return Bad(StatusCode::kBadMultiple,
               std::string(Name(flavor)) +
                   " takes no point multiple (its program counts its own points); leave it at "
                   "160, got " +
                   std::to_string(options.point_multiple));
  }
  switch (flavor) {
    case Flavor::kHaproxy:
      return program::ValidateHaproxyOptions(options.haproxy);
    case Flavor::kKetamaMd5:
      return program::ValidateKetamaOptions(options.ketama);
    case Flavor::kVarnishShard:
      return program::ValidateVarnishOptions(options.varnish);
    case Flavor::kEnvoyRing:
      return program::ValidateEnvoyRingOptions(options.envoy_ring);
    case Flavor::kEnvoyMaglev:
      return program::ValidateMaglevOptions(options.maglev);
    CHASH_CRC32_FLAVOR_CASES:
      break;
  }
  return Status();
}

// ---- Nodes ----------------------------------------------------------------------------

namespace {

// "haproxy", "ketama-md5 and varnish-shard": the flavors whose nodes carry
// `field` (a node_field bit).
std::string FlavorsWithField(uint8_t field) {
  std::vector<std::string_view> names;
  for (const FlavorRow& row : kFlavors) {
    if ((row.node_fields & field) != 0) names.push_back(row.name);
  }
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i != 0) list += i + 1 == names.size() ? " and " : ", ";
    list += names[i];
  }
  return list;
}

}  // namespace

Result<HashedNode> ResolveNodeFields(const RingOptions& options, std::string_view address,
                                     const NodeOptions& node) {
  const FlavorRow* row = FindFlavor(options.flavor);
  const uint8_t reads = row == nullptr ? 0 : row->node_fields;
  const struct {
    bool given;
    uint8_t field;
    const char* what;
  } fields[] = {
      {node.server_id != 0, node_field::kServerId, "a server id is"},
      {!node.name.empty(), node_field::kName, "a server name is"},
      {!node.hostname.empty() || node.hash_hostname, node_field::kHostname,
       "a hostname (or use_hostname_for_hashing) is"},
      {!node.hash_key.empty(), node_field::kHashKey, "a hash_key is"},
      {node.real_weight.has_value(), node_field::kRealWeight, "a real (fractional) weight is"},
  };
  for (const auto& field : fields) {
    if (field.given && (reads & field.field) == 0) {
      return Bad(StatusCode::kBadArgument, std::string(field.what) + " for " +
                                               FlavorsWithField(field.field) + " rings, not " +
                                               std::string(Name(options.flavor)) + " ones");
    }
  }
  HashedNode out{std::nullopt, node};
  switch (options.flavor) {
    case Flavor::kVarnishShard:
      // vmod_directors hashes the backend's ident, else its VCL name.
      if (!node.name.empty()) out.replaced.emplace(node.name);
      out.rest.name = {};
      break;
    case Flavor::kEnvoyRing:
    case Flavor::kEnvoyMaglev:
      // Envoy's hashKey (thread_aware_lb_impl.h).
      if (!node.hash_key.empty()) {
        out.replaced.emplace(node.hash_key);
      } else if (node.hash_hostname) {
        if (node.hostname.empty()) {
          return Bad(StatusCode::kBadArgument,
                     "use_hostname_for_hashing and no hostname: Envoy would hash this "
                     "host's empty hostname");
        }
        out.replaced.emplace(node.hostname);
      } else {
        out.replaced = EnvoyAddressStringOf(address);
      }
      out.rest.hostname = {};
      out.rest.hash_key = {};
      out.rest.hash_hostname = false;
      break;
    case Flavor::kHaproxy:
    case Flavor::kKetamaMd5:
    CHASH_CRC32_FLAVOR_CASES:
      break;
  }
  return out;
}

Result<NodeAddress> ParseProgramNode(const RingOptions& options, std::string_view address,
                                     uint32_t weight, const NodeOptions& node) {
  const Flavor flavor = options.flavor;
  if (node.server_id != 0 && flavor != Flavor::kHaproxy) {
    return Bad(StatusCode::kBadArgument,
               "a server id is for haproxy rings, not " + std::string(Name(flavor)));
  }
  if (!node.name.empty() && !IsTwemproxy(options)) {
    return Bad(StatusCode::kBadArgument, "a server name is for twemproxy's ketama rings, not " +
                                             std::string(Name(flavor)) + " ones");
  }
  switch (flavor) {
    case Flavor::kHaproxy:
      return program::ParseHaproxyNode(address, weight, node);
    case Flavor::kKetamaMd5:
      return program::ParseKetamaNode(options, address, weight, node);
    case Flavor::kVarnishShard:
      return program::OpaqueNode(address, false, true);  // Varnish keeps a C string
    case Flavor::kEnvoyRing:
    case Flavor::kEnvoyMaglev:
      return program::OpaqueNode(address, false, false);
    CHASH_CRC32_FLAVOR_CASES:
      break;
  }
  return Bad(StatusCode::kBadArgument, "not a flavor of another program");
}

uint64_t NodePointsAlone(const RingOptions& options, uint32_t weight) noexcept {
  switch (options.flavor) {
    case Flavor::kHaproxy:
      return uint64_t{weight} * kHaproxyPointsPerWeight;
    case Flavor::kVarnishShard:
      return uint64_t{weight} * options.varnish.replicas;
    case Flavor::kKetamaMd5:
      return IsUnweightedKetama(options.ketama.variant) ? uint64_t{weight} * 100 : 0;
    case Flavor::kEnvoyRing:
    case Flavor::kEnvoyMaglev:
    CHASH_CRC32_FLAVOR_CASES:
      break;
  }
  return 0;
}

KeyHasher ProgramKeyHasher(const RingOptions& options, uint32_t weighted_nodes) noexcept {
  KeyHasher hasher;
  switch (options.flavor) {
    case Flavor::kHaproxy:
      return program::HaproxyKeyHasher(options.haproxy, weighted_nodes);
    case Flavor::kKetamaMd5:
      return program::KetamaKeyHasher(options.ketama, weighted_nodes);
    case Flavor::kVarnishShard:
      hasher.kind = KeyHashKind::kSha256Last4;
      return hasher;
    case Flavor::kEnvoyRing:
    case Flavor::kEnvoyMaglev:
      hasher.kind = KeyHashKind::kXxh64;
      return hasher;
    CHASH_CRC32_FLAVOR_CASES:
      break;
  }
  return hasher;  // CRC-32
}

PointCounts CountProgramPoints(const RingOptions& options, const std::vector<NodeInfo>& nodes) {
  PointCounts counts;
  counts.per_node.assign(nodes.size(), 0);
  switch (options.flavor) {
    case Flavor::kHaproxy:
      program::CountHaproxyPoints(nodes, counts);
      break;
    case Flavor::kKetamaMd5:
      program::CountKetamaPoints(options.ketama, nodes, counts);
      break;
    case Flavor::kVarnishShard:
      program::CountVarnishPoints(options.varnish, nodes, counts);
      break;
    case Flavor::kEnvoyRing:
      counts.per_node = EnvoyRingEntries(options.envoy_ring, EnvoyNormalizedWeights(nodes));
      break;
    case Flavor::kEnvoyMaglev:
      counts.total = program::WeightedNodes(nodes) == 0 ? 0 : options.maglev.table_size;
      return counts;
    CHASH_CRC32_FLAVOR_CASES:
      break;
  }
  counts.total = std::accumulate(counts.per_node.begin(), counts.per_node.end(), uint64_t{0});
  return counts;
}

// ---- Building ---------------------------------------------------------------------------

namespace {

Status TooManyPoints(const RingOptions& options, uint64_t total) {
  return Bad(StatusCode::kTooManyPoints, std::string(Name(options.flavor)) + " ring would have " +
                                             std::to_string(total) + " points, over the cap of " +
                                             std::to_string(options.max_points));
}

// The 32-bit point rings: the program generates every point as a
// PointSortKey (ties in configuration order), then sort and lay out keeping
// every point.
Status BuildPoints32(const RingOptions& options, RingState& state, const PointCounts& counts,
                     unsigned threads) {
  const std::vector<NodeInfo>& nodes = state.nodes;
  const uint64_t total = counts.total;
  // Small rings, or one thread: generate straight into the memory that
  // becomes the hash column and sort there. Otherwise generate into a
  // buffer of their own and scatter into it by buckets (16 bytes a point at
  // peak, the scatter's two arrays).
  const bool scatter = threads > 1 && total >= (uint64_t{1} << 20);
  PointKeyBuffer sorted;
  if (!sorted.Allocate(total, state.columns))
    return Status(StatusCode::kOutOfMemory,
                  "out of memory: cannot hold " + std::to_string(total) + " ring points");
  AlignedArray<uint64_t> generated;
  uint64_t* keys = sorted.data();
  if (scatter) {
    if (!generated.Allocate(total)) {
      return Status(StatusCode::kOutOfMemory,
                    "out of memory: cannot hold " + std::to_string(total) + " ring points");
    }
    keys = generated.data();
  }
  switch (options.flavor) {
    case Flavor::kHaproxy:
      program::GenerateHaproxyPoints(options.haproxy, nodes, counts, threads, keys);
      break;
    case Flavor::kKetamaMd5:
      program::GenerateKetamaPoints(options.ketama, nodes, counts, threads, keys);
      break;
    case Flavor::kVarnishShard:
      program::GenerateVarnishPoints(nodes, counts, threads, keys);
      break;
    case Flavor::kEnvoyRing:
    case Flavor::kEnvoyMaglev:
    CHASH_CRC32_FLAVOR_CASES:
      return Bad(StatusCode::kBadArgument, "not a 32-bit program flavor");
  }
  if (scatter) {
    if (!SortKeysInto(generated.data(), sorted.data(), total, threads)) {
      return Status(StatusCode::kOutOfMemory, "out of memory: sorting ring points");
    }
    generated = AlignedArray<uint64_t>();
  } else if (!SortKeysInPlace(sorted.data(), total)) {
    return Status(StatusCode::kOutOfMemory, "out of memory: sorting ring points");
  }
  const PastTheEnd past = FlavorLookupRule(options.flavor) == LookupRule::kSuccessorClamped
                              ? PastTheEnd::kLastPoint
                              : PastTheEnd::kFirstPoint;
  return LayOutEveryKey(sorted.data(), total, state.columns, past);
}

}  // namespace

Status BuildProgramRingOrThrow(const RingOptions& options, RingState& state, unsigned threads) {
  // Also refuses a value past the enumeration, which no switch below names.
  if (!IsProgramFlavor(options.flavor)) {
    return Bad(StatusCode::kBadArgument, "not a flavor of another program");
  }
  std::vector<NodeInfo>& nodes = state.nodes;
  const uint32_t weighted = program::WeightedNodes(nodes);
  if (options.flavor == Flavor::kHaproxy) AssignHaproxyServerIds(nodes);
  const bool envoy = options.flavor == Flavor::kEnvoyRing || options.flavor == Flavor::kEnvoyMaglev;
  const bool twemproxy = IsTwemproxy(options);
  if ((envoy || twemproxy) && program::TotalWeight(nodes) > UINT32_MAX) {
    return Bad(StatusCode::kBadWeight, std::string("the weights add up to more than 4294967295 (") +
                                           (envoy ? "Envoy refuses a larger sum of host weights)"
                                                  : "twemproxy's uint32_t total would wrap)"));
  }
  const PointCounts counts = CountProgramPoints(options, nodes);
  if (counts.total > options.max_points) return TooManyPoints(options, counts.total);
  if (twemproxy) {
    if (Status labels = program::CheckTwemproxyLabels(nodes, counts); !labels.ok()) return labels;
  }
  state.rule = FlavorLookupRule(options.flavor);
  state.key_hasher = ProgramKeyHasher(options, weighted);
  state.points_generated = counts.total;
  state.point_multiple = options.flavor == Flavor::kHaproxy        ? kHaproxyPointsPerWeight
                         : options.flavor == Flavor::kVarnishShard ? options.varnish.replicas
                                                                   : 0;
  switch (options.flavor) {
    case Flavor::kEnvoyRing:
      return program::BuildEnvoyRing(options, state, counts, threads);
    case Flavor::kEnvoyMaglev:
      if (weighted == 0) {
        state.points_generated = 0;
        return Status();
      }
      return program::BuildMaglevTable(options, state);
    case Flavor::kHaproxy:
    case Flavor::kKetamaMd5:
    case Flavor::kVarnishShard:
    CHASH_CRC32_FLAVOR_CASES:  // refused above
      break;
  }
  Status status = BuildPoints32(options, state, counts, threads);
  if (status.ok() && options.flavor == Flavor::kVarnishShard) {
    state.varnish_bisection = program::VarnishBisects(state);
  }
  return status;
}

}  // namespace chash::internal
