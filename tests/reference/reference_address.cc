#include "reference/reference_address.h"

#include <cstdio>
#include <optional>
#include <vector>

namespace chash::reference {
namespace {

using Bytes16 = std::array<uint8_t, 16>;

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(separator, start);
    if (at == std::string_view::npos) {
      parts.push_back(text.substr(start));
      return parts;
    }
    parts.push_back(text.substr(start, at - start));
    start = at + 1;
  }
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool AllOf(std::string_view text, bool (*pred)(char)) {
  for (const char c : text) {
    if (!pred(c)) return false;
  }
  return true;
}

// Decimal digits only, any count, value <= max (leading zeros allowed).
std::optional<uint64_t> Decimal(std::string_view text, uint64_t max) {
  if (text.empty() || !AllOf(text, IsDigit)) return std::nullopt;
  uint64_t value = 0;
  for (const char c : text) {
    value = value * 10 + static_cast<uint64_t>(c - '0');
    if (value > max) return std::nullopt;
  }
  return value;
}

// 1 to 4 hex digits (both peers).
std::optional<uint16_t> HexGroup(std::string_view text) {
  if (text.empty() || text.size() > 4 || !AllOf(text, IsHex)) return std::nullopt;
  uint32_t value = 0;
  for (const char c : text) {
    value = value * 16 + static_cast<uint32_t>(IsDigit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return static_cast<uint16_t>(value);
}

std::string Dotted(const uint8_t* octets) {
  return std::to_string(octets[0]) + "." + std::to_string(octets[1]) + "." +
         std::to_string(octets[2]) + "." + std::to_string(octets[3]);
}

ParsedAddress Reject(std::string why) {
  ParsedAddress out;
  out.why = std::move(why);
  return out;
}

// ---- Rust (pingora) -------------------------------------------------------------

// Ipv4Addr::from_str: exactly 4 decimal octets of 1-3 digits, no leading
// zero ("0" itself is fine), each <= 255.
std::optional<std::array<uint8_t, 4>> RustIpv4(std::string_view text) {
  const std::vector<std::string_view> parts = Split(text, '.');
  if (parts.size() != 4) return std::nullopt;
  std::array<uint8_t, 4> octets{};
  for (size_t i = 0; i < 4; ++i) {
    const std::string_view part = parts[i];
    if (part.size() > 3 || (part.size() > 1 && part[0] == '0')) return std::nullopt;
    const auto value = Decimal(part, 255);
    if (!value) return std::nullopt;
    octets[i] = static_cast<uint8_t>(*value);
  }
  return octets;
}

// Appends the 16-bit groups of one side of an IPv6 text. A dotted quad may
// only be the very last element of the address (`last_may_be_ipv4`).
bool RustGroups(std::string_view side, bool last_may_be_ipv4, std::vector<uint16_t>& groups) {
  if (side.empty()) return true;
  const std::vector<std::string_view> parts = Split(side, ':');
  for (size_t i = 0; i < parts.size(); ++i) {
    if (const auto group = HexGroup(parts[i])) {
      groups.push_back(*group);
      continue;
    }
    if (i + 1 == parts.size() && last_may_be_ipv4) {
      if (const auto v4 = RustIpv4(parts[i])) {
        groups.push_back(static_cast<uint16_t>(((*v4)[0] << 8) | (*v4)[1]));
        groups.push_back(static_cast<uint16_t>(((*v4)[2] << 8) | (*v4)[3]));
        continue;
      }
    }
    return false;
  }
  return true;
}

// Ipv6Addr::from_str: 8 groups, or one "::" standing for at least one zero
// group; a dotted quad may end the address.
std::optional<Bytes16> RustIpv6(std::string_view text) {
  std::vector<uint16_t> head, tail;
  const size_t gap = text.find("::");
  if (gap == std::string_view::npos) {
    if (!RustGroups(text, true, head) || head.size() != 8) return std::nullopt;
  } else {
    const std::string_view before = text.substr(0, gap);
    const std::string_view after = text.substr(gap + 2);
    // Only the tail may end with a dotted quad, even when it is empty.
    if (!RustGroups(before, false, head) || !RustGroups(after, true, tail)) return std::nullopt;
    if (head.size() + tail.size() > 7) return std::nullopt;
    head.resize(8 - tail.size(), 0);
    head.insert(head.end(), tail.begin(), tail.end());
  }
  Bytes16 bytes{};
  for (int i = 0; i < 8; ++i) {
    bytes[2 * i] = static_cast<uint8_t>(head[i] >> 8);
    bytes[2 * i + 1] = static_cast<uint8_t>(head[i]);
  }
  return bytes;
}

// ---- nginx ----------------------------------------------------------------------

// ngx_inet_addr: only digits and dots, exactly three dots, every octet
// value <= 255; an octet may be empty (0) or have any number of digits.
// Returns the address, or nothing; nginx's own callers cannot tell
// 255.255.255.255 from a failure (it is INADDR_NONE).
std::optional<uint32_t> NgxInetAddr(std::string_view text) {
  const std::vector<std::string_view> parts = Split(text, '.');
  if (parts.size() != 4) return std::nullopt;
  uint32_t address = 0;
  for (const std::string_view part : parts) {
    const auto octet = part.empty() ? std::optional<uint64_t>(0) : Decimal(part, 255);
    if (!octet) return std::nullopt;
    address = address << 8 | static_cast<uint32_t>(*octet);
  }
  return address;
}

// glibc's inet_aton on a text of digits and dots, the numeric parse of the
// getaddrinfo call nginx resolves other hosts with: 1 to 4 parts, each a C
// integer (octal after a leading 0), the last filling the remaining bytes
// ("127.1" is 127.0.0.1, "2130706433" too), the others <= 255.
bool InetAton(std::string_view text) {
  const std::vector<std::string_view> parts = Split(text, '.');
  if (parts.size() > 4) return false;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string_view part = parts[i];
    if (part.empty()) return false;
    const bool octal = part.size() > 1 && part[0] == '0';
    uint64_t value = 0;
    for (const char c : part) {
      if (!IsDigit(c) || (octal && c > '7')) return false;
      value = value * (octal ? 8 : 10) + static_cast<uint64_t>(c - '0');
      if (value > 0xFFFFFFFFu) return false;
    }
    const uint64_t limit = i + 1 < parts.size() ? 0xFF : 0xFFFFFFFFu >> (8 * i);
    if (value > limit) return false;
  }
  return true;
}

// ngx_atoi then 1..65535.
bool NgxPort(std::string_view text) {
  const auto value = Decimal(text, 65535);
  return value && *value >= 1;
}

// ngx_inet6_addr's language, restated per ':'-separated part: one leading ':'
// is skipped; an empty part before a ':' marks the zero run (once); every
// other part before a ':' is a 1-4 digit hex word, at most 7 of them; the
// final part is a word too (empty counts as a zero word) or, after at least
// one ':', 1-4 hex digits then '.', the whole part an ngx_inet_addr quad
// worth two words, with at most 6 words before it. 8 words need no zero
// run; fewer need one.
bool NgxInet6(std::string_view text) {
  if (text.empty()) return false;
  if (text[0] == ':') text.remove_prefix(1);
  const std::vector<std::string_view> parts = Split(text, ':');
  int words = 0;
  bool zero_run = false;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (parts[i].empty()) {
      if (zero_run) return false;
      zero_run = true;
    } else {
      if (!HexGroup(parts[i])) return false;
      if (++words == 8) return false;
    }
  }
  const std::string_view last = parts.back();
  const size_t dot = last.find('.');
  if (dot != std::string_view::npos) {
    if (parts.size() < 2 || dot == 0 || dot > 4 || !AllOf(last.substr(0, dot), IsHex)) {
      return false;
    }
    // ngx_inet6_addr calls ngx_inet_addr, whose INADDR_NONE is an error.
    const auto quad = NgxInetAddr(last);
    if (words > 6 || !quad || *quad == 0xFFFFFFFFu) return false;
    words += 2;
  } else {
    if (last.empty() ? !zero_run : !HexGroup(last)) return false;
    words += 1;
  }
  return words == 8 ? !zero_run : zero_run;
}

bool IsNameByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '-' || c == '.' ||
         c == '_';
}
bool IsDigitOrDot(char c) { return IsDigit(c) || c == '.'; }

}  // namespace

std::string Rfc5952(const Bytes16& bytes) {
  uint16_t groups[8];
  for (int i = 0; i < 8; ++i)
    groups[i] = static_cast<uint16_t>(bytes[2 * i] << 8 | bytes[2 * i + 1]);
  bool mapped = groups[5] == 0xFFFF;
  for (int i = 0; i < 5; ++i) mapped = mapped && groups[i] == 0;
  if (mapped) return "::ffff:" + Dotted(&bytes[12]);
  // The first of the longest runs of zero groups, if at least 2 long.
  int best_at = -1, best_len = 1;
  for (int i = 0; i < 8;) {
    if (groups[i] != 0) {
      ++i;
      continue;
    }
    int j = i;
    while (j < 8 && groups[j] == 0) ++j;
    if (j - i > best_len) {
      best_at = i;
      best_len = j - i;
    }
    i = j;
  }
  std::string out;
  char hex[8];
  for (int i = 0; i < 8; ++i) {
    if (i == best_at) {
      out += "::";
      i += best_len - 1;
      continue;
    }
    if (!out.empty() && out.back() != ':') out += ':';
    std::snprintf(hex, sizeof hex, "%x", groups[i]);
    out += hex;
  }
  return out;
}

ParsedAddress ParseNginx(std::string_view text) {
  if (text.empty()) return Reject("empty");
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte == 0x7F || c == ',' || c == '#') {
      return Reject("chash refuses whitespace, control bytes, ',' and '#'");
    }
  }
  ParsedAddress out;
  std::string lower_prefix(text.substr(0, 5));
  for (char& c : lower_prefix) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  if (lower_prefix == "unix:") {
    const std::string_view path = text.substr(5);
    if (path.empty()) return Reject("no path in the unix domain socket");
    // sun_path is 108 bytes on Linux, its NUL included.
    if (path.size() > 107) return Reject("too long path in the unix domain socket");
    out.accepted = true;
    out.host.assign(path);
    return out;
  }
  if (text[0] == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return Reject("invalid host: no ']'");
    const std::string_view inner = text.substr(1, close - 1);
    const std::string_view rest = text.substr(close + 1);
    if (rest.find('/') != std::string_view::npos) return Reject("invalid host: '/'");
    if (!rest.empty()) {
      if (rest[0] != ':') return Reject("invalid host: text after ']'");
      if (!NgxPort(rest.substr(1))) return Reject("invalid port");
    }
    if (inner.empty()) return Reject("no host");
    if (!NgxInet6(inner)) return Reject("invalid IPv6 address");
    out.accepted = true;
    out.host.assign(text.substr(0, close + 1));
    if (!rest.empty()) out.port.assign(rest.substr(1));
    return out;
  }
  if (text.find('/') != std::string_view::npos || text.find('?') != std::string_view::npos) {
    return Reject("invalid host: '/' or '?'");
  }
  const size_t colon = text.find(':');
  const std::string_view host = text.substr(0, colon);
  if (colon != std::string_view::npos && !NgxPort(text.substr(colon + 1))) {
    return Reject("invalid port");
  }
  if (host.empty()) return Reject("no host");
  // A dotted quad, else what nginx hands to getaddrinfo: a number
  // inet_aton reads, or a host name.
  if (!NgxInetAddr(host)) {
    if (!AllOf(host, IsNameByte)) return Reject("not a dotted quad nor a host name");
    if (AllOf(host, IsDigitOrDot) && !InetAton(host)) {
      return Reject("numeric host that neither ngx_inet_addr nor inet_aton reads");
    }
  }
  out.accepted = true;
  out.host.assign(host);
  if (colon != std::string_view::npos) out.port.assign(text.substr(colon + 1));
  return out;
}

ParsedAddress ParsePingora(std::string_view text) {
  ParsedAddress out;
  std::string_view port_text;
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return Reject("no ']'");
    const std::string_view inner = text.substr(1, close - 1);
    if (inner.find('%') != std::string_view::npos) {
      return Reject("scope id (Rust takes %DIGITS; chash refuses them)");
    }
    const auto v6 = RustIpv6(inner);
    if (!v6) return Reject("not an IPv6 address");
    const std::string_view rest = text.substr(close + 1);
    if (rest.empty() || rest[0] != ':') return Reject("no port");
    port_text = rest.substr(1);
    out.host = Rfc5952(*v6);
    out.order.family = 6;
    out.order.bytes = *v6;
  } else {
    const size_t colon = text.find(':');
    if (colon == std::string_view::npos) return Reject("no port");
    const auto v4 = RustIpv4(text.substr(0, colon));
    if (!v4) return Reject("not an IPv4 address");
    port_text = text.substr(colon + 1);
    out.host = Dotted(v4->data());
    out.order.family = 4;
    for (int i = 0; i < 4; ++i) out.order.bytes[i] = (*v4)[i];
  }
  const auto port = Decimal(port_text, 65535);
  if (!port) return Reject("port is not 0..65535");
  out.accepted = true;
  out.port = std::to_string(*port);
  out.order.port = static_cast<uint16_t>(*port);
  return out;
}

ParsedAddress ParseResty(std::string_view text) {
  ParsedAddress out;
  if (text.empty() || text.size() > 4096) {
    out.why = "an id is 1..4096 bytes";
    return out;
  }
  out.accepted = true;
  out.whole_id = true;
  out.host.assign(text);
  return out;
}

ParsedAddress ParseAddress(Flavor flavor, std::string_view text) {
  if (flavor == Flavor::kResty) return ParseResty(text);
  return flavor == Flavor::kNginx ? ParseNginx(text) : ParsePingora(text);
}

}  // namespace chash::reference
