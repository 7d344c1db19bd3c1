// Ring fingerprints: canonical serializations and their SHA-256. The byte
// layouts are specified in include/chash/identity.h; change them only with
// a new version number.
#include "chash/identity.h"

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

#include "builder/flavor_points.h"
#include "flavors.h"
#include "identity/hex.h"
#include "identity/throwing_cores.h"
#include "identity/sha256.h"
#include "snapshot/format.h"

namespace chash {
namespace {

constexpr uint16_t kFormatVersion = 1;
constexpr uint8_t kHashFunctionKetamaCrc32 = 1;
// The other programs' flavors: their own point and key hashes, named by the
// options block that follows (include/chash/identity.h).
constexpr uint8_t kHashFunctionOfFlavor = 2;
// Their points digest carries 64-bit hashes and tables: a version of its own.
constexpr uint16_t kProgramPointsVersion = 2;
// Raw-point rings share resty's byte (the serialization predates resty's);
// the tie-break byte (2 against resty's 3) and N = 0 keep them apart.
constexpr uint8_t kFlavorRaw = 3;

void AppendU16(std::string& out, uint16_t value) {
  out.push_back(static_cast<char>(value & 0xFF));
  out.push_back(static_cast<char>(value >> 8));
}

void AppendU32(std::string& out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

void AppendU64(std::string& out, uint64_t value) {
  AppendU32(out, static_cast<uint32_t>(value));
  AppendU32(out, static_cast<uint32_t>(value >> 32));
}

bool IsProgramRing(const Ring& ring) {
  return !ring.is_raw() && internal::IsProgramFlavor(ring.flavor());
}

// Appends each option as the snapshot's options head stores it.
struct OptionAppender {
  std::string& out;
  template <typename Field>
  void Byte(const Field& field) {
    out.push_back(static_cast<char>(field));
  }
  void Flag(bool field, std::string_view /*name*/) { out.push_back(field ? 1 : 0); }
  void U32(uint32_t field) { AppendU32(out, field); }
  void U64(uint64_t field) { AppendU64(out, field); }
};

// The options that decide a program ring's points and key hash: the
// snapshot's options head without its padding. Except ketama-md5's, whose
// identity bytes predate that head and stay as the fingerprints already
// written have them: the key hash the ring uses (kDefault resolved, so that
// two rings that hash keys alike serialize alike), the port before the tag.
std::string ProgramOptionBytes(const Ring& ring) {
  const RingOptions& options = ring.options();
  std::string out;
  OptionAppender append{out};
  if (ring.flavor() == Flavor::kKetamaMd5) {
    append.Byte(options.ketama.variant);
    append.Byte(internal::ResolvedKetamaKeyHash(options.ketama));
    append.U32(options.ketama.default_port);
    append.Byte(options.ketama.hash_tag[0]);
    append.Byte(options.ketama.hash_tag[1]);
    return out;
  }
  internal::snapshot::ForEachStoredOption(ring.flavor(), options, append);
  return out;
}

uint8_t FlavorCode(const Ring& ring) {
  return ring.is_raw() ? kFlavorRaw : internal::FlavorByte(ring.flavor());
}

uint8_t TieBreakCode(TieBreak tie_break) {
  switch (tie_break) {
    case TieBreak::kConfigOrder:
      return 0;
    case TieBreak::kAddressOrder:
      return 1;
    case TieBreak::kExplicitRank:
      return 2;
    case TieBreak::kIdOrder:
      return 3;
  }
  return 0xFF;
}

// The nodes of weight > 0 in tie-break order (flavor rings only).
std::vector<uint32_t> CanonicalNodes(const Ring& ring) {
  std::vector<uint32_t> nodes;
  for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
    if (ring.node(id).weight > 0) nodes.push_back(id);
  }
  if (ring.flavor() == Flavor::kEnvoyMaglev && !ring.is_raw()) {
    // Envoy fills the table in the order of the host keys, whatever the
    // order of the host set.
    std::sort(nodes.begin(), nodes.end(), [&](uint32_t a, uint32_t b) {
      return ring.node(a).address.host < ring.node(b).address.host;
    });
  } else if (ring.tie_break() == TieBreak::kAddressOrder) {
    std::stable_sort(nodes.begin(), nodes.end(), [&](uint32_t a, uint32_t b) {
      return ring.node(a).address.order < ring.node(b).address.order;
    });
  } else if (ring.tie_break() == TieBreak::kIdOrder) {
    std::sort(nodes.begin(), nodes.end(), [&](uint32_t a, uint32_t b) {
      return ring.node(a).address.host < ring.node(b).address.host;
    });
  }
  return nodes;
}

// For each node id, its number in the points serializations: the position in
// the canonical list (flavor rings) or the id itself (raw rings).
std::vector<uint32_t> CanonicalNumbers(const Ring& ring) {
  std::vector<uint32_t> numbers(ring.num_nodes());
  if (ring.is_raw()) {
    std::iota(numbers.begin(), numbers.end(), 0u);
    return numbers;
  }
  const std::vector<uint32_t> order = CanonicalNodes(ring);
  for (uint32_t position = 0; position < order.size(); ++position) {
    numbers[order[position]] = position;
  }
  return numbers;
}

// A program ring's points: sink(u32) for the point count, then each point
// in ring order, its hash (two u32s, low half first, for envoy-ring's
// 64-bit points; none for envoy-maglev's entries) and number.
template <typename Sink>
void SerializeProgramPoints(const Ring& ring, const std::vector<uint32_t>& numbers, Sink&& sink) {
  sink(static_cast<uint32_t>(ring.num_points()));
  const bool wide = ring.lookup_rule() != LookupRule::kTable && ring.key_hash_bits() == 64;
  const bool table = ring.lookup_rule() == LookupRule::kTable;
  PointCursor cursor = ring.Begin();
  for (uint64_t i = 0; i < ring.num_points(); ++i, cursor.Advance()) {
    if (wide) {
      sink(static_cast<uint32_t>(cursor.hash64()));
      sink(static_cast<uint32_t>(cursor.hash64() >> 32));
    } else if (!table) {
      sink(cursor.hash());
    }
    sink(numbers[cursor.node()]);
  }
}

// Calls sink(u32) for: the kept point count, each kept point's hash and
// number in ring order, the loser count, each loser's hash and number.
template <typename Sink>
void SerializePoints(const Ring& ring, const std::vector<uint32_t>& numbers, Sink&& sink) {
  if (IsProgramRing(ring)) {
    SerializeProgramPoints(ring, numbers, sink);
    return;
  }
  sink(static_cast<uint32_t>(ring.num_points()));
  PointCursor cursor = ring.Begin();
  for (uint64_t i = 0; i < ring.num_points(); ++i, cursor.Advance()) {
    sink(cursor.hash());
    sink(numbers[cursor.node()]);
  }
  const CollisionLosers losers = ring.collision_losers();
  sink(static_cast<uint32_t>(losers.hashes.size()));
  for (size_t i = 0; i < losers.hashes.size(); ++i) {
    sink(losers.hashes[i]);
    sink(numbers[losers.nodes[i]]);
  }
}

Fingerprint FromDigest(const std::array<uint8_t, 32>& digest) {
  Fingerprint fingerprint;
  fingerprint.bytes = digest;
  return fingerprint;
}

}  // namespace

std::string Fingerprint::Hex() const noexcept {
  try {
    return internal::HexOrThrow(bytes.data(), bytes.size());
  } catch (...) {
    return std::string();
  }
}

std::string Fingerprint::Short() const noexcept {
  try {
    return internal::HexOrThrow(bytes.data(), bytes.size()).substr(0, 16);
  } catch (...) {
    return std::string();
  }
}

Fingerprint Sha256(std::string_view bytes) noexcept {
  internal::Sha256Hasher hasher;
  hasher.Update(bytes.data(), bytes.size());
  return FromDigest(hasher.Finish());
}

namespace internal {

std::string ProgramRingIdentityBytes(const Ring& ring) {
  std::string out = "chash-ring";
  AppendU16(out, kFormatVersion);
  out.push_back(static_cast<char>(kHashFunctionOfFlavor));
  out.push_back(static_cast<char>(FlavorCode(ring)));
  out.push_back(static_cast<char>(TieBreakCode(ring.tie_break())));
  AppendU32(out, ring.point_multiple());
  const std::string options = ProgramOptionBytes(ring);
  AppendU32(out, static_cast<uint32_t>(options.size()));
  out += options;
  const std::vector<uint32_t> nodes = CanonicalNodes(ring);
  AppendU32(out, static_cast<uint32_t>(nodes.size()));
  for (const uint32_t id : nodes) {
    const NodeInfo& node = ring.node(id);
    AppendU32(out, node.weight);
    AppendU32(out, node.server_id);
    AppendU32(out, static_cast<uint32_t>(node.address.host.size()));
    out += node.address.host;
  }
  return out;
}

std::string RingIdentityBytesOrThrow(const Ring& ring) {
  if (IsProgramRing(ring)) return ProgramRingIdentityBytes(ring);
  std::string out = "chash-ring";
  AppendU16(out, kFormatVersion);
  out.push_back(static_cast<char>(kHashFunctionKetamaCrc32));
  out.push_back(static_cast<char>(FlavorCode(ring)));
  out.push_back(static_cast<char>(TieBreakCode(ring.tie_break())));
  AppendU32(out, ring.is_raw() ? 0 : ring.point_multiple());
  if (ring.is_raw()) {
    AppendU32(out, 0);
    SerializePoints(ring, CanonicalNumbers(ring), [&](uint32_t v) { AppendU32(out, v); });
    return out;
  }
  const std::vector<uint32_t> nodes = CanonicalNodes(ring);
  AppendU32(out, static_cast<uint32_t>(nodes.size()));
  for (const uint32_t id : nodes) {
    const std::string bytes = ring.node(id).address.HashedBytes();
    AppendU32(out, ring.node(id).weight);
    AppendU32(out, static_cast<uint32_t>(bytes.size()));
    out += bytes;
  }
  return out;
}

uint16_t PointsVersion(const Ring& ring) {
  return IsProgramRing(ring) ? kProgramPointsVersion : kFormatVersion;
}

std::string PointsDigestBytesOrThrow(const Ring& ring) {
  std::string out = "chash-points";
  AppendU16(out, PointsVersion(ring));
  if (IsProgramRing(ring)) out.push_back(static_cast<char>(FlavorCode(ring)));
  SerializePoints(ring, CanonicalNumbers(ring), [&](uint32_t v) { AppendU32(out, v); });
  return out;
}

Fingerprint PointsDigestOrThrow(const Ring& ring) {
  // Streamed: the serialization is 8 bytes a point.
  internal::Sha256Hasher hasher;
  hasher.Update("chash-points", 12);
  hasher.UpdateU16(PointsVersion(ring));
  if (IsProgramRing(ring)) {
    const uint8_t flavor = FlavorCode(ring);
    hasher.Update(&flavor, 1);
  }
  SerializePoints(ring, CanonicalNumbers(ring), [&](uint32_t v) { hasher.UpdateU32(v); });
  return FromDigest(hasher.Finish());
}

std::string BackendIdentityOrThrow(const NodeInfo& node, uint32_t id) {
  const NodeAddress& address = node.address;
  if (address.written.empty()) {
    std::string text = "#";  // (not "#" + ...: GCC 12 false -Wrestrict)
    text += std::to_string(id);
    return text;
  }
  auto socket_text = [](const NodeAddress& parsed) {
    return parsed.order.family == 6 ? "[" + parsed.host + "]:" + parsed.port
                                    : parsed.host + ":" + parsed.port;
  };
  if (address.order.family != 0) return socket_text(address);
  // nginx keeps the text; an IP:PORT text still names a socket address.
  Result<NodeAddress> socket = ParsePingoraAddress(address.written);
  if (socket.ok()) return socket_text(socket.value());
  return address.written;
}

std::string BackendIdentityBytesOrThrow(const Ring& ring) {
  std::vector<std::pair<std::string, uint32_t>> backends;
  for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
    const NodeInfo& node = ring.node(id);
    if (node.weight > 0) backends.emplace_back(BackendIdentityOrThrow(node, id), node.weight);
  }
  std::sort(backends.begin(), backends.end());
  std::string out = "chash-backends";
  AppendU16(out, kFormatVersion);
  AppendU32(out, static_cast<uint32_t>(backends.size()));
  for (const auto& [identity, weight] : backends) {
    AppendU32(out, static_cast<uint32_t>(identity.size()));
    out += identity;
    AppendU32(out, weight);
  }
  return out;
}

}  // namespace internal

// The public calls: the sentinel when memory runs out (identity.h).
namespace {
template <typename F>
auto OrEmpty(F&& f) noexcept -> decltype(f()) {
  try {
    return f();
  } catch (...) {  // std::bad_alloc: the only exception the cores throw
    return {};
  }
}
}  // namespace

std::string RingIdentityBytes(const Ring& ring) noexcept {
  return OrEmpty([&] { return internal::RingIdentityBytesOrThrow(ring); });
}
Fingerprint RingFingerprint(const Ring& ring) noexcept {
  return OrEmpty([&] { return Sha256(internal::RingIdentityBytesOrThrow(ring)); });
}
std::string PointsDigestBytes(const Ring& ring) noexcept {
  return OrEmpty([&] { return internal::PointsDigestBytesOrThrow(ring); });
}
Fingerprint PointsDigest(const Ring& ring) noexcept {
  return OrEmpty([&] { return internal::PointsDigestOrThrow(ring); });
}
std::string BackendIdentityBytes(const Ring& ring) noexcept {
  return OrEmpty([&] { return internal::BackendIdentityBytesOrThrow(ring); });
}
Fingerprint BackendFingerprint(const Ring& ring) noexcept {
  return OrEmpty([&] { return Sha256(internal::BackendIdentityBytesOrThrow(ring)); });
}
std::string BackendIdentity(const NodeInfo& node, uint32_t id) noexcept {
  return OrEmpty([&] { return internal::BackendIdentityOrThrow(node, id); });
}

}  // namespace chash
