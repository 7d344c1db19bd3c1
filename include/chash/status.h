// Status and Result<T>: how every fallible chash call reports failure.
//
// chash never throws across its API. A call that can fail returns a Status
// (or a Result<T> holding either a value or a non-OK Status). Messages name
// the offending input ("node 3 '10.0.0.1:99999': port out of range") so that
// an operator can fix a configuration without reading code.
#ifndef CHASH_STATUS_H_
#define CHASH_STATUS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

// Public API: exported from libchash.so (built with hidden visibility).
#pragma GCC visibility push(default)
namespace chash {

enum class StatusCode : uint8_t {
  kOk = 0,
  kBadAddress,       // address text a flavor cannot hash (syntax, port, family)
  kDuplicateNode,    // two nodes hash the same bytes: identical point chains
  kTooManyNodes,     // more than kMaxNodes (65,536): node ids are u16
  kTooManyPoints,    // weight x multiple, or the ring total, over the cap
  kBadMultiple,      // point multiple 0, or != 160 for a fixed-160 flavor
  kBadNodeId,        // a raw point names a node id >= the node count
  kBadWeight,        // weight text that is not a number in range
  kBadArgument,      // any other malformed argument (options, files)
  kOutOfMemory,      // an allocation failed; nothing was built
  kIoError,          // a file could not be read
  kBadSnapshot,      // a ring snapshot fails a format or integrity check
                     // (the message starts with the check's name)
  kUntrusted,        // a snapshot fails the loader's policy: signature, key,
                     // minimum or rollback of the config version
};

// Stable, human-readable name of a code ("too_many_nodes").
std::string_view StatusCodeName(StatusCode code) noexcept;

// Allocation: an OK Status, and moving any Status, allocate nothing; an error
// Status owns its message (the caller built it). Messages of up to 15 bytes
// ("out of memory") are held inline by std::string and never allocate, which
// is how kOutOfMemory errors are reported without allocating.
class [[nodiscard]] Status {
 public:
  Status() noexcept = default;  // OK
  Status(StatusCode code, std::string message) noexcept
      : code_(code), message_(std::move(message)) {}

  static Status Ok() noexcept { return Status(); }

  bool ok() const noexcept { return code_ == StatusCode::kOk; }
  StatusCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }

  // "too_many_nodes: 65,537 nodes; node ids are u16 (at most 65,536)".
  // The one call here that may throw: std::bad_alloc (and nothing else) when
  // the text cannot be allocated. It is the logging convenience; a Result
  // would make every log line unwrap one, and a sentinel text would hide the
  // error it was asked to show. Code that must not throw, e.g. while
  // reporting kOutOfMemory itself, prints StatusCodeName(code()) and
  // message() instead: both allocate nothing.
  std::string ToString() const;

  friend bool operator==(const Status& a, const Status& b) noexcept {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

namespace internal {
// Prints "chash: CONTRACT VIOLATED: <what>" and the status to stderr, then
// aborts. For the few contracts whose violation has no value to return.
[[noreturn]] void ContractViolation(const char* what, const Status& status) noexcept;
}  // namespace internal

// Either a T or a non-OK Status.
//
// Contracts, checked in every build (NDEBUG included):
// - A Result made from an OK Status is not a value: it holds kBadArgument
//   ("Result from OK"), so ok() is true only with a value.
// - value() on an error stops the process with a message naming the error
//   (a checked contract: there is no T to return, and carrying on would read
//   memory that holds none). Test ok() first, or use Get(). The check is one
//   branch; Result is returned by builds and queries, not by lookups.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}                // NOLINT
  Result(Status status) noexcept : state_(std::move(status)) {  // NOLINT
    if (std::get_if<Status>(&state_)->ok()) {
      // 14 bytes: held inline, so this allocates nothing.
      *std::get_if<Status>(&state_) = Status(StatusCode::kBadArgument, "Result from OK");
    }
  }

  bool ok() const noexcept { return std::holds_alternative<T>(state_); }
  const Status& status() const noexcept {
    static const Status kOkStatus;
    return ok() ? kOkStatus : *std::get_if<Status>(&state_);
  }
  T& value() & noexcept {
    CheckValue();
    return *std::get_if<T>(&state_);
  }
  const T& value() const& noexcept {
    CheckValue();
    return *std::get_if<T>(&state_);
  }
  T&& value() && noexcept {
    CheckValue();
    return std::move(*std::get_if<T>(&state_));
  }

  // simdjson's `.get()` idiom: moves the value out on success; on an error
  // moves the error out and leaves `out` unchanged. No allocation when T's
  // move assignment allocates nothing.
  Status Get(T& out) && {
    if (!ok()) return std::move(*std::get_if<Status>(&state_));
    out = std::move(*std::get_if<T>(&state_));
    return Status();
  }

 private:
  void CheckValue() const noexcept {
    if (!ok()) [[unlikely]] {
      internal::ContractViolation("Result::value() called on an error", status());
    }
  }

 private:
  std::variant<T, Status> state_;
};

}  // namespace chash
#pragma GCC visibility pop

#endif  // CHASH_STATUS_H_
