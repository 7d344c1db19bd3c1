#include "program_case.h"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <sstream>

#include "chash/failover.h"
#include "dispatch_control.h"
#include "fuzz_data.h"
#include "fuzz_support.h"

namespace chash::fuzz {
namespace {

constexpr uint64_t kProgramFuzzMaxPoints = 100000;
constexpr uint64_t kMaglevSizes[] = {2, 3, 5, 7, 11, 13, 17, 31, 101, 257, 1009, 4099, 65537};
// No tag, twemproxy's usual ones and a refused one.
constexpr std::array<char, 2> kHashTags[] = {{'\0', '\0'}, {'{', '}'}, {':', ':'}, {'{', '\0'}};
constexpr Flavor kProgramFlavors[] = {Flavor::kHaproxy, Flavor::kKetamaMd5, Flavor::kVarnishShard,
                                      Flavor::kEnvoyRing, Flavor::kEnvoyMaglev};

uint32_t DecodeWeight(FuzzReader& in) {
  const uint8_t w = in.U8();
  switch (w % 8) {
    case 5:
      return 1u + in.U8();
    case 6:
      return in.U16();
    case 7:
      return in.U32();
    default:
      return w % 8;  // 0..4
  }
}

uint8_t HashTagCode(const std::array<char, 2>& tag) {
  for (uint8_t i = 0; i < std::size(kHashTags); ++i) {
    if (kHashTags[i] == tag) return i;
  }
  return 3;
}

std::string Ipv4(uint32_t a) {
  return std::to_string(a >> 24) + "." + std::to_string((a >> 16) & 255) + "." +
         std::to_string((a >> 8) & 255) + "." + std::to_string(a & 255);
}

}  // namespace

ProgramCase DecodeProgramCase(const uint8_t* data, size_t size) {
  FuzzReader in(data, size);
  ProgramCase c;
  RingOptions& options = c.options;
  options.flavor = kProgramFlavors[in.U8() % 5];
  options.max_points = kProgramFuzzMaxPoints;
  switch (options.flavor) {
    case Flavor::kHaproxy: {
      const uint8_t bits = in.U8();
      options.haproxy.hash_function = static_cast<HaproxyHash>(bits & 3);
      options.haproxy.avalanche = (bits & 4) != 0;
      options.haproxy.server_key =
          (bits & 8) != 0 ? HaproxyServerKey::kIdUnfixed30 : HaproxyServerKey::kId;
      break;
    }
    case Flavor::kKetamaMd5: {
      options.ketama.variant = static_cast<KetamaVariant>(in.U8() % 6);
      const bool twemproxy = options.ketama.variant == KetamaVariant::kTwemproxy;
      uint8_t key_hash = in.U8() % 14;
      if (options.ketama.variant == KetamaVariant::kLibketama && key_hash < 13) key_hash %= 2;
      options.ketama.key_hash = static_cast<KetamaKeyHash>(key_hash);
      const uint8_t bits = in.U8();
      if ((bits & 1) != 0) options.ketama.default_port = 11212;
      // A tag on another variant (refused) one time in eight.
      const uint8_t tag = (bits >> 1) & 7;
      if (twemproxy || tag == 7) options.ketama.hash_tag = kHashTags[tag & 3];
      break;
    }
    case Flavor::kVarnishShard:
      options.varnish.replicas = 1 + in.U8() % 80;
      break;
    case Flavor::kEnvoyRing: {
      const uint16_t minimum = in.U16(), maximum = in.U16();
      options.envoy_ring.minimum_ring_size = 1 + minimum % 4096;
      options.envoy_ring.maximum_ring_size =
          maximum % 16 == 0 ? 8388608
                            : options.envoy_ring.minimum_ring_size + (maximum >> 4) % 4096;
      const uint8_t bits = in.U8();
      if ((bits & 1) != 0) options.envoy_ring.hash_function = EnvoyHash::kMurmurHash2;
      if (bits == 0xFE) options.envoy_ring.minimum_ring_size = 0;
      break;
    }
    case Flavor::kEnvoyMaglev: {
      const uint8_t pick = in.U8();
      options.maglev.table_size = pick == 0xFF ? 8 : kMaglevSizes[pick % std::size(kMaglevSizes)];
      break;
    }
    default:
      break;
  }
  if (in.U8() % 4 == 3) options.max_points = 1 + in.U8();
  const size_t count = in.U8() % 41;
  for (size_t i = 0; i < count && !in.empty(); ++i) {
    reference::ProgramServer server;
    const uint8_t kind = in.U8();
    // At most one read an expression: the order of two reads in one call or
    // sum is the compiler's (g++ read snprintf's arguments right to left,
    // clang left to right), and a reproducer must decode alike under both.
    switch (kind % 64 < 62 ? kind % 4 : kind % 64 - 58) {
      case 0: {
        const uint32_t ip = in.U32();
        server.address = Ipv4(ip) + ":" + std::to_string(in.U16());
        break;
      }
      case 1:
        server.address = Ipv4(in.U32());
        break;
      case 2: {
        const uint16_t host = in.U16();
        server.address =
            "cache-" + std::to_string(host) + ".example:" + std::to_string(11210 + in.U8() % 4);
        break;
      }
      case 3: {
        char text[64];
        const uint16_t group = in.U16();
        const uint16_t port = in.U16();
        std::snprintf(text, sizeof text, "[2001:db8::%x]:%u", group, port);
        server.address = text;
        break;
      }
      case 4:
        server.address = std::string(in.String(24));
        break;
      default:
        if (!c.servers.empty()) {
          server.address = c.servers[in.Below(static_cast<uint32_t>(c.servers.size()))].address;
        } else {
          server.address = "10.0.0.1:80";
        }
        break;
    }
    server.weight = DecodeWeight(in);
    if (options.flavor == Flavor::kKetamaMd5 &&
        (options.ketama.variant == KetamaVariant::kLibmemcachedUnweighted ||
         options.ketama.variant == KetamaVariant::kLibmemcachedSpy) &&
        server.weight < 256) {
      server.weight %= 2;  // 0 or 1, but for the wide weights (kBadWeight)
    }
    const uint8_t id_mode = in.U8() % 32;
    if (options.flavor == Flavor::kHaproxy) {
      if (id_mode == 4) server.server_id = in.U8();
      if (id_mode == 5) {
        const uint32_t id = in.U32();
        server.server_id = (id & 0xFF) == 0xFF ? id : id & 0x7FFFFFFF;  // past 2^31 - 1: refused
      }
      if ((id_mode == 6 || id_mode == 7) && !c.servers.empty()) {
        const uint32_t earlier =
            c.servers[in.Below(static_cast<uint32_t>(c.servers.size()))].server_id;
        if (earlier != 0) server.server_id = id_mode == 6 ? earlier + (1u << 20) : earlier;
      }
    }
    const uint8_t name_mode = in.U8();
    if ((name_mode & 1) != 0 && options.flavor == Flavor::kKetamaMd5 &&
        options.ketama.variant == KetamaVariant::kTwemproxy) {
      server.name = "cache-" + std::to_string(in.U8());
    }
    c.servers.push_back(std::move(server));
  }
  const size_t keys = in.U8() % 25;
  for (size_t i = 0; i < keys; ++i) c.keys.emplace_back(in.String(40));
  const size_t hashes = in.U8() % 9;
  for (size_t i = 0; i < hashes; ++i) {
    const uint64_t low = in.U32();
    c.hashes.push_back(low | (uint64_t{in.U32()} << 32));
  }
  for (size_t i = 0; i < c.servers.size(); ++i) c.up.push_back((in.U8() & 1) != 0);
  for (size_t i = 0; i < c.servers.size(); ++i) c.loads.push_back(in.U8());
  c.capacity = in.U8();
  return c;
}

std::string EncodeProgramCase(const ProgramCase& c) {
  FuzzWriter out;
  const RingOptions& options = c.options;
  for (uint8_t f = 0; f < 5; ++f) {
    if (kProgramFlavors[f] == options.flavor) out.U8(f);
  }
  switch (options.flavor) {
    case Flavor::kHaproxy:
      out.U8(static_cast<uint8_t>(
          static_cast<uint8_t>(options.haproxy.hash_function) |
          (options.haproxy.avalanche ? 4 : 0) |
          (options.haproxy.server_key == HaproxyServerKey::kIdUnfixed30 ? 8 : 0)));
      break;
    case Flavor::kKetamaMd5:
      out.U8(static_cast<uint8_t>(options.ketama.variant))
          .U8(static_cast<uint8_t>(options.ketama.key_hash))
          .U8(static_cast<uint8_t>((options.ketama.default_port == 11212 ? 1 : 0) |
                                   (options.ketama.variant == KetamaVariant::kTwemproxy
                                        ? HashTagCode(options.ketama.hash_tag)
                                        : (options.ketama.hash_tag == kHashTags[0] ? 0 : 7))
                                       << 1));
      break;
    case Flavor::kVarnishShard:
      out.U8(static_cast<uint8_t>(options.varnish.replicas - 1));
      break;
    case Flavor::kEnvoyRing: {
      const EnvoyRingOptions& ring = options.envoy_ring;
      const uint64_t minimum = ring.minimum_ring_size == 0 ? 1 : ring.minimum_ring_size;
      out.U16(static_cast<uint16_t>(minimum - 1));
      out.U16(ring.maximum_ring_size == 8388608
                  ? 0
                  : static_cast<uint16_t>(((ring.maximum_ring_size - minimum) << 4) | 1));
      out.U8(ring.minimum_ring_size == 0 ? 0xFE
                                         : (ring.hash_function == EnvoyHash::kMurmurHash2 ? 1 : 0));
      break;
    }
    case Flavor::kEnvoyMaglev: {
      uint8_t pick = 0xFF;  // 8: not prime
      for (uint8_t i = 0; i < std::size(kMaglevSizes); ++i) {
        if (kMaglevSizes[i] == options.maglev.table_size) pick = i;
      }
      out.U8(pick);
      break;
    }
    default:
      break;
  }
  if (options.max_points != kProgramFuzzMaxPoints) {
    out.U8(3).U8(static_cast<uint8_t>(options.max_points - 1));
  } else {
    out.U8(0);
  }
  out.U8(static_cast<uint8_t>(c.servers.size()));
  for (const reference::ProgramServer& server : c.servers) {
    out.U8(62).String(server.address);
    out.U8(7).U32(server.weight);
    if (server.server_id != 0) {
      out.U8(5).U32(server.server_id);
    } else {
      out.U8(0);
    }
    if (!server.name.empty()) {
      out.U8(1).U8(static_cast<uint8_t>(std::stoi(server.name.substr(6))));
    } else {
      out.U8(0);
    }
  }
  out.U8(static_cast<uint8_t>(c.keys.size()));
  for (const std::string& key : c.keys) out.String(key);
  out.U8(static_cast<uint8_t>(c.hashes.size()));
  for (const uint64_t h : c.hashes)
    out.U32(static_cast<uint32_t>(h)).U32(static_cast<uint32_t>(h >> 32));
  for (size_t i = 0; i < c.servers.size(); ++i) out.U8(i < c.up.size() && c.up[i] ? 1 : 0);
  for (size_t i = 0; i < c.servers.size(); ++i) {
    out.U8(static_cast<uint8_t>(i < c.loads.size() ? c.loads[i] : 0));
  }
  out.U8(static_cast<uint8_t>(c.capacity));
  return out.bytes();
}

StatusCode ProgramBuildCode(const ProgramCase& c) {
  RingBuilder builder(c.options);
  for (const reference::ProgramServer& server : c.servers) {
    const Status added =
        builder.Add(server.address, server.weight,
                    NodeOptions{.server_id = server.server_id, .name = server.name});
    if (!added.ok()) return added.code();
  }
  const Result<Ring> ring = std::move(builder).Build();
  return ring.ok() ? StatusCode::kOk : ring.status().code();
}

std::string ProgramCase::Describe() const {
  std::ostringstream out;
  out << FlavorName(options.flavor) << " max_points " << options.max_points;
  switch (options.flavor) {
    case Flavor::kHaproxy:
      out << " hash " << static_cast<int>(options.haproxy.hash_function) << " avalanche "
          << options.haproxy.avalanche << " key " << static_cast<int>(options.haproxy.server_key);
      break;
    case Flavor::kKetamaMd5:
      out << " variant " << static_cast<int>(options.ketama.variant) << " key hash "
          << static_cast<int>(options.ketama.key_hash) << " port " << options.ketama.default_port
          << " tag " << static_cast<int>(HashTagCode(options.ketama.hash_tag));
      break;
    case Flavor::kVarnishShard:
      out << " replicas " << options.varnish.replicas;
      break;
    case Flavor::kEnvoyRing:
      out << " min " << options.envoy_ring.minimum_ring_size << " max "
          << options.envoy_ring.maximum_ring_size << " fn "
          << static_cast<int>(options.envoy_ring.hash_function);
      break;
    case Flavor::kEnvoyMaglev:
      out << " table " << options.maglev.table_size;
      break;
    default:
      break;
  }
  out << "\n" << servers.size() << " servers:";
  for (size_t i = 0; i < servers.size(); ++i) {
    out << "\n  " << Printable(servers[i].address) << " w" << servers[i].weight;
    if (servers[i].server_id) out << " id " << servers[i].server_id;
    if (!servers[i].name.empty()) out << " name " << servers[i].name;
    out << (i < up.size() && up[i] ? " up" : " down") << " load "
        << (i < loads.size() ? loads[i] : 0);
  }
  out << "\n" << keys.size() << " keys, " << hashes.size() << " hashes, capacity " << capacity;
  return out.str();
}

namespace {

class Comparison {
 public:
  Comparison(const Ring& ring, const reference::ProgramRing& ref, const ProgramCase& c)
      : ring_(ring), ref_(ref), c_(c) {}

  // The first difference, or "".
  std::string Run() {
    Shape();
    if (!error_.empty()) return error_;
    MakeProbes();
    // The ring of the available servers, once: it does not depend on the target.
    subset_ = ref_.Subset(c_.up);
    mask_ = NodeMask(static_cast<uint32_t>(c_.servers.size()), false);
    for (size_t i = 0; i < c_.up.size(); ++i) mask_.Set(static_cast<uint32_t>(i), c_.up[i]);
    Result<Ring> available = BuildAvailableRing(ring_, mask_);
    if (available.ok()) {
      available_ = std::move(available).value();
      have_available_ = true;
    } else if (available.status().code() != StatusCode::kTooManyPoints) {
      return "BuildAvailableRing: " + available.status().ToString();
    }
    for (const std::string& target : Targets()) {
      if (!ForceTarget(target).ok() || ActiveTargetName() != target) {
        return "cannot force target " + target;
      }
      target_ = target;
      Lookups();
      Walks();
      Masks();
      if (!error_.empty()) break;
    }
    (void)ForceTarget("");
    return error_;
  }
  uint64_t checks() const { return checks_; }

 private:
  template <typename A, typename B>
  void Expect(const A& actual, const B& expected, const std::string& what) {
    ++checks_;
    if (!error_.empty() || actual == expected) return;
    std::ostringstream out;
    out << what << ": chash " << actual << ", reference " << expected;
    if (!target_.empty()) out << " (target " << target_ << ")";
    error_ = out.str();
  }

  bool Wide() const { return ring_.key_hash_bits() == 64; }
  bool Table() const { return ring_.lookup_rule() == LookupRule::kTable; }

  void Shape() {
    Expect(ring_.num_nodes(), c_.servers.size(), "num_nodes");
    Expect(ring_.num_points(), ref_.size(), "num_points");
    if (ring_.num_points() != ref_.size()) return;
    PointCursor cursor = ring_.Begin();
    for (size_t i = 0; i < ref_.size() && error_.empty(); ++i, cursor.Advance()) {
      if (!Table()) Expect(cursor.hash64(), ref_.points()[i].hash, "point " + std::to_string(i));
      Expect(cursor.node(), ref_.points()[i].node, "node of point " + std::to_string(i));
    }
    for (size_t i = 0; i < c_.servers.size(); ++i) {
      const bool owns = std::any_of(ref_.points().begin(), ref_.points().end(),
                                    [&](const auto& p) { return p.node == i; });
      Expect(ring_.owns_points(static_cast<uint32_t>(i)), owns, "owns_points " + std::to_string(i));
    }
    if (c_.options.flavor == Flavor::kHaproxy) {
      for (size_t i = 0; i < c_.servers.size(); ++i) {
        Expect(ring_.node(static_cast<uint32_t>(i)).server_id, ref_.servers()[i].server_id,
               "server id of " + std::to_string(i));
      }
    }
    for (const std::string& key : c_.keys) {
      Expect(ring_.KeyHash(key), ref_.KeyHash(key), "KeyHash(" + Printable(key) + ")");
    }
  }

  void MakeProbes() {
    const size_t n = ref_.size();
    if (Table()) {
      for (uint64_t i = 0; i < std::min<uint64_t>(n, 300); ++i) probes_.push_back(i);
      for (const uint64_t h : {uint64_t{n} - 1, uint64_t{n}, uint64_t{n} + 1}) probes_.push_back(h);
    } else {
      const size_t step = std::max<size_t>(1, n / 400);
      for (size_t i = 0; i < n; i += step) {
        const uint64_t h = ref_.points()[i].hash;
        for (const uint64_t d : {uint64_t{0}, uint64_t{1}, ~uint64_t{0}}) {
          probes_.push_back(Wide() ? h + d : static_cast<uint32_t>(h + d));
        }
      }
      if (n > 0) probes_.push_back(ref_.points()[n - 1].hash + 1);
    }
    const uint64_t top = Wide() ? ~uint64_t{0} : UINT32_MAX;
    for (const uint64_t h : {uint64_t{0}, uint64_t{1}, top - 1, top, top / 2}) probes_.push_back(h);
    for (const uint64_t h : c_.hashes) {
      probes_.push_back(h);
      probes_.push_back(static_cast<uint32_t>(h));
    }
  }

  void Lookups() {
    std::vector<uint32_t> batch(probes_.size());
    ring_.FindNodesByHash64(probes_, batch);
    for (size_t i = 0; i < probes_.size() && error_.empty(); ++i) {
      const uint64_t h = probes_[i];
      const uint32_t expected = ref_.Lookup(h);
      const std::string at = "hash " + std::to_string(h);
      Expect(ring_.FindNodeByHash64(h), expected, "FindNodeByHash64 " + at);
      Expect(batch[i], expected, "FindNodesByHash64 " + at);
      if (h <= UINT32_MAX) {
        Expect(ring_.FindNodeByHash(static_cast<uint32_t>(h)), Wide() ? Ring::kNoNode : expected,
               "FindNodeByHash " + at);
      }
    }
    std::vector<uint32_t> narrow;
    for (const uint64_t h : probes_) {
      if (h <= UINT32_MAX) narrow.push_back(static_cast<uint32_t>(h));
    }
    std::vector<uint32_t> narrow_out(narrow.size());
    ring_.FindNodesByHash(narrow, narrow_out);
    for (size_t i = 0; i < narrow.size() && error_.empty(); ++i) {
      Expect(narrow_out[i], Wide() ? Ring::kNoNode : ref_.Lookup(narrow[i]),
             "FindNodesByHash " + std::to_string(narrow[i]));
    }
    std::vector<std::string_view> views(c_.keys.begin(), c_.keys.end());
    std::vector<uint32_t> key_out(views.size());
    ring_.FindNodes(views, key_out);
    for (size_t i = 0; i < views.size() && error_.empty(); ++i) {
      const uint32_t expected = ref_.FindNode(c_.keys[i]);
      Expect(ring_.FindNode(c_.keys[i]), expected, "FindNode(" + Printable(c_.keys[i]) + ")");
      Expect(key_out[i], expected, "FindNodes(" + Printable(c_.keys[i]) + ")");
    }
  }

  void Walks() {
    const size_t stride = std::max<size_t>(1, probes_.size() / 64);
    for (size_t i = 0; i < probes_.size() && error_.empty(); i += stride) {
      const uint64_t h = probes_[i];
      const std::vector<uint32_t> expected = ref_.Walk(h, 4);
      PointCursor cursor = ring_.WalkFromHash64(h);
      for (size_t step = 0; step < 4; ++step) {
        Expect(cursor.Next(), step < expected.size() ? expected[step] : Ring::kNoNode,
               "walk step " + std::to_string(step) + " from " + std::to_string(h));
      }
      for (const uint32_t attempt : {0u, 1u, 2u, 7u}) {
        Expect(ring_.FindNodeForAttempt(h, attempt), ref_.Attempt(h, attempt),
               "attempt " + std::to_string(attempt) + " of " + std::to_string(h));
      }
    }
    for (size_t i = 0; i < probes_.size() && i < 3 * stride && error_.empty(); i += stride) {
      const uint64_t h = probes_[i];
      DistinctNodeWalk walk = ring_.WalkDistinctFromHash64(h);
      std::vector<uint32_t> got;
      for (uint32_t node; (node = walk.Next()) != Ring::kNoNode;) got.push_back(node);
      const std::vector<uint32_t> expected = Table() ? got : ref_.DistinctWalk(h);
      Expect(got.size(), expected.size(), "distinct walk length from " + std::to_string(h));
      for (size_t k = 0; k < got.size() && k < expected.size(); ++k) {
        Expect(got[k], expected[k], "distinct walk from " + std::to_string(h));
      }
    }
  }

  void Masks() {
    const NodeMask& mask = mask_;
    const bool exact = c_.options.flavor == Flavor::kHaproxy ||
                       c_.options.flavor == Flavor::kVarnishShard ||
                       (c_.options.flavor == Flavor::kKetamaMd5 &&
                        (c_.options.ketama.variant == KetamaVariant::kLibmemcachedUnweighted ||
                         c_.options.ketama.variant == KetamaVariant::kLibmemcachedSpy));
    Expect(MasksExactly(ring_), exact, "MasksExactly");
    const reference::ProgramRing& subset = subset_;
    const auto accept = [&](uint32_t node) {
      return node < c_.loads.size() && c_.loads[node] < c_.capacity;
    };
    const size_t stride = std::max<size_t>(1, probes_.size() / 48);
    if (exact) {
      AvailabilityMask shared(static_cast<uint32_t>(c_.servers.size()));
      if (!shared.Publish(mask).ok()) error_ = "AvailabilityMask::Publish";
      for (size_t i = 0; i < probes_.size() && error_.empty(); i += stride) {
        const uint64_t h = probes_[i];
        const uint32_t expected = subset.Lookup(h);
        Expect(FindAvailableNodeByHash64(ring_, mask, h), expected,
               "FindAvailableNodeByHash64 " + std::to_string(h));
        if (h > UINT32_MAX) continue;
        const uint32_t h32 = static_cast<uint32_t>(h);
        Expect(FindAvailableNodeByHash(ring_, mask, h32), expected,
               "FindAvailableNodeByHash " + std::to_string(h));
        Expect(shared.FindNodeByHash(ring_, h32), expected,
               "AvailabilityMask::FindNodeByHash " + std::to_string(h));
        Expect(FindNodeUnderCapacity(ring_, h32, std::span<const uint32_t>(c_.loads), c_.capacity,
                                     &mask),
               subset.WalkAccepting(h, accept),
               "FindNodeUnderCapacity masked " + std::to_string(h));
      }
      for (size_t i = 0; i < c_.keys.size() && error_.empty(); ++i) {
        const uint32_t expected = subset.Lookup(ref_.KeyHash(c_.keys[i]));
        Expect(FindAvailableNode(ring_, mask, c_.keys[i]), expected,
               "FindAvailableNode(" + Printable(c_.keys[i]) + ")");
        Expect(shared.FindNode(ring_, c_.keys[i]), expected,
               "AvailabilityMask::FindNode(" + Printable(c_.keys[i]) + ")");
      }
    } else {
      for (size_t i = 0; i < probes_.size() && i < 8; ++i) {
        Expect(FindAvailableNodeByHash64(ring_, mask, probes_[i]), kMaskRefused,
               "refused masked lookup");
      }
      for (const std::string& key : c_.keys) {
        Expect(FindAvailableNode(ring_, mask, key), kMaskRefused, "refused masked key lookup");
      }
    }
    // Unmasked bounded loads: the ring's own walk, but on Envoy's rings.
    for (size_t i = 0; i < probes_.size() && error_.empty(); i += stride) {
      const uint64_t h = probes_[i];
      if (h > UINT32_MAX) continue;
      Expect(FindNodeUnderCapacity(ring_, static_cast<uint32_t>(h),
                                   std::span<const uint32_t>(c_.loads), c_.capacity),
             Wide() ? kMaskRefused : ref_.WalkAccepting(h, accept),
             "FindNodeUnderCapacity " + std::to_string(h));
    }
    // The ring of the available nodes: the program's rebuild.
    if (!have_available_) return;
    for (size_t i = 0; i < probes_.size() && error_.empty(); i += stride) {
      Expect(available_.FindNodeByHash64(probes_[i]), subset.Lookup(probes_[i]),
             "BuildAvailableRing lookup " + std::to_string(probes_[i]));
    }
  }

  const Ring& ring_;
  const reference::ProgramRing& ref_;
  const ProgramCase& c_;
  reference::ProgramRing subset_;
  NodeMask mask_;
  Ring available_;
  bool have_available_ = false;
  std::vector<uint64_t> probes_;
  std::string target_;
  std::string error_;
  uint64_t checks_ = 0;
};

}  // namespace

std::string CompareProgramCase(const ProgramCase& c, uint64_t* checks) {
  ReachTheSingleLookupWindow();
  RingBuilder builder(c.options);
  Status added;
  for (const reference::ProgramServer& server : c.servers) {
    added = builder.Add(server.address, server.weight,
                        NodeOptions{.server_id = server.server_id, .name = server.name});
    if (!added.ok()) break;
  }
  Result<Ring> ring = added.ok() ? std::move(builder).Build() : Result<Ring>(added);
  Result<reference::ProgramRing> ref = reference::ProgramRing::Build(c.options, c.servers);
  if (ring.ok() != ref.ok()) {
    return std::string("build: chash ") + (ring.ok() ? "accepts" : ring.status().ToString()) +
           ", reference " + (ref.ok() ? "accepts" : ref.status().ToString());
  }
  if (!ring.ok()) {
    if (ring.status().code() != ref.status().code()) {
      return "build refusals differ: chash " + ring.status().ToString() + ", reference " +
             ref.status().ToString();
    }
    return "";
  }
  Comparison comparison(ring.value(), ref.value(), c);
  std::string difference = comparison.Run();
  if (checks != nullptr) *checks += comparison.checks();
  return difference;
}

void RunProgramDiff(const ProgramCase& c) {
  const std::string difference = CompareProgramCase(c);
  if (!difference.empty()) Fail(difference, c.Describe());
}

}  // namespace chash::fuzz
