#include "chash/status.h"

#include <cstdio>
#include <cstdlib>
#include <new>

#include "util/out_of_memory.h"
#include "util/status_codes.h"

namespace chash {

std::string_view StatusCodeName(StatusCode code) noexcept {
  const internal::ErrorCode* row = internal::FindErrorCode(code);
  return row == nullptr ? "unknown" : row->name;
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string text(StatusCodeName(code_));
  text += ": ";
  text += message_;
  return text;
}

namespace internal {

Status OutOfMemory(std::string_view what) noexcept {
  try {
    std::string message = "out of memory: ";
    message += what;
    return Status(StatusCode::kOutOfMemory, std::move(message));
  } catch (...) {
    return Status(StatusCode::kOutOfMemory, "out of memory");
  }
}

Status OutOfMemory(std::string_view what, std::string_view path) noexcept {
  try {
    std::string message = "out of memory: ";
    message += what;
    message += " (";
    message += path;
    message += ")";
    return Status(StatusCode::kOutOfMemory, std::move(message));
  } catch (...) {
    return Status(StatusCode::kOutOfMemory, "out of memory");
  }
}

void ContractViolation(const char* what, const Status& status) noexcept {
  const std::string_view code = StatusCodeName(status.code());
  std::fprintf(stderr, "chash: CONTRACT VIOLATED: %s (%.*s: %s)\n", what,
               static_cast<int>(code.size()), code.data(), status.message().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace internal

}  // namespace chash
