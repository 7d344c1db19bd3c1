// Address parsing for the three ring flavors (see include/chash/address.h).
//
// The pingora parser follows Rust's core::net parser rule by rule (octets
// without leading zeros, 1-4 hex digits a group, "::" standing for at least
// one zero group, an embedded IPv4 only in the last two groups), because the
// bytes pingora hashes are the Display of what that parser produced.
#include "chash/address.h"

#include <cstdio>
#include <new>
#include <optional>

#include "builder/flavor_points.h"
#include "flavors.h"
#include "util/out_of_memory.h"

namespace chash {
namespace {

// A cursor over the text with Rust-parser-like atomic reads: every Read*
// either consumes what it parsed or leaves the position unchanged.
class TextCursor {
 public:
  explicit TextCursor(std::string_view text) : text_(text) {}

  bool AtEnd() const { return pos_ == text_.size(); }
  size_t pos() const { return pos_; }
  void Rewind(size_t pos) { pos_ = pos; }

  bool ReadChar(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  // Decimal or hex number of at most `max_digits` digits (0 = unbounded, but
  // the value must fit `max_value`). Rust's read_number.
  std::optional<uint32_t> ReadNumber(int radix, int max_digits,
                                     bool allow_zero_prefix,
                                     uint32_t max_value) {
    const size_t start = pos_;
    uint64_t value = 0;
    int digits = 0;
    const bool leading_zero = pos_ < text_.size() && text_[pos_] == '0';
    while (pos_ < text_.size()) {
      const int digit = DigitValue(text_[pos_], radix);
      if (digit < 0) break;
      value = value * static_cast<uint64_t>(radix) + static_cast<uint64_t>(digit);
      ++digits;
      ++pos_;
      if ((max_digits != 0 && digits > max_digits) || value > max_value) {
        pos_ = start;
        return std::nullopt;
      }
    }
    if (digits == 0 || (!allow_zero_prefix && leading_zero && digits > 1)) {
      pos_ = start;
      return std::nullopt;
    }
    return static_cast<uint32_t>(value);
  }

  std::optional<std::array<uint8_t, 4>> ReadIpv4() {
    const size_t start = pos_;
    std::array<uint8_t, 4> octets{};
    for (int i = 0; i < 4; ++i) {
      if (i > 0 && !ReadChar('.')) {
        pos_ = start;
        return std::nullopt;
      }
      const auto octet = ReadNumber(10, 3, /*allow_zero_prefix=*/false, 255);
      if (!octet) {
        pos_ = start;
        return std::nullopt;
      }
      octets[i] = static_cast<uint8_t>(*octet);
    }
    return octets;
  }

  // Rust read_groups: up to `limit` groups; an IPv4 may fill the last two.
  // Returns the number of groups read and whether the last was an IPv4.
  std::pair<int, bool> ReadGroups(uint16_t* groups, int limit) {
    for (int i = 0; i < limit; ++i) {
      const size_t before = pos_;
      if (i < limit - 1) {
        if (i == 0 || ReadChar(':')) {
          if (const auto v4 = ReadIpv4()) {
            groups[i] = static_cast<uint16_t>(((*v4)[0] << 8) | (*v4)[1]);
            groups[i + 1] = static_cast<uint16_t>(((*v4)[2] << 8) | (*v4)[3]);
            return {i + 2, true};
          }
        }
        pos_ = before;
      }
      if (i == 0 || ReadChar(':')) {
        if (const auto group = ReadNumber(16, 4, true, 0xFFFF)) {
          groups[i] = static_cast<uint16_t>(*group);
          continue;
        }
      }
      pos_ = before;
      return {i, false};
    }
    return {limit, false};
  }

  std::optional<std::array<uint8_t, 16>> ReadIpv6() {
    const size_t start = pos_;
    uint16_t head[8] = {};
    const auto [head_size, head_ipv4] = ReadGroups(head, 8);
    if (head_size < 8) {
      // An IPv4 part may not precede "::", and "::" is mandatory when fewer
      // than 8 groups were read. "::" stands for at least one zero group.
      if (head_ipv4 || !ReadChar(':') || !ReadChar(':')) {
        pos_ = start;
        return std::nullopt;
      }
      uint16_t tail[7] = {};
      const int limit = 8 - (head_size + 1);
      const int tail_size = ReadGroups(tail, limit).first;
      for (int i = 0; i < tail_size; ++i) head[8 - tail_size + i] = tail[i];
    }
    std::array<uint8_t, 16> bytes{};
    for (int i = 0; i < 8; ++i) {
      bytes[2 * i] = static_cast<uint8_t>(head[i] >> 8);
      bytes[2 * i + 1] = static_cast<uint8_t>(head[i] & 0xFF);
    }
    return bytes;
  }

 private:
  static int DigitValue(char c, int radix) {
    if (c >= '0' && c <= '9') return c - '0';
    if (radix == 16) {
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    }
    return -1;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

std::string Quoted(std::string_view text) {
  std::string out = "'";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7F) {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

Status BadAddress(std::string_view text, std::string_view why) {
  std::string message = "address ";
  message += Quoted(text);
  message += ": ";
  message += why;
  return Status(StatusCode::kBadAddress, std::move(message));
}

std::string FormatIpv4(const uint8_t* octets) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "%u.%u.%u.%u", octets[0], octets[1],
                octets[2], octets[3]);
  return buffer;
}

bool IsAsciiCaseInsensitivePrefix(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    char c = text[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != prefix[i]) return false;
  }
  return true;
}

// Bytes that never belong in a server address: they would break the config
// line, the servers file or the `KEY,ADDR` output.
std::optional<std::string_view> ForbiddenByteReason(std::string_view text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte == 0x7F) return "contains whitespace or a control byte";
    if (c == ',') return "contains ','";
    if (c == '#') return "contains '#'";
  }
  return std::nullopt;
}

constexpr size_t kMaxUnixPathBytes = 107;  // Linux sizeof(sockaddr_un::sun_path) - 1

// nginx's port: ngx_atoi over the digits, then 1..65535.
bool IsNginxPort(std::string_view digits) {
  if (digits.empty()) return false;
  uint32_t value = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint32_t>(c - '0');
    if (value > 65535) return false;
  }
  return value >= 1;
}

// nginx's ngx_inet_addr: only digits and dots, exactly three dots, every
// octet's value 0..255. nginx takes an octet with any number of leading
// zeros, and an empty one as 0 ("10..1.2", even "..."); all hash as written.
// The address, or nothing. nginx's callers take 255.255.255.255 for a
// failure: it is ngx_inet_addr's INADDR_NONE.
std::optional<uint32_t> NginxInetAddr(std::string_view text) {
  int dots = 0;
  uint32_t octet = 0, address = 0;
  for (const char c : text) {
    if (c == '.') {
      ++dots;
      address = address << 8 | octet;
      octet = 0;
    } else if (c < '0' || c > '9' || (octet = octet * 10 + static_cast<uint32_t>(c - '0')) > 255) {
      return std::nullopt;
    }
  }
  if (dots != 3) return std::nullopt;
  return address << 8 | octet;
}

// glibc's inet_aton over digits and dots: the numeric parse of getaddrinfo,
// which nginx resolves every other host with. 1 to 4 numbers, each octal
// after a leading '0' and decimal otherwise; all but the last at most 255,
// the last filling the bytes left ("127.1" = 127.0.0.1, "2130706433" too).
bool IsInetAtonNumber(std::string_view text) {
  int part = 0;        // dots seen
  uint64_t value = 0;  // of the current part
  size_t digits = 0;   // of the current part
  bool octal = false;  // the current part started with '0'
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : '.';
    if (c == '.') {
      const bool last = i == text.size();
      if (digits == 0 || part > 3 || value > (last ? 0xFFFFFFFFu >> (8 * part) : 0xFF)) {
        return false;
      }
      ++part;
      value = 0;
      digits = 0;
      continue;
    }
    if (c < '0' || c > '9') return false;
    if (digits == 0) octal = c == '0';
    if (octal && c > '7') return false;
    value = value * (octal ? 8 : 10) + static_cast<uint64_t>(c - '0');
    ++digits;
    if (value > 0xFFFFFFFFu) return false;
  }
  return true;
}

bool IsHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// nginx's ngx_inet6_addr, which checks the text inside [...]. It departs from
// RFC 4291 (and Rust) in three ways, all kept since nginx refuses or takes
// the server line accordingly: one leading ':' is skipped (":1::2" is
// taken); a "::" that ends the text must stand for two or more groups
// ("1:2:3:4:5:6:7::" is refused); an embedded IPv4 is read by ngx_inet_addr
// ("::01.2.3.4" is taken), and refused if it is 255.255.255.255.
bool IsNginxIpv6(std::string_view text) {
  if (text.empty()) return false;
  int groups_left = 8;
  int digits = 0;           // hex digits of the group being read
  bool zero_run = false;    // "::" seen
  bool colon_seen = false;  // a ':' after the skipped leading one
  size_t group_start = 0;
  for (size_t i = text[0] == ':' ? 1 : 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ':') {
      if (digits > 0) {
        if (--groups_left == 0) return false;  // a ':' after the 8th group
        digits = 0;
      } else if (zero_run) {
        return false;  // a second "::"
      } else {
        zero_run = true;
      }
      colon_seen = true;
      group_start = i + 1;
      continue;
    }
    if (c == '.' && digits > 0) {
      // The rest is a dotted quad filling two groups.
      const std::optional<uint32_t> quad = NginxInetAddr(text.substr(group_start));
      if (groups_left < 2 || !colon_seen || !quad || *quad == 0xFFFFFFFFu) return false;
      groups_left -= 2;
      return groups_left == 0 ? !zero_run : zero_run;
    }
    if (++digits > 4 || !IsHexDigit(c)) return false;
  }
  if (digits == 0 && !zero_run) return false;
  --groups_left;  // the last group (0 when the text ends with ':')
  return groups_left == 0 ? !zero_run : zero_run;
}

bool IsNameByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

// ngx_http_upstream_init_chash: "unix:" prefix, else scan from the end over
// decimal digits; a ':' reached that way splits HOST and PORT, anything else
// leaves the whole text as HOST with an empty PORT.
void NginxSplit(std::string_view text, std::string& host, std::string& port) {
  if (IsAsciiCaseInsensitivePrefix(text, "unix:")) {
    host.assign(text.substr(5));
    port.clear();
    return;
  }
  for (size_t j = 0; j < text.size(); ++j) {
    const char c = text[text.size() - j - 1];
    if (c == ':') {
      host.assign(text.substr(0, text.size() - j - 1));
      port.assign(text.substr(text.size() - j));
      return;
    }
    if (c < '0' || c > '9') break;
  }
  host.assign(text);
  port.clear();
}

Status ValidateNginxText(std::string_view text) {
  if (text.empty()) return BadAddress(text, "empty");
  if (const auto why = ForbiddenByteReason(text)) return BadAddress(text, *why);
  if (IsAsciiCaseInsensitivePrefix(text, "unix:")) {
    if (text.size() == 5) return BadAddress(text, "unix: needs a socket path");
    // nginx: "too long path in the unix domain socket" past sun_path (108
    // bytes on Linux, the terminating NUL included).
    if (text.size() - 5 > kMaxUnixPathBytes) {
      return BadAddress(text, "unix socket path longer than 107 bytes (sun_path)");
    }
    return Status();
  }
  std::string_view host = text;
  std::string_view port;
  bool has_port = false;
  if (text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return BadAddress(text, "'[' without ']'");
    const std::string_view inside = text.substr(1, close - 1);
    if (inside.find('%') != std::string_view::npos)
      return BadAddress(text, "IPv6 scope ids are not supported");
    if (!IsNginxIpv6(inside)) return BadAddress(text, "not an IPv6 address inside [...]");
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return BadAddress(text, "expected ':PORT' after ']'");
      has_port = true;
      port = rest.substr(1);
    }
  } else {
    const size_t colon = text.rfind(':');
    if (colon != std::string_view::npos) {
      host = text.substr(0, colon);
      port = text.substr(colon + 1);
      has_port = true;
      if (host.find(':') != std::string_view::npos)
        return BadAddress(text, "IPv6 addresses need brackets: [ADDR]:PORT");
    }
    if (host.empty()) return BadAddress(text, "empty host");
    bool all_digits_and_dots = true;
    for (const char c : host) {
      if (!IsNameByte(c)) return BadAddress(text, "host has a byte outside [A-Za-z0-9._-]");
      if (c != '.' && (c < '0' || c > '9')) all_digits_and_dots = false;
    }
    // A numeric host that is not ngx_inet_addr's goes to getaddrinfo, which
    // takes what inet_aton takes ("127.1"); no resolver takes the rest.
    if (all_digits_and_dots && !NginxInetAddr(host) && !IsInetAtonNumber(host)) {
      return BadAddress(text, "not a valid IPv4 address");
    }
  }
  if (has_port && !IsNginxPort(port)) return BadAddress(text, "port must be 1..65535");
  return Status();
}

}  // namespace

std::string_view FlavorName(Flavor flavor) noexcept {
  const internal::FlavorRow* row = internal::FindFlavor(flavor);
  return row == nullptr ? "unknown" : row->name;
}

Result<Flavor> ParseFlavor(std::string_view name) {
  for (const internal::FlavorRow& row : internal::kFlavors) {
    if (name == row.name) return row.flavor;
  }
  return internal::CatchOutOfMemory("reporting an unknown flavor", [&]() -> Result<Flavor> {
    return Status(StatusCode::kBadArgument, "unknown flavor '" + std::string(name) +
                                                "' (expected " +
                                                internal::FlavorNameList() + ")");
  });
}

std::string NodeAddress::HashedBytes() const {
  if (opaque_id) return host;
  std::string bytes;
  bytes.reserve(host.size() + 1 + port.size());
  bytes += host;
  bytes += '\0';
  bytes += port;
  return bytes;
}

std::string FormatIpv6(const std::array<uint8_t, 16>& bytes) {
  uint16_t groups[8];
  for (int i = 0; i < 8; ++i) {
    groups[i] = static_cast<uint16_t>((bytes[2 * i] << 8) | bytes[2 * i + 1]);
  }
  const bool ipv4_mapped = groups[0] == 0 && groups[1] == 0 && groups[2] == 0 &&
                           groups[3] == 0 && groups[4] == 0 && groups[5] == 0xFFFF;
  if (ipv4_mapped) return "::ffff:" + FormatIpv4(&bytes[12]);

  int longest_start = 0, longest_len = 0, current_start = 0, current_len = 0;
  for (int i = 0; i < 8; ++i) {
    if (groups[i] == 0) {
      if (current_len == 0) current_start = i;
      ++current_len;
      if (current_len > longest_len) {
        longest_start = current_start;
        longest_len = current_len;
      }
    } else {
      current_len = 0;
    }
  }
  std::string out;
  char group_text[8];
  auto append_groups = [&](int begin, int end) {
    for (int i = begin; i < end; ++i) {
      if (i > begin) out += ':';
      std::snprintf(group_text, sizeof group_text, "%x", groups[i]);
      out += group_text;
    }
  };
  if (longest_len > 1) {
    append_groups(0, longest_start);
    out += "::";
    append_groups(longest_start + longest_len, 8);
  } else {
    append_groups(0, 8);
  }
  return out;
}

static Result<NodeAddress> ParseNginxAddressOrThrow(std::string_view text) {
  if (Status status = ValidateNginxText(text); !status.ok()) return status;
  NodeAddress address;
  address.written.assign(text);
  NginxSplit(text, address.host, address.port);
  return address;
}

static Result<NodeAddress> ParsePingoraAddressOrThrow(std::string_view text) {
  if (text.empty()) return BadAddress(text, "empty");
  NodeAddress address;
  address.written.assign(text);
  TextCursor cursor(text);
  if (const auto v4 = cursor.ReadIpv4()) {
    address.order.family = 4;
    for (int i = 0; i < 4; ++i) address.order.bytes[i] = (*v4)[i];
    address.host = FormatIpv4(v4->data());
  } else if (cursor.ReadChar('[')) {
    const auto v6 = cursor.ReadIpv6();
    if (!v6) {
      return BadAddress(text, "not an IPv6 address inside [...]");
    }
    if (cursor.ReadChar('%')) {
      return BadAddress(text,
                        "IPv6 scope ids are not supported (pingora hashes the "
                        "address without them)");
    }
    if (!cursor.ReadChar(']')) return BadAddress(text, "not an IPv6 address inside [...]");
    address.order.family = 6;
    address.order.bytes = *v6;
    address.host = FormatIpv6(*v6);
  } else {
    return BadAddress(text,
                      "pingora modes need an IP socket address: A.B.C.D:PORT or "
                      "[IPV6]:PORT");
  }
  if (!cursor.ReadChar(':')) return BadAddress(text, "missing ':PORT'");
  const auto port = cursor.ReadNumber(10, 0, /*allow_zero_prefix=*/true, 65535);
  if (!port) return BadAddress(text, "port must be 0..65535");
  if (!cursor.AtEnd()) return BadAddress(text, "unexpected text after the port");
  address.order.port = static_cast<uint16_t>(*port);
  address.port = std::to_string(*port);
  return address;
}

// The public parsers report allocation failure (the texts they copy, their
// error messages) as kOutOfMemory.
Result<NodeAddress> ParseNginxAddress(std::string_view text) {
  return internal::CatchOutOfMemory("parsing an address",
                                    [&] { return ParseNginxAddressOrThrow(text); });
}

Result<NodeAddress> ParsePingoraAddress(std::string_view text) {
  return internal::CatchOutOfMemory("parsing an address",
                                    [&] { return ParsePingoraAddressOrThrow(text); });
}

Result<NodeAddress> ParseRestyId(std::string_view id) {
  if (id.empty()) return Status(StatusCode::kBadAddress, "empty id (an id is 1..4096 bytes)");
  if (id.size() > 4096) {
    return Status(StatusCode::kBadAddress,
                  "id of " + std::to_string(id.size()) + " bytes (an id is 1..4096 bytes)");
  }
  return internal::CatchOutOfMemory("storing an id", [&]() -> Result<NodeAddress> {
    NodeAddress out;
    out.written.assign(id);
    out.host.assign(id);
    out.opaque_id = true;
    return out;
  });
}

Result<NodeAddress> ParseNodeAddress(Flavor flavor, std::string_view text) {
  switch (flavor) {
    case Flavor::kResty:
      return ParseRestyId(text);
    case Flavor::kNginx:
      return ParseNginxAddress(text);
    case Flavor::kPingoraV1:
    case Flavor::kPingoraV2:
      return ParsePingoraAddress(text);
    case Flavor::kHaproxy:
    case Flavor::kKetamaMd5:
    case Flavor::kVarnishShard:
    case Flavor::kEnvoyRing:
    case Flavor::kEnvoyMaglev:
      return internal::CatchOutOfMemory("reading an address", [&] {
        RingOptions options;
        options.flavor = flavor;
        return internal::ParseProgramNode(options, text, 1, NodeOptions{});
      });
  }
  return Status(StatusCode::kBadArgument, "unknown flavor");
}

}  // namespace chash
