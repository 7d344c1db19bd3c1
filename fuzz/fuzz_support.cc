#include "fuzz_support.h"

#include <cstdio>
#include <cstdlib>

#include "chash/dispatch.h"
#include "dispatch_control.h"

namespace chash::fuzz {

void Fail(const std::string& what, const std::string& case_description) {
  std::fprintf(stderr, "\nchash fuzz mismatch: %s\n%s\n", what.c_str(), case_description.c_str());
  std::fflush(stderr);
  std::abort();
}

void CheckErrorFormat(const Status& status, const std::string& case_description) {
  const std::string name(StatusCodeName(status.code()));
  if (status.ok() || status.message().empty() || name == "unknown" ||
      status.ToString() != name + ": " + status.message()) {
    Fail("a badly formed error: '" + status.ToString() + "'", case_description);
  }
}

std::string Printable(std::string_view bytes) {
  std::string out = "'";
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7F || c == '\\' || c == '\'') {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string Hex32(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

std::string ElidedLines(size_t count, size_t head, const std::function<std::string(size_t)>& line) {
  std::string out;
  for (size_t i = 0; i < count; ++i) {
    if (i == head && count > head + 8) {
      out += "  ...\n";
      i = count - 4;
    }
    out += line(i);
  }
  return out;
}

const std::vector<std::string>& Targets() {
  static const std::vector<std::string> targets = SupportedTargetNames();
  return targets;
}

void ForEachTarget(const std::function<void(const std::string& target)>& body,
                   const std::string& case_description) {
  if (Targets().empty()) Fail("no supported SIMD target", case_description);
  // Once a process: a name that is not a supported target is refused, and
  // "best" is the default dispatch.
  static const bool kNamesChecked = [&] {
    const Status unknown = ForceTarget("NO_SUCH_TARGET");
    if (unknown.code() != StatusCode::kBadArgument || unknown.message().empty()) {
      Fail("ForceTarget accepted an unknown target", case_description);
    }
    const std::string best(ActiveTargetName());
    if (!ForceTarget("best").ok() || ActiveTargetName() != best || best != Targets().front()) {
      Fail("ForceTarget(\"best\") is not the default target " + Targets().front(),
           case_description);
    }
    return true;
  }();
  (void)kNamesChecked;
  for (const std::string& target : Targets()) {
    if (!ForceTarget(target).ok()) Fail("cannot force target " + target, case_description);
    if (ActiveTargetName() != target) {
      Fail("forced target " + target + " but " + std::string(ActiveTargetName()) + " runs",
           case_description);
    }
    body(target);
  }
  if (!ForceTarget("").ok()) Fail("cannot restore the default target", case_description);
}

}  // namespace chash::fuzz
