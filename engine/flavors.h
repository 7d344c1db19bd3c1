// Every flavor once: its name (FlavorName, ParseFlavor, the CLI's --flavor,
// the nginx module's flavor=) and the byte it is written as (a snapshot
// header's offset 41, RingFingerprint's serialization). Both formats are
// fixed: a byte never changes meaning.
#ifndef CHASH_ENGINE_FLAVORS_H_
#define CHASH_ENGINE_FLAVORS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "chash/address.h"

namespace chash::internal {

struct FlavorRow {
  Flavor flavor;
  uint8_t byte;
  std::string_view name;
};

inline constexpr FlavorRow kFlavors[] = {
    {Flavor::kNginx, 0, "nginx"},
    {Flavor::kPingoraV1, 1, "pingora-v1"},
    {Flavor::kPingoraV2, 2, "pingora-v2"},
    {Flavor::kResty, 3, "resty"},
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

// "nginx, pingora-v1, pingora-v2 or resty", for messages.
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

constexpr std::optional<Flavor> FlavorFromByte(uint8_t byte) noexcept {
  for (const FlavorRow& row : kFlavors) {
    if (row.byte == byte) return row.flavor;
  }
  return std::nullopt;
}

// "0 nginx, 1 pingora-v1, 2 pingora-v2, 3 resty", for messages about a
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

}  // namespace chash::internal

#endif  // CHASH_ENGINE_FLAVORS_H_
