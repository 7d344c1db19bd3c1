#include "address_model.h"

#include <cstdio>

namespace chash::fuzz {
namespace {

std::string Dotted(const uint8_t* octets) {
  return std::to_string(octets[0]) + "." + std::to_string(octets[1]) + "." +
         std::to_string(octets[2]) + "." + std::to_string(octets[3]);
}

}  // namespace

std::string Ipv6Text(const std::array<uint8_t, 16>& bytes, int form) {
  uint16_t groups[8];
  for (int i = 0; i < 8; ++i)
    groups[i] = static_cast<uint16_t>(bytes[2 * i] << 8 | bytes[2 * i + 1]);
  const bool upper = form == 2 || form == 4;
  const bool padded = form == 2;
  const bool dotted = form == 5 || form == 7;
  const int hex_groups = dotted ? 6 : 8;
  auto group_text = [&](int i) {
    char text[8];
    std::snprintf(text, sizeof text, padded ? (upper ? "%04X" : "%04x") : (upper ? "%X" : "%x"),
                  groups[i]);
    return std::string(text);
  };
  auto tail = [&] { return Dotted(&bytes[12]); };
  // [run_at, run_at + run_len) is written as "::" (run_len 0: none).
  int run_at = -1, run_len = 0;
  if (form == 0 || form == 4) {
    std::string text = Rfc5952(bytes);
    if (upper) {
      for (char& c : text) {
        if (c >= 'a' && c <= 'f') c = static_cast<char>(c - 'a' + 'A');
      }
    }
    return text;
  }
  if (form == 3 || form == 6 || form == 7) {
    for (int i = 0; i < hex_groups; ++i) {
      if (groups[i] != 0) continue;
      int j = i;
      while (j < hex_groups && groups[j] == 0) ++j;
      const bool take = form == 3 ? run_len == 0 : (form == 6 ? true : j - i > run_len);
      if (take) {
        run_at = i;
        run_len = j - i;
      }
      i = j;
    }
  }
  std::string out;
  for (int i = 0; i < hex_groups; ++i) {
    if (i == run_at) {
      out += "::";
      i += run_len - 1;
      continue;
    }
    if (!out.empty() && out.back() != ':') out += ':';
    out += group_text(i);
  }
  if (dotted) {
    if (!out.empty() && out.back() != ':') out += ':';
    out += tail();
  }
  return out;
}

}  // namespace chash::fuzz
