#include "builder/flavor_points.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <numeric>
#include <string>
#include <unordered_set>

#include "builder/columns_builder.h"
#include "builder/parallel.h"
#include "builder/sorted_keys.h"
#include "flavors.h"
#include "hwy/contrib/sort/vqsort.h"
#include "layout/aligned_array.h"
#include "ring_state.h"
#include "simd/search.h"

namespace chash::internal {

bool IsPrime(uint64_t n) noexcept {
  if (n < 2) return false;
  for (uint64_t d = 2; d * d <= n; ++d) {
    if (n % d == 0) return false;
  }
  return true;
}

namespace {

Status Bad(StatusCode code, std::string message) { return Status(code, std::move(message)); }

std::string_view Name(Flavor flavor) { return FlavorName(flavor); }

// Text the program prints back or hashes: 1..4,096 bytes; `strict` refuses
// whitespace and control bytes (names that go on a command line or in a
// servers file), `no_nul` refuses NUL only (a C string ends there).
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

// HOST[:PORT] or [IPV6][:PORT], as libmemcached's and twemproxy's users
// write a server: host is the text before the last ':' (without brackets),
// port 1..65535 in decimal (default_port if absent). `port_text` is the port
// as written (empty if absent).
struct HostPort {
  std::string_view host;
  std::string_view port_text;
  uint32_t port = 0;
};
Result<HostPort> SplitHostPort(std::string_view text, uint32_t default_port) {
  if (const char* why = OpaqueProblem(text, true, true)) return BadAddress(text, why);
  HostPort out;
  std::string_view rest;
  if (text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return BadAddress(text, "'[' without ']'");
    out.host = text.substr(1, close - 1);
    rest = text.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return BadAddress(text, "expected ':PORT' after ']'");
    if (!rest.empty()) rest.remove_prefix(1);
    if (!rest.empty() || text.back() == ':') out.port_text = rest;
    if (text.back() == ':' && rest.empty()) return BadAddress(text, "empty port");
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      out.host = text;
    } else {
      if (text.find(':') != colon) {
        return BadAddress(text, "IPv6 addresses need brackets: [ADDR]:PORT");
      }
      out.host = text.substr(0, colon);
      out.port_text = text.substr(colon + 1);
      if (out.port_text.empty()) return BadAddress(text, "empty port");
    }
  }
  if (out.host.empty()) return BadAddress(text, "empty host");
  if (out.port_text.empty()) {
    out.port = default_port;
    return out;
  }
  uint64_t port = 0;
  for (const char c : out.port_text) {
    if (c < '0' || c > '9' || port > 65535) return BadAddress(text, "port must be 1..65535");
    port = port * 10 + static_cast<uint64_t>(c - '0');
  }
  if (port == 0 || port > 65535) return BadAddress(text, "port must be 1..65535");
  out.port = static_cast<uint32_t>(port);
  return out;
}

std::string Decimal(uint64_t value) { return std::to_string(value); }

// Appends the decimal digits of `value` to `out` (no allocation past `out`'s
// room: callers reserve).
size_t WriteDecimal(char* out, uint64_t value) noexcept {
  const auto result = std::to_chars(out, out + 20, value);
  return static_cast<size_t>(result.ptr - out);
}

// Splits the nodes into `threads` runs of about equal point counts and runs
// generate(node, offset) for every node of positive count, `offset` the
// index of its first point (the nodes' points follow one another in order).
template <typename Generate>
void GenerateEveryNode(const PointCounts& counts, unsigned threads, Generate&& generate) {
  const size_t n = counts.per_node.size();
  std::vector<uint64_t> offset(n + 1, 0);
  for (size_t i = 0; i < n; ++i) offset[i + 1] = offset[i] + counts.per_node[i];
  threads =
      std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(std::max<size_t>(n, 1))));
  std::vector<size_t> first(threads + 1, n);
  first[0] = 0;
  for (size_t i = 0, t = 1; i < n && t < threads; ++i) {
    if (offset[i + 1] * threads >= counts.total * t) first[t++] = i + 1;
  }
  for (unsigned t = 1; t <= threads; ++t) first[t] = std::max(first[t], first[t - 1]);
  ParallelFor(threads, threads, [&](unsigned t) {
    for (size_t i = first[t]; i < first[t + 1]; ++i) {
      if (counts.per_node[i] > 0) generate(static_cast<uint32_t>(i), offset[i]);
    }
  });
}

// ---- Point counts ------------------------------------------------------------------

uint32_t WeightedNodes(const std::vector<NodeInfo>& nodes) {
  return static_cast<uint32_t>(
      std::count_if(nodes.begin(), nodes.end(), [](const NodeInfo& n) { return n.weight > 0; }));
}

uint64_t TotalWeight(const std::vector<NodeInfo>& nodes) {
  uint64_t total = 0;
  for (const NodeInfo& node : nodes) total += node.weight;
  return total;
}

// libmemcached's update_continuum (hosts.cc): every step in float, then the
// float 1e-10F added (absorbed), floored, times 4.
uint64_t LibmemcachedWeightedPoints(uint32_t weight, uint64_t total_weight, uint32_t live) {
  const float pct = static_cast<float>(weight) / static_cast<float>(total_weight);
  const float product =
      pct * static_cast<float>(160) / static_cast<float>(4) * static_cast<float>(live) + 1e-10F;
  return static_cast<uint64_t>(std::floor(product)) * 4;
}

// twemproxy's ketama_update (nc_ketama.c): the float product, 1e-10 added
// in double, back to float, floorf, times 4.
uint64_t TwemproxyPoints(uint32_t weight, uint32_t total_weight, uint32_t live) {
  const float pct = static_cast<float>(weight) / static_cast<float>(total_weight);
  const float product =
      pct * static_cast<float>(160) / static_cast<float>(4) * static_cast<float>(live);
  const float with_epsilon = static_cast<float>(static_cast<double>(product) + 0.0000000001);
  return static_cast<uint64_t>(std::floor(with_epsilon)) * 4;
}

// libketama's ketama_create_continuum: floorf(pct * 40.0 * (float)n), the
// product in double (40.0 is a double) rounded to float by floorf's argument.
uint64_t LibketamaPoints(uint32_t weight, uint64_t total_memory, uint32_t servers) {
  const float pct = static_cast<float>(weight) / static_cast<float>(total_memory);
  const double product =
      static_cast<double>(pct) * 40.0 * static_cast<double>(static_cast<float>(servers));
  return static_cast<uint64_t>(std::floor(static_cast<float>(product))) * 4;
}


}  // namespace

// ---- Options --------------------------------------------------------------------------

// Which program offers the key hash: libmemcached's hashkit has no crc16
// and no crc32a, twemproxy no murmur3, libketama MD5 alone.
const char* KetamaKeyHashProblem(const KetamaOptions& ketama) noexcept {
  const KetamaKeyHash hash = ketama.key_hash;
  switch (ketama.variant) {
    case KetamaVariant::kTwemproxy:
      return hash == KetamaKeyHash::kMurmur3 ? "twemproxy has no murmur3 key hash" : nullptr;
    case KetamaVariant::kLibketama:
      return hash == KetamaKeyHash::kDefault || hash == KetamaKeyHash::kMd5
                 ? nullptr
                 : "libketama hashes keys with MD5 only";
    default:
      return hash == KetamaKeyHash::kCrc16 || hash == KetamaKeyHash::kCrc32a
                 ? "libmemcached has no crc16 or crc32a key hash (its \"crc\" is kCrc32)"
                 : nullptr;
  }
}

const char* HashTagProblem(const KetamaOptions& ketama) noexcept {
  const bool none = ketama.hash_tag[0] == '\0' && ketama.hash_tag[1] == '\0';
  if (none) return nullptr;
  if (ketama.variant != KetamaVariant::kTwemproxy) return "only twemproxy has a hash_tag";
  if (ketama.hash_tag[0] == '\0' || ketama.hash_tag[1] == '\0') {
    return "twemproxy's hash_tag is two bytes, neither of them NUL";
  }
  return nullptr;
}

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
      if (static_cast<uint8_t>(options.haproxy.hash_function) > 3) {
        return Bad(StatusCode::kBadArgument,
                   "haproxy hash function " +
                       std::to_string(static_cast<int>(options.haproxy.hash_function)) +
                       " is none of sdbm, djb2, wt6, crc32");
      }
      if (static_cast<uint8_t>(options.haproxy.server_key) > 1) {
        return Bad(StatusCode::kBadArgument, "haproxy server key is neither id nor id-unfixed-3.0");
      }
      break;
    case Flavor::kKetamaMd5:
      if (static_cast<uint8_t>(options.ketama.variant) >
          static_cast<uint8_t>(KetamaVariant::kLibmemcachedSpyWeighted)) {
        return Bad(StatusCode::kBadArgument,
                   "ketama variant " + std::to_string(static_cast<int>(options.ketama.variant)) +
                       " is none of libmemcached-weighted, libmemcached-unweighted, twemproxy, "
                       "libketama, libmemcached-spy, libmemcached-spy-weighted");
      }
      if (static_cast<uint8_t>(options.ketama.key_hash) >
          static_cast<uint8_t>(KetamaKeyHash::kMurmur3)) {
        return Bad(StatusCode::kBadArgument,
                   "ketama key hash " + std::to_string(static_cast<int>(options.ketama.key_hash)) +
                       " is not a KetamaKeyHash");
      }
      if (const char* why = KetamaKeyHashProblem(options.ketama)) {
        return Bad(StatusCode::kBadArgument, why);
      }
      if (const char* why = HashTagProblem(options.ketama)) {
        return Bad(StatusCode::kBadArgument, why);
      }
      if (options.ketama.default_port == 0 || options.ketama.default_port > 65535) {
        return Bad(StatusCode::kBadArgument, "ketama default port must be 1..65535, got " +
                                                 std::to_string(options.ketama.default_port));
      }
      break;
    case Flavor::kVarnishShard:
      if (options.varnish.replicas == 0) {
        return Bad(StatusCode::kBadArgument, "varnish replicas must be at least 1");
      }
      break;
    case Flavor::kEnvoyRing: {
      const EnvoyRingOptions& ring = options.envoy_ring;
      if (ring.minimum_ring_size == 0) {
        return Bad(StatusCode::kBadArgument,
                   "envoy minimum_ring_size must be at least 1 (Envoy took 0 and then chose no "
                   "host for any request: envoyproxy/envoy#31724)");
      }
      if (ring.minimum_ring_size > kEnvoyMaxRingSize ||
          ring.maximum_ring_size > kEnvoyMaxRingSize) {
        return Bad(StatusCode::kBadArgument,
                   "envoy ring sizes are at most 8388608 (minimum_ring_size " +
                       std::to_string(ring.minimum_ring_size) + ", maximum_ring_size " +
                       std::to_string(ring.maximum_ring_size) + ")");
      }
      if (ring.minimum_ring_size > ring.maximum_ring_size) {
        return Bad(StatusCode::kBadArgument,
                   "envoy ring hash: minimum_ring_size (" + std::to_string(ring.minimum_ring_size) +
                       ") > maximum_ring_size (" + std::to_string(ring.maximum_ring_size) + ")");
      }
      if (static_cast<uint8_t>(ring.hash_function) > 1) {
        return Bad(StatusCode::kBadArgument,
                   "envoy hash function is neither XX_HASH nor MURMUR_HASH_2");
      }
      break;
    }
    case Flavor::kEnvoyMaglev:
      if (options.maglev.table_size < 2 || options.maglev.table_size > kMaglevMaxTableSize ||
          !IsPrime(options.maglev.table_size)) {
        return Bad(StatusCode::kBadArgument,
                   "the maglev table size must be a prime 2..5000011 (Envoy's bound; default "
                   "65537), got " +
                       std::to_string(options.maglev.table_size));
      }
      break;
    default:
      break;
  }
  return Status();
}

// ---- Nodes ----------------------------------------------------------------------------

std::string KetamaLabel(const RingOptions& options, std::string_view host, std::string_view port) {
  // port: as written for twemproxy (it cuts the line's text), as a number
  // (%u) for libmemcached; left out when it is the default port.
  std::string label(host);
  uint32_t value = 0;
  for (const char c : port) value = value * 10 + static_cast<uint32_t>(c - '0');
  if (port.empty() || value == options.ketama.default_port) return label;
  label += ':';
  if (options.ketama.variant == KetamaVariant::kTwemproxy) {
    label += port;
  } else {
    label += Decimal(value);
  }
  return label;
}

Result<NodeAddress> ParseProgramNode(const RingOptions& options, std::string_view address,
                                     uint32_t weight, const NodeOptions& node) {
  const Flavor flavor = options.flavor;
  const bool twemproxy =
      flavor == Flavor::kKetamaMd5 && options.ketama.variant == KetamaVariant::kTwemproxy;
  if (node.server_id != 0 && flavor != Flavor::kHaproxy) {
    return Bad(StatusCode::kBadArgument,
               "a server id is for haproxy rings, not " + std::string(Name(flavor)));
  }
  if (!node.name.empty() && !twemproxy) {
    return Bad(StatusCode::kBadArgument, "a server name is for twemproxy's ketama rings, not " +
                                             std::string(Name(flavor)) + " ones");
  }
  NodeAddress out;
  out.opaque_id = true;
  switch (flavor) {
    case Flavor::kHaproxy: {
      if (weight > kHaproxyMaxWeight) {
        return Bad(StatusCode::kBadWeight,
                   "weight " + std::to_string(weight) + ": HAProxy's weights are 0..256");
      }
      if (node.server_id > kHaproxyMaxServerId) {
        return Bad(StatusCode::kBadArgument, "server id " + std::to_string(node.server_id) +
                                                 ": HAProxy's ids are 1..2147483647");
      }
      if (const char* why = OpaqueProblem(address, true, true)) return BadAddress(address, why);
      out.written.assign(address);
      out.host.assign(address);
      return out;
    }
    case Flavor::kKetamaMd5: {
      const KetamaVariant variant = options.ketama.variant;
      const bool spy = IsSpy(variant);
      if ((variant == KetamaVariant::kLibmemcachedUnweighted ||
           variant == KetamaVariant::kLibmemcachedSpy) &&
          weight > 1) {
        return Bad(StatusCode::kBadWeight,
                   "weight " + std::to_string(weight) +
                       ": libmemcached's unweighted ketama takes weights 0 and 1 (a server of "
                       "weight > 1 turns libmemcached's weighted continuum on and keeps the key "
                       "hash: use " +
                       (spy ? std::string("libmemcached-spy-weighted")
                            : std::string("libmemcached-weighted with key hash one-at-a-time")) +
                       ", or the key hash you configured)");
      }
      if (variant == KetamaVariant::kLibketama) {
        if (const char* why = OpaqueProblem(address, true, true)) return BadAddress(address, why);
        if (address.size() > kLibketamaMaxAddress) {
          return BadAddress(address, "libketama keeps at most 21 bytes of an address (addr[22])");
        }
        out.written.assign(address);
        out.host.assign(address);
        return out;
      }
      Result<HostPort> split = SplitHostPort(address, options.ketama.default_port);
      if (!split.ok()) return split.status();
      out.written.assign(address);
      if (spy) {
        // libmemcached's "/%s:%u" whatever the port.
        out.host = "/" + std::string(split.value().host) + ":" + Decimal(split.value().port);
      } else if (twemproxy && !node.name.empty()) {
        if (const char* why = OpaqueProblem(node.name, true, true)) {
          return Bad(StatusCode::kBadAddress, "server name: " + std::string(why));
        }
        out.host.assign(node.name);
      } else {
        out.host = KetamaLabel(options, split.value().host, split.value().port_text);
      }
      out.port = std::to_string(split.value().port);
      return out;
    }
    case Flavor::kVarnishShard:
    case Flavor::kEnvoyRing:
    case Flavor::kEnvoyMaglev: {
      const bool varnish = flavor == Flavor::kVarnishShard;
      if (const char* why = OpaqueProblem(address, false, varnish)) {
        return BadAddress(address, why);
      }
      out.written.assign(address);
      out.host.assign(address);
      return out;
    }
    default:
      return Bad(StatusCode::kBadArgument, "not a flavor of another program");
  }
}

uint64_t NodePointsAlone(const RingOptions& options, uint32_t weight) noexcept {
  switch (options.flavor) {
    case Flavor::kHaproxy:
      return uint64_t{weight} * kHaproxyPointsPerWeight;
    case Flavor::kVarnishShard:
      return uint64_t{weight} * options.varnish.replicas;
    case Flavor::kKetamaMd5:
      return IsUnweightedKetama(options.ketama.variant) ? uint64_t{weight} * 100 : 0;
    default:
      return 0;
  }
}

void AssignHaproxyServerIds(std::vector<NodeInfo>& nodes) {
  std::unordered_set<uint32_t> used;
  for (const NodeInfo& node : nodes) {
    if (node.server_id != 0) used.insert(node.server_id);
  }
  uint64_t next = 1;
  for (NodeInfo& node : nodes) {
    if (node.server_id == 0) {
      while (used.count(static_cast<uint32_t>(next)) != 0) ++next;
      node.server_id = static_cast<uint32_t>(next);
      used.insert(node.server_id);
    }
    ++next;  // after every server, its id given or assigned
  }
}

KetamaKeyHash ResolvedKetamaKeyHash(const KetamaOptions& options) noexcept {
  if (options.key_hash != KetamaKeyHash::kDefault) return options.key_hash;
  switch (options.variant) {
    case KetamaVariant::kLibmemcachedUnweighted:
    case KetamaVariant::kLibmemcachedSpy:
    case KetamaVariant::kLibmemcachedSpyWeighted:
      return KetamaKeyHash::kOneAtATime;
    case KetamaVariant::kTwemproxy:
      return KetamaKeyHash::kFnv1a64;
    default:
      return KetamaKeyHash::kMd5;
  }
}

KeyHasher ProgramKeyHasher(const RingOptions& options, uint32_t weighted_nodes) noexcept {
  KeyHasher hasher;
  switch (options.flavor) {
    case Flavor::kHaproxy: {
      constexpr KeyHashKind kKinds[] = {KeyHashKind::kHaproxySdbm, KeyHashKind::kHaproxyDjb2,
                                        KeyHashKind::kHaproxyWt6, KeyHashKind::kCrc32};
      hasher.kind = kKinds[static_cast<uint8_t>(options.haproxy.hash_function) & 3];
      hasher.avalanche = options.haproxy.avalanche;
      hasher.constant_zero = weighted_nodes == 1;  // HAProxy's one usable server: h = 0
      return hasher;
    }
    case Flavor::kKetamaMd5: {
      const KetamaVariant variant = options.ketama.variant;
      const KetamaKeyHash key_hash = ResolvedKetamaKeyHash(options.ketama);
      constexpr KeyHashKind kKinds[] = {
          KeyHashKind::kMd5Le32, KeyHashKind::kMd5Le32, KeyHashKind::kOneAtATime,
          KeyHashKind::kFnv1a64, KeyHashKind::kFnv1_64, KeyHashKind::kFnv1_32,
          KeyHashKind::kFnv1a32, KeyHashKind::kCrc32,   KeyHashKind::kCrc32Bits15,
          KeyHashKind::kCrc16,   KeyHashKind::kHsieh,   KeyHashKind::kMurmur,
          KeyHashKind::kJenkins, KeyHashKind::kMurmur3};
      static_assert(std::size(kKinds) == static_cast<size_t>(KetamaKeyHash::kMurmur3) + 1);
      hasher.kind = kKinds[std::min<size_t>(static_cast<uint8_t>(key_hash), std::size(kKinds) - 1)];
      hasher.tagged = options.ketama.hash_tag[0] != '\0';
      hasher.tag = options.ketama.hash_tag;
      // libmemcached and twemproxy: one server, no hashing (hash 0);
      // twemproxy: an empty key hashes to 0. libketama hashes always.
      hasher.constant_zero = variant != KetamaVariant::kLibketama && weighted_nodes == 1;
      hasher.zero_for_empty = variant == KetamaVariant::kTwemproxy;
      return hasher;
    }
    case Flavor::kVarnishShard:
      hasher.kind = KeyHashKind::kSha256Last4;
      return hasher;
    case Flavor::kEnvoyRing:
    case Flavor::kEnvoyMaglev:
      hasher.kind = KeyHashKind::kXxh64;
      return hasher;
    default:
      return hasher;  // CRC-32
  }
}

PointCounts CountProgramPoints(const RingOptions& options, const std::vector<NodeInfo>& nodes) {
  PointCounts counts;
  counts.per_node.assign(nodes.size(), 0);
  const uint32_t live = WeightedNodes(nodes);
  const uint64_t total_weight = TotalWeight(nodes);
  switch (options.flavor) {
    case Flavor::kHaproxy:
      for (size_t i = 0; i < nodes.size(); ++i) {
        counts.per_node[i] = uint64_t{nodes[i].weight} * kHaproxyPointsPerWeight;
      }
      break;
    case Flavor::kKetamaMd5:
      for (size_t i = 0; i < nodes.size(); ++i) {
        const uint32_t w = nodes[i].weight;
        if (w == 0) continue;
        switch (options.ketama.variant) {
          case KetamaVariant::kLibmemcachedWeighted:
          case KetamaVariant::kLibmemcachedSpyWeighted:
            counts.per_node[i] = LibmemcachedWeightedPoints(w, total_weight, live);
            break;
          case KetamaVariant::kLibmemcachedUnweighted:
          case KetamaVariant::kLibmemcachedSpy:
            counts.per_node[i] = 100;
            break;
          case KetamaVariant::kTwemproxy:
            counts.per_node[i] = TwemproxyPoints(w, static_cast<uint32_t>(total_weight), live);
            break;
          case KetamaVariant::kLibketama:
            counts.per_node[i] = LibketamaPoints(w, total_weight, live);
            break;
        }
      }
      break;
    case Flavor::kVarnishShard: {
      // vmod_directors_shard_cfg.c: at most (UINT32_MAX - 1) / backends a backend.
      const uint64_t cap = live == 0 ? 0 : (uint64_t{UINT32_MAX} - 1) / live;
      for (size_t i = 0; i < nodes.size(); ++i) {
        counts.per_node[i] = std::min(uint64_t{nodes[i].weight} * options.varnish.replicas, cap);
      }
      break;
    }
    case Flavor::kEnvoyRing:
      counts.per_node = EnvoyRingEntries(options.envoy_ring, EnvoyNormalizedWeights(nodes));
      break;
    case Flavor::kEnvoyMaglev:
      counts.total = live == 0 ? 0 : options.maglev.table_size;
      return counts;
    default:
      break;
  }
  counts.total = std::accumulate(counts.per_node.begin(), counts.per_node.end(), uint64_t{0});
  return counts;
}

// ---- Building ---------------------------------------------------------------------------

namespace {

// Each node's point-string buffer: its host, the separator, room for a
// number. Made before the points are generated, because the generation runs
// as ParallelFor's work, which must not allocate (nor throw). Throws
// std::bad_alloc.
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

// The string a point is hashed from: the node's prefix then the decimal of
// k, written in place in the prefix's buffer (PointPrefixes' room).
class PointString {
 public:
  explicit PointString(std::string& prefix) noexcept
      : text_(prefix.data()), prefix_size_(prefix.size()) {}
  std::string_view With(uint64_t k) noexcept {
    const size_t digits = WriteDecimal(text_ + prefix_size_, k);
    return std::string_view(text_, prefix_size_ + digits);
  }

 private:
  char* text_;
  size_t prefix_size_;
};

Status TooManyPoints(const RingOptions& options, uint64_t total) {
  return Bad(StatusCode::kTooManyPoints, std::string(Name(options.flavor)) + " ring would have " +
                                             std::to_string(total) + " points, over the cap of " +
                                             std::to_string(options.max_points));
}

// The 32-bit point rings: generate every point as a PointSortKey (ties in
// configuration order), sort, lay out keeping every point.
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
  const auto key = [](uint32_t hash, uint32_t node) { return PointSortKey(hash, node, node); };
  switch (options.flavor) {
    case Flavor::kHaproxy: {
      const bool unfixed = options.haproxy.server_key == HaproxyServerKey::kIdUnfixed30;
      GenerateEveryNode(counts, threads, [&](uint32_t node, uint64_t first) {
        uint64_t* out = keys + first;
        const uint32_t id = nodes[node].server_id;
        // HAProxy computes in unsigned int: id x 4096 wraps past 2^20 ids.
        const uint32_t base = unfixed ? HaproxyFullHash(id) : id * 4096u;
        for (uint64_t j = 0; j < counts.per_node[node]; ++j) {
          out[j] = key(HaproxyFullHash(base + static_cast<uint32_t>(j)), node);
        }
      });
      break;
    }
    case Flavor::kKetamaMd5: {
      const bool unweighted = IsUnweightedKetama(options.ketama.variant);
      KeyHasher point_hasher = ProgramKeyHasher(options, 2);
      point_hasher.constant_zero = false;
      point_hasher.zero_for_empty = false;
      point_hasher.tagged = false;
      std::vector<std::string> prefixes = PointPrefixes(nodes, "-");
      GenerateEveryNode(counts, threads, [&](uint32_t node, uint64_t first) {
        uint64_t* out = keys + first;
        PointString text(prefixes[node]);
        if (unweighted) {
          for (uint64_t k = 0; k < counts.per_node[node]; ++k) {
            const std::string_view s = text.With(k);
            out[k] = key(static_cast<uint32_t>(HashKey(point_hasher, s.data(), s.size())), node);
          }
          return;
        }
        const uint64_t digests = counts.per_node[node] / 4;
        const std::string& host = nodes[node].address.host;
        // MD5("label-k") of 64 labels at a time, one a SIMD lane, in a
        // buffer on the stack (no allocation: work of ParallelFor); labels
        // too long for it go one at a time.
        constexpr size_t kChunk = 64, kLabelBytes = 96;
        if (host.size() + 1 + 20 > kLabelBytes) {
          for (uint64_t k = 0; k < digests; ++k) {
            const std::string_view s = text.With(k);
            uint8_t digest[16];
            Md5(s.data(), s.size(), digest);
            for (int a = 0; a < 4; ++a) out[4 * k + a] = key(DigestWordLe(digest, a), node);
          }
          return;
        }
        char labels[kChunk][kLabelBytes];
        std::string_view views[kChunk];
        uint32_t words[4 * kChunk];
        for (uint64_t chunk = 0; chunk < digests; chunk += kChunk) {
          const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, digests - chunk));
          for (size_t i = 0; i < n; ++i) {
            const std::string_view s = text.With(chunk + i);
            std::memcpy(labels[i], s.data(), s.size());
            views[i] = std::string_view(labels[i], s.size());
          }
          DispatchMd5Messages(views, n, words);
          for (size_t i = 0; i < n; ++i) {
            for (size_t a = 0; a < 4; ++a) out[4 * (chunk + i) + a] = key(words[4 * i + a], node);
          }
        }
      });
      break;
    }
    case Flavor::kVarnishShard: {
      std::vector<std::string> prefixes = PointPrefixes(nodes, "");
      GenerateEveryNode(counts, threads, [&](uint32_t node, uint64_t first) {
        uint64_t* out = keys + first;
        PointString text(prefixes[node]);
        for (uint64_t j = 0; j < counts.per_node[node]; ++j) {
          const std::string_view s = text.With(j);
          out[j] = key(Sha256Last4Le(s.data(), s.size()), node);
        }
      });
      break;
    }
    default:
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

// Envoy's ring: 64-bit points, sorted with ties in host order, every entry kept.
Status BuildEnvoyRing(const RingOptions& options, RingState& state, const PointCounts& counts,
                      unsigned threads) {
  const std::vector<NodeInfo>& nodes = state.nodes;
  const uint64_t total = counts.total;
  AlignedArray<hwy::uint128_t> keys;
  if (!keys.Allocate(std::max<uint64_t>(total, 1))) {
    return Status(StatusCode::kOutOfMemory,
                  "out of memory: cannot hold " + std::to_string(total) + " ring points");
  }
  const bool murmur = options.envoy_ring.hash_function == EnvoyHash::kMurmurHash2;
  // Sort keys of 128 bits: the point's hash above, its node (as rank and
  // id, configuration order) below.
  std::vector<std::string> prefixes = PointPrefixes(nodes, "_");
  GenerateEveryNode(counts, threads, [&](uint32_t node, uint64_t first) {
    PointString text(prefixes[node]);
    hwy::uint128_t* out = keys.data() + first;
    for (uint64_t i = 0; i < counts.per_node[node]; ++i) {
      const std::string_view s = text.With(i);
      out[i].hi =
          murmur ? LibstdcxxStringHash(s.data(), s.size()) : XxHash64(s.data(), s.size(), 0);
      out[i].lo = (uint64_t{node} << 16) | node;
    }
  });
  if (total > 1) {
    try {
      const hwy::Sorter sorter;
      sorter(keys.data(), total, hwy::SortAscending());
    } catch (const std::bad_alloc&) {
      return Status(StatusCode::kOutOfMemory, "out of memory: sorting ring points");
    }
  }
  Columns& columns = state.columns;
  columns.size = static_cast<uint32_t>(total);
  if (total == 0) return Status();
  const size_t hash_slots = HashColumnSlots(total);
  const size_t node_slots = NodeColumnSlots(total);
  if (!columns.hash.Allocate(hash_slots) || !columns.low.Allocate(hash_slots) ||
      !columns.node.Allocate(node_slots)) {
    return Status(StatusCode::kOutOfMemory,
                  "out of memory allocating ring columns (" + std::to_string(total) + " points)");
  }
  for (uint64_t i = 0; i < total; ++i) {
    columns.hash[i] = static_cast<uint32_t>(keys[i].hi >> 32);
    columns.low[i] = static_cast<uint32_t>(keys[i].hi);
    columns.node[i] = static_cast<uint16_t>(keys[i].lo);
  }
  std::fill(columns.hash.data() + total, columns.hash.data() + hash_slots, UINT32_MAX);
  std::fill(columns.low.data() + total, columns.low.data() + hash_slots, UINT32_MAX);
  std::fill(columns.node.data() + total, columns.node.data() + node_slots, columns.node[0]);
  if (!BuildColumnsIndex(columns)) {
    return Status(StatusCode::kOutOfMemory, "out of memory building the search index");
  }
  return Status();
}

// Envoy's Maglev table: the columns of `state`, filled by MaglevFill.
Status BuildMaglevTable(const RingOptions& options, RingState& state) {
  const uint64_t m = options.maglev.table_size;
  std::vector<std::string_view> keys;
  keys.reserve(state.nodes.size());
  for (const NodeInfo& node : state.nodes) keys.push_back(node.address.host);
  Columns& columns = state.columns;
  columns.size = static_cast<uint32_t>(m);
  if (!columns.node.Allocate(m)) {
    return Status(StatusCode::kOutOfMemory,
                  "out of memory allocating a maglev table of " + std::to_string(m) + " entries");
  }
  MaglevFill(keys, EnvoyNormalizedWeights(state.nodes), std::span<uint16_t>(columns.node.data(), m));
  return Status();
}

}  // namespace

Status BuildProgramRingOrThrow(const RingOptions& options, RingState& state, unsigned threads) {
  std::vector<NodeInfo>& nodes = state.nodes;
  const uint32_t weighted = WeightedNodes(nodes);
  if (options.flavor == Flavor::kHaproxy) AssignHaproxyServerIds(nodes);
  const bool envoy = options.flavor == Flavor::kEnvoyRing || options.flavor == Flavor::kEnvoyMaglev;
  const bool twemproxy =
      options.flavor == Flavor::kKetamaMd5 && options.ketama.variant == KetamaVariant::kTwemproxy;
  if ((envoy || twemproxy) && TotalWeight(nodes) > UINT32_MAX) {
    return Bad(StatusCode::kBadWeight, std::string("the weights add up to more than 4294967295 (") +
                                           (envoy ? "Envoy refuses a larger sum of host weights)"
                                                  : "twemproxy's uint32_t total would wrap)"));
  }
  const PointCounts counts = CountProgramPoints(options, nodes);
  if (counts.total > options.max_points) return TooManyPoints(options, counts.total);
  if (options.flavor == Flavor::kKetamaMd5 && options.ketama.variant == KetamaVariant::kTwemproxy) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (counts.per_node[i] < 4) continue;
      const size_t digits = Decimal(counts.per_node[i] / 4 - 1).size();
      if (nodes[i].address.host.size() + 1 + digits > kTwemproxyMaxLabel) {
        return Bad(StatusCode::kBadAddress,
                   "node " + std::to_string(i) + " '" + nodes[i].address.written +
                       "': twemproxy truncates its point labels at 85 bytes (KETAMA_MAX_HOSTLEN) "
                       "and '" +
                       nodes[i].address.host + "-" + Decimal(counts.per_node[i] / 4 - 1) +
                       "' is longer");
      }
    }
  }
  state.rule = FlavorLookupRule(options.flavor);
  state.key_hasher = ProgramKeyHasher(options, weighted);
  state.points_generated = counts.total;
  state.point_multiple = options.flavor == Flavor::kHaproxy        ? kHaproxyPointsPerWeight
                         : options.flavor == Flavor::kVarnishShard ? options.varnish.replicas
                                                                   : 0;
  switch (options.flavor) {
    case Flavor::kEnvoyRing:
      return BuildEnvoyRing(options, state, counts, threads);
    case Flavor::kEnvoyMaglev:
      if (weighted == 0) {
        state.points_generated = 0;
        return Status();
      }
      return BuildMaglevTable(options, state);
    default: {
      Status status = BuildPoints32(options, state, counts, threads);
      if (status.ok() && options.flavor == Flavor::kVarnishShard) {
        const Columns& columns = state.columns;
        bool equal = false;
        for (uint32_t i = 1; i < columns.size && !equal; ++i) {
          equal = columns.hash[i] == columns.hash[i - 1];
        }
        state.varnish_bisection = columns.size == 2 || equal;
      }
      return status;
    }
  }
}

std::vector<double> EnvoyNormalizedWeights(const std::vector<NodeInfo>& nodes) {
  std::vector<double> normalized(nodes.size(), 0.0);
  const uint64_t sum = TotalWeight(nodes);
  if (sum == 0) return normalized;
  for (size_t i = 0; i < nodes.size(); ++i) {
    normalized[i] = static_cast<double>(nodes[i].weight) * 1.0 / static_cast<double>(sum);
  }
  return normalized;
}

std::vector<uint64_t> EnvoyRingEntries(const EnvoyRingOptions& options,
                                       const std::vector<double>& normalized) {
  std::vector<uint64_t> entries(normalized.size(), 0);
  double min_normalized = 1.0;
  bool any = false;
  for (const double n : normalized) {
    if (n == 0) continue;
    min_normalized = std::min(min_normalized, n);
    any = true;
  }
  if (!any) return entries;
  const double scale =
      std::min(std::ceil(min_normalized * static_cast<double>(options.minimum_ring_size)) /
                   min_normalized,
               static_cast<double>(options.maximum_ring_size));
  double current = 0.0;
  double target = 0.0;
  for (size_t i = 0; i < normalized.size(); ++i) {
    if (normalized[i] == 0) continue;
    // Two statements, not one fused multiply-add: the rounding of Envoy's
    // x86-64 build (the engine is compiled with -ffp-contract=off).
    const double add = scale * normalized[i];
    target += add;
    uint64_t count = 0;
    while (current < target) {
      ++count;
      current += 1.0;
    }
    entries[i] = count;
  }
  return entries;
}

// Envoy's Maglev table (maglev_lb.cc, OriginalMaglevTable).
void MaglevFill(const std::vector<std::string_view>& keys, const std::vector<double>& normalized,
                std::span<uint16_t> table) {
  const uint64_t m = table.size();
  struct Entry {
    std::string_view key;
    uint32_t node;
    double weight;
    uint64_t offset, skip;
    double target = 0;
    uint64_t next = 0;
  };
  std::vector<Entry> entries;
  double max_normalized = 0.0;
  for (uint32_t i = 0; i < keys.size(); ++i) {
    if (normalized[i] == 0) continue;
    max_normalized = std::max(max_normalized, normalized[i]);
    entries.push_back({keys[i], i, normalized[i], XxHash64(keys[i].data(), keys[i].size(), 0) % m,
                       XxHash64(keys[i].data(), keys[i].size(), 1) % (m - 1) + 1});
  }
  if (entries.empty()) return;
  // Envoy sorts by (key, host pointer, weight); keys are distinct here
  // (kDuplicateNode), so the key alone orders them, byte by byte.
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.key < b.key; });
  std::vector<bool> taken(m, false);
  uint64_t filled = 0;
  for (uint32_t iteration = 1; filled < m; ++iteration) {
    for (size_t i = 0; i < entries.size() && filled < m; ++i) {
      Entry& entry = entries[i];
      if (static_cast<double>(iteration) * entry.weight < entry.target) continue;
      entry.target += max_normalized;
      uint64_t c = (entry.offset + entry.skip * entry.next) % m;
      while (taken[c]) {
        ++entry.next;
        c = (entry.offset + entry.skip * entry.next) % m;
      }
      table[c] = static_cast<uint16_t>(entry.node);
      taken[c] = true;
      ++entry.next;
      ++filled;
    }
  }
}

}  // namespace chash::internal
