// Every error code once: the C++ StatusCode (where there is one), the C
// CHASH_E_* value and the name both StatusCodeName and chash_strerror print,
// in the manner of abseil's status.h. A code is added here and nowhere else.
#ifndef CHASH_ENGINE_STATUS_CODES_H_
#define CHASH_ENGINE_STATUS_CODES_H_

#include <string_view>

#include "chash/chash_c.h"
#include "chash/status.h"

namespace chash::internal {

struct ErrorCode {
  bool has_status_code;   // false: a C-only code (NULL arguments, internal)
  StatusCode status_code; // meaningful when has_status_code
  int c_code;             // CHASH_OK or a CHASH_E_* value
  std::string_view name;
};

// The C codes are the C++ codes negated down to CHASH_E_IO (-10); the two
// C-only codes take -11 and -12, so kBadSnapshot and kUntrusted are -13, -14.
inline constexpr ErrorCode kErrorCodes[] = {
    {true, StatusCode::kOk, CHASH_OK, "ok"},
    {true, StatusCode::kBadAddress, CHASH_E_BAD_ADDRESS, "bad_address"},
    {true, StatusCode::kDuplicateNode, CHASH_E_DUPLICATE_NODE, "duplicate_node"},
    {true, StatusCode::kTooManyNodes, CHASH_E_TOO_MANY_NODES, "too_many_nodes"},
    {true, StatusCode::kTooManyPoints, CHASH_E_TOO_MANY_POINTS, "too_many_points"},
    {true, StatusCode::kBadMultiple, CHASH_E_BAD_MULTIPLE, "bad_multiple"},
    {true, StatusCode::kBadNodeId, CHASH_E_BAD_NODE_ID, "bad_node_id"},
    {true, StatusCode::kBadWeight, CHASH_E_BAD_WEIGHT, "bad_weight"},
    {true, StatusCode::kBadArgument, CHASH_E_BAD_ARGUMENT, "bad_argument"},
    {true, StatusCode::kOutOfMemory, CHASH_E_OUT_OF_MEMORY, "out_of_memory"},
    {true, StatusCode::kIoError, CHASH_E_IO, "io_error"},
    {false, StatusCode::kOk, CHASH_E_NULL_ARGUMENT, "null_argument"},
    {false, StatusCode::kOk, CHASH_E_INTERNAL, "internal"},
    {true, StatusCode::kBadSnapshot, CHASH_E_BAD_SNAPSHOT, "bad_snapshot"},
    {true, StatusCode::kUntrusted, CHASH_E_UNTRUSTED, "untrusted"},
};

// The row of a C++ code, or nullptr for a value past the enum.
constexpr const ErrorCode* FindErrorCode(StatusCode code) noexcept {
  for (const ErrorCode& row : kErrorCodes) {
    if (row.has_status_code && row.status_code == code) return &row;
  }
  return nullptr;
}

// The row of a C code, or nullptr for a value no function returns.
constexpr const ErrorCode* FindCErrorCode(int c_code) noexcept {
  for (const ErrorCode& row : kErrorCodes) {
    if (row.c_code == c_code) return &row;
  }
  return nullptr;
}

// Every C++ code, kOk to kUntrusted, has its row.
constexpr bool EveryStatusCodeHasARow() noexcept {
  for (int code = 0; code <= static_cast<int>(StatusCode::kUntrusted); ++code) {
    bool found = false;
    for (const ErrorCode& row : kErrorCodes) {
      found = found || (row.has_status_code && static_cast<int>(row.status_code) == code);
    }
    if (!found) return false;
  }
  return true;
}
static_assert(EveryStatusCodeHasARow());

}  // namespace chash::internal

#endif  // CHASH_ENGINE_STATUS_CODES_H_
