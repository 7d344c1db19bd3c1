// Every flavor once, as data: its name (FlavorName, ParseFlavor, the CLI's
// --flavor, the nginx module's flavor=), the byte it is written as (a
// snapshot header's offset 41, RingFingerprint's serialization), how it
// answers a key hash (LookupRule), how wide its key hashes are, and which
// front ends carry it yet. The byte format is fixed: a byte never changes
// meaning, and new flavors are appended.
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

#include "chash/ring.h"

namespace chash::internal {

struct FlavorRow {
  Flavor flavor;
  uint8_t byte;
  std::string_view name;
  LookupRule rule;
  uint8_t key_hash_bits;  // 32, or 64 (Envoy's XXH64)
  // Named by ParseFlavor and run by the chash tool. The flavors after resty
  // are not yet: ParseFlavor refuses their names. (The C API builds every
  // flavor of this table: chash_builder_new_with_options takes their
  // options.)
  bool in_front_ends;
  // Stored in snapshot files and read back from them: every flavor since
  // format 1.4 (the flavors after resty only in 1.4 files and later, with
  // their options section; engine/snapshot/FORMAT.md). Apart from
  // in_front_ends because a front end may carry a flavor only once it can
  // name it and build it, while a loaded snapshot of it is already exact.
  bool in_snapshots;
};

inline constexpr FlavorRow kFlavors[] = {
    {Flavor::kNginx, 0, "nginx", LookupRule::kSuccessor, 32, true, true},
    {Flavor::kPingoraV1, 1, "pingora-v1", LookupRule::kSuccessor, 32, true, true},
    {Flavor::kPingoraV2, 2, "pingora-v2", LookupRule::kSuccessor, 32, true, true},
    {Flavor::kResty, 3, "resty", LookupRule::kSuccessor, 32, true, true},
    {Flavor::kHaproxy, 4, "haproxy", LookupRule::kNearest, 32, false, true},
    {Flavor::kKetamaMd5, 5, "ketama-md5", LookupRule::kSuccessor, 32, false, true},
    {Flavor::kVarnishShard, 6, "varnish-shard", LookupRule::kSuccessorClamped, 32, false, true},
    {Flavor::kEnvoyRing, 7, "envoy-ring", LookupRule::kSuccessor, 64, false, true},
    {Flavor::kEnvoyMaglev, 8, "envoy-maglev", LookupRule::kTable, 64, false, true},
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

// "nginx, pingora-v1, pingora-v2 or resty": the flavors the front ends name,
// for ParseFlavor's message.
inline constexpr std::string_view kFlavorList = "nginx, pingora-v1, pingora-v2 or resty";

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

// A flavor the front ends carry (snapshots, the C API), from its byte;
// nullopt for the other flavors' bytes too: the snapshot reader refuses
// them as unknown, as a reader of format 1.2 does.
constexpr std::optional<Flavor> FlavorFromByte(uint8_t byte) noexcept {
  for (const FlavorRow& row : kFlavors) {
    if (row.byte == byte && row.in_front_ends) return row.flavor;
  }
  return std::nullopt;
}

// A flavor snapshot files carry (FlavorRow::in_snapshots), from its byte.
constexpr std::optional<Flavor> SnapshotFlavorFromByte(uint8_t byte) noexcept {
  for (const FlavorRow& row : kFlavors) {
    if (row.byte == byte && row.in_snapshots) return row.flavor;
  }
  return std::nullopt;
}

constexpr bool InSnapshots(Flavor flavor) noexcept {
  const FlavorRow* row = FindFlavor(flavor);
  return row != nullptr && row->in_snapshots;
}

constexpr bool InFrontEnds(Flavor flavor) noexcept {
  const FlavorRow* row = FindFlavor(flavor);
  return row != nullptr && row->in_front_ends;
}

// "0 nginx, 1 pingora-v1, 2 pingora-v2, 3 resty", for messages about a
// flavor byte or enum value (with `all`, every flavor, front ends' or not).
// Throws std::bad_alloc.
inline std::string FlavorByteList(bool all = false) {
  std::string list;
  for (const FlavorRow& row : kFlavors) {
    if (!all && !row.in_front_ends) continue;
    if (!list.empty()) list += ", ";
    list += std::to_string(row.byte);
    list += ' ';
    list += row.name;
  }
  return list;
}

}  // namespace chash::internal

#endif  // CHASH_ENGINE_FLAVORS_H_
