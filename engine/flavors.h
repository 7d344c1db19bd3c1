// Every flavor once, as data: its name (FlavorName, ParseFlavor, the CLI's
// --flavor, the nginx module's flavor=), the byte it is written as (a
// snapshot header's offset 41, RingFingerprint's serialization), how it
// answers a key hash (LookupRule), how wide its key hashes are and which
// node keeps a point two nodes hash to (FlavorTieBreak). The byte
// format is fixed: a byte never changes meaning, and new flavors are
// appended. Snapshots (format 1.4 for the flavors after resty) and the C
// API carry every flavor; the nginx modules route every flavor, on `server`
// lines and from snapshots. flavor_options.h holds the other programs'
// options; engine/README.md's "Adding a flavor" is the checklist.
//
// What a flavor's points and key hash are is the builder's and the key
// hasher's (builder/flavor_points.cc, hash/program_hashes.h); this table is
// what every other part of the engine asks about a flavor.
#ifndef CHASH_ENGINE_FLAVORS_H_
#define CHASH_ENGINE_FLAVORS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "chash/flavors.h"

namespace chash::internal {

// How a proxy finds the next server when the one a key maps to fails
// (chash_c.h's CHASH_RETRY_*: the values are the bindings').
enum class Retry : uint8_t {
  kPointWalk,  // the next point's node, point by point (nginx's own chash)
  kDistinct,   // each node once, in ring order (NodeWalk)
  kAttempt,    // Envoy's retry attempts: attempt N its own entry or slot
};

// What a node carries beside its address and weight (NodeOptions), as
// bits (chash_c.h's CHASH_NODE_FIELD_*: the values are the bindings').
namespace node_field {
inline constexpr uint8_t kServerId = 1;  // haproxy's `id`
inline constexpr uint8_t kName = 2;      // twemproxy's server name, Varnish's ident
inline constexpr uint8_t kHostname = 4;  // Envoy's hostname (use_hostname_for_hashing)
inline constexpr uint8_t kHashKey = 8;   // Envoy's envoy.lb hash_key metadata
inline constexpr uint8_t kRealWeight = 16;  // Varnish's REAL weight
}  // namespace node_field

struct FlavorRow {
  Flavor flavor;
  uint8_t byte;
  std::string_view name;
  LookupRule rule;
  uint8_t key_hash_bits;  // 32, or 64 (Envoy's XXH64)
  TieBreak tie_break;     // which of two nodes on one hash keeps the point
  Retry retry;
  // The program takes a down server out of its ring (HAProxy dequeues it,
  // libmemcached leaves its points out): where the ring also masks exactly
  // (FlavorMasksExactly), a mask of the live nodes answers as it does. The
  // others skip a down server along their walk (Varnish), or rebuild.
  bool removes_down;
  uint8_t node_fields;  // node_field bits
  // Any point multiple (the points a weight unit are the caller's); the
  // others have 160 (nginx, pingora-v1) or their program's own count.
  bool takes_multiple;
};

inline constexpr FlavorRow kFlavors[] = {
    {Flavor::kNginx, 0, "nginx", LookupRule::kSuccessor, 32, TieBreak::kConfigOrder,
     Retry::kPointWalk, false, 0, false},
    {Flavor::kPingoraV1, 1, "pingora-v1", LookupRule::kSuccessor, 32, TieBreak::kConfigOrder,
     Retry::kDistinct, false, 0, false},
    {Flavor::kPingoraV2, 2, "pingora-v2", LookupRule::kSuccessor, 32, TieBreak::kAddressOrder,
     Retry::kDistinct, false, 0, true},
    {Flavor::kResty, 3, "resty", LookupRule::kSuccessor, 32, TieBreak::kIdOrder,
     Retry::kDistinct, false, 0, true},
    {Flavor::kHaproxy, 4, "haproxy", LookupRule::kNearest, 32, TieBreak::kConfigOrder,
     Retry::kDistinct, true, node_field::kServerId, false},
    {Flavor::kKetamaMd5, 5, "ketama-md5", LookupRule::kSuccessor, 32, TieBreak::kConfigOrder,
     Retry::kDistinct, true, node_field::kName, false},
    {Flavor::kVarnishShard, 6, "varnish-shard", LookupRule::kSuccessorClamped, 32,
     TieBreak::kConfigOrder, Retry::kDistinct, false, node_field::kName | node_field::kRealWeight,
     false},
    {Flavor::kEnvoyRing, 7, "envoy-ring", LookupRule::kSuccessor, 64, TieBreak::kConfigOrder,
     Retry::kAttempt, false, node_field::kHostname | node_field::kHashKey, false},
    {Flavor::kEnvoyMaglev, 8, "envoy-maglev", LookupRule::kTable, 64, TieBreak::kConfigOrder,
     Retry::kAttempt, false, node_field::kHostname | node_field::kHashKey, false},
};

// Each byte is the enum's value (and CHASH_FLAVOR_*'s), so messages about
// either list the bytes.
constexpr bool BytesAreEnumValues() noexcept {
  for (const FlavorRow& row : kFlavors) {
    if (row.byte != static_cast<uint8_t>(row.flavor)) return false;
  }
  return true;
}
static_assert(BytesAreEnumValues());

// The row of a flavor, or nullptr for a value past the enum.
constexpr const FlavorRow* FindFlavor(Flavor flavor) noexcept {
  for (const FlavorRow& row : kFlavors) {
    if (row.flavor == flavor) return &row;
  }
  return nullptr;
}

// 0xFF (no flavor's byte) for a value past the enum.
constexpr uint8_t FlavorByte(Flavor flavor) noexcept {
  const FlavorRow* row = FindFlavor(flavor);
  return row == nullptr ? 0xFF : row->byte;
}

// The case labels of the flavors whose rings are the ketama chain over
// CRC-32 (nginx, pingora-v1, pingora-v2, resty), for the switches over Flavor
// that list every flavor and have no `default:`, so that the compiler
// (-Wswitch, an error in CI) names each switch a new flavor is missing from.
// Written `CHASH_CRC32_FLAVOR_CASES:`.
#define CHASH_CRC32_FLAVOR_CASES \
  case Flavor::kNginx:           \
  case Flavor::kPingoraV1:       \
  case Flavor::kPingoraV2:       \
  case Flavor::kResty

// The other programs' flavors (haproxy .. envoy-maglev): built from their
// options (builder/flavor_points.cc), every point kept.
constexpr bool IsProgramFlavor(Flavor flavor) noexcept {
  return FindFlavor(flavor) != nullptr &&
         static_cast<uint8_t>(flavor) > static_cast<uint8_t>(Flavor::kResty);
}

// The flavor written as `byte`; nullopt for a byte no flavor has.
constexpr std::optional<Flavor> FlavorFromByte(uint8_t byte) noexcept {
  for (const FlavorRow& row : kFlavors) {
    if (row.byte == byte) return row.flavor;
  }
  return std::nullopt;
}

// "0 nginx, 1 pingora-v1, ..., 8 envoy-maglev", for messages about a
// flavor byte or enum value. Throws std::bad_alloc.
inline std::string FlavorByteList() {
  std::string list;
  for (const FlavorRow& row : kFlavors) {
    if (!list.empty()) list += ", ";
    list += std::to_string(row.byte);
    list += ' ';
    list += row.name;
  }
  return list;
}

// "nginx, pingora-v1, ..., envoy-maglev", for messages about a flavor name.
// Throws std::bad_alloc.
inline std::string FlavorNameList() {
  std::string list;
  for (const FlavorRow& row : kFlavors) {
    if (!list.empty()) list += ", ";
    list += row.name;
  }
  return list;
}

}  // namespace chash::internal

#endif  // CHASH_ENGINE_FLAVORS_H_
