// MD5 ketama rings: libmemcached (weighted, unweighted, spy), twemproxy and
// libketama. Points from MD5("label-k") (4 a digest), except libmemcached's
// unweighted modes (100 a server, each the key hash of its label); each
// program's own float arithmetic for the counts.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "builder/columns_builder.h"
#include "builder/program_points.h"
#include "simd/search.h"  // DispatchMd5Messages

namespace chash::internal {

namespace {

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
  using program::BadAddress;
  if (const char* why = program::OpaqueProblem(text, true, true)) return BadAddress(text, why);
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

}  // namespace

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
    label += std::to_string(value);
  }
  return label;
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

namespace program {

Status ValidateKetamaOptions(const KetamaOptions& options) {
  if (static_cast<uint8_t>(options.variant) >
      static_cast<uint8_t>(KetamaVariant::kLibmemcachedSpyWeighted)) {
    return Bad(StatusCode::kBadArgument,
               "ketama variant " + std::to_string(static_cast<int>(options.variant)) +
                   " is none of libmemcached-weighted, libmemcached-unweighted, twemproxy, "
                   "libketama, libmemcached-spy, libmemcached-spy-weighted");
  }
  if (static_cast<uint8_t>(options.key_hash) > static_cast<uint8_t>(KetamaKeyHash::kMurmur3)) {
    return Bad(StatusCode::kBadArgument,
               "ketama key hash " + std::to_string(static_cast<int>(options.key_hash)) +
                   " is not a KetamaKeyHash");
  }
  if (const char* why = KetamaKeyHashProblem(options)) return Bad(StatusCode::kBadArgument, why);
  if (const char* why = HashTagProblem(options)) return Bad(StatusCode::kBadArgument, why);
  if (options.default_port == 0 || options.default_port > 65535) {
    return Bad(StatusCode::kBadArgument,
               "ketama default port must be 1..65535, got " + std::to_string(options.default_port));
  }
  return Status();
}

Result<NodeAddress> ParseKetamaNode(const RingOptions& options, std::string_view address,
                                    uint32_t weight, const NodeOptions& node) {
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
    return OpaqueNode(address, true, true);
  }
  Result<HostPort> split = SplitHostPort(address, options.ketama.default_port);
  if (!split.ok()) return split.status();
  NodeAddress out;
  out.opaque_id = true;
  out.written.assign(address);
  if (spy) {
    // libmemcached's "/%s:%u" whatever the port.
    out.host = "/" + std::string(split.value().host) + ":" + std::to_string(split.value().port);
  } else if (variant == KetamaVariant::kTwemproxy && !node.name.empty()) {
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

KeyHasher KetamaKeyHasher(const KetamaOptions& options, uint32_t weighted_nodes) noexcept {
  const KetamaVariant variant = options.variant;
  const KetamaKeyHash key_hash = ResolvedKetamaKeyHash(options);
  constexpr KeyHashKind kKinds[] = {
      KeyHashKind::kMd5Le32, KeyHashKind::kMd5Le32, KeyHashKind::kOneAtATime,
      KeyHashKind::kFnv1a64, KeyHashKind::kFnv1_64, KeyHashKind::kFnv1_32,
      KeyHashKind::kFnv1a32, KeyHashKind::kCrc32,   KeyHashKind::kCrc32Bits15,
      KeyHashKind::kCrc16,   KeyHashKind::kHsieh,   KeyHashKind::kMurmur,
      KeyHashKind::kJenkins, KeyHashKind::kMurmur3};
  static_assert(std::size(kKinds) == static_cast<size_t>(KetamaKeyHash::kMurmur3) + 1);
  KeyHasher hasher;
  hasher.kind = kKinds[std::min<size_t>(static_cast<uint8_t>(key_hash), std::size(kKinds) - 1)];
  hasher.tagged = options.hash_tag[0] != '\0';
  hasher.tag = options.hash_tag;
  // libmemcached and twemproxy: one server, no hashing (hash 0);
  // twemproxy: an empty key hashes to 0. libketama hashes always.
  hasher.constant_zero = variant != KetamaVariant::kLibketama && weighted_nodes == 1;
  hasher.zero_for_empty = variant == KetamaVariant::kTwemproxy;
  return hasher;
}

void CountKetamaPoints(const KetamaOptions& options, const std::vector<NodeInfo>& nodes,
                       PointCounts& counts) {
  const uint32_t live = WeightedNodes(nodes);
  const uint64_t total_weight = TotalWeight(nodes);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const uint32_t w = nodes[i].weight;
    if (w == 0) continue;
    switch (options.variant) {
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
}

Status CheckTwemproxyLabels(const std::vector<NodeInfo>& nodes, const PointCounts& counts) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (counts.per_node[i] < 4) continue;
    const std::string last = std::to_string(counts.per_node[i] / 4 - 1);
    if (nodes[i].address.host.size() + 1 + last.size() > kTwemproxyMaxLabel) {
      return Bad(StatusCode::kBadAddress,
                 "node " + std::to_string(i) + " '" + nodes[i].address.written +
                     "': twemproxy truncates its point labels at 85 bytes (KETAMA_MAX_HOSTLEN) "
                     "and '" +
                     nodes[i].address.host + "-" + last + "' is longer");
    }
  }
  return Status();
}

void GenerateKetamaPoints(const KetamaOptions& options, const std::vector<NodeInfo>& nodes,
                          const PointCounts& counts, unsigned threads, uint64_t* keys) {
  const bool unweighted = IsUnweightedKetama(options.variant);
  KeyHasher point_hasher = KetamaKeyHasher(options, 2);
  point_hasher.constant_zero = false;
  point_hasher.zero_for_empty = false;
  point_hasher.tagged = false;
  std::vector<std::string> prefixes = PointPrefixes(nodes, "-");
  const auto key = [](uint32_t hash, uint32_t node) { return PointSortKey(hash, node, node); };
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
}

}  // namespace program
}  // namespace chash::internal
