#pragma once
// JSON text, one set of rules for the engine (RingStatsJson) and the chash
// tool's --json output. Not part of the public API.
//
//   numbers  a finite double with 10 significant digits (printf's %.10g);
//            NaN and the infinities as null, which JSON has instead
//   strings  quoted, '"' and '\\' escaped, bytes below 0x20 as \u00XX;
//            other bytes (UTF-8 or not) as they are

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

namespace chash::internal {

// A number's JSON text without allocating (for output built where an
// allocation failure must be reported, not thrown).
struct JsonNumberText {
  char text[32];
  explicit JsonNumberText(double value) noexcept {
    if (std::isfinite(value)) {
      std::snprintf(text, sizeof text, "%.10g", value);
    } else {
      std::snprintf(text, sizeof text, "null");
    }
  }
};

// Throws std::bad_alloc.
inline std::string JsonNumber(double value) { return JsonNumberText(value).text; }

// Throws std::bad_alloc.
inline std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

}  // namespace chash::internal
