#include "address/envoy_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <string>

namespace chash::internal {
namespace {

bool AllDigits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(),
                                      [](char c) { return c >= '0' && c <= '9'; });
}

Status Malformed(std::string_view ip, std::string_view why) {
  return Status(StatusCode::kBadAddress, "malformed IP address: '" + std::string(ip) +
                                             "' (" + std::string(why) + ")");
}

}  // namespace

Result<std::string> EnvoyAddressString(std::string_view ip, uint32_t port) {
  const std::string text(ip);
  if (text.find('\0') != std::string::npos) return Malformed(ip, "a NUL byte");
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    char out[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &v4, out, sizeof out);
    return std::string(out) + ":" + std::to_string(port);
  }
  // glibc's numeric getaddrinfo splits at the first '%' and reads the rest
  // as a scope: an interface name (if_nametoindex, the machine's), else a
  // number.
  const size_t percent = text.find('%');
  const std::string address = text.substr(0, percent);
  in6_addr v6{};
  if (inet_pton(AF_INET6, address.c_str(), &v6) != 1) {
    return Malformed(ip, "neither inet_pton's IPv4 nor its IPv6");
  }
  uint64_t scope = 0;
  if (percent != std::string::npos) {
    const std::string_view digits = std::string_view(text).substr(percent + 1);
    if (!AllDigits(digits) || digits.size() > 10) {
      return Malformed(ip, "the scope '" + std::string(digits) +
                               "' is not a number: an interface name's scope id is the "
                               "machine's, and chash reads numeric scope ids only");
    }
    scope = std::stoull(std::string(digits));
    if (scope > UINT32_MAX) return Malformed(ip, "the scope id is above 4294967295");
  }
  char out[INET6_ADDRSTRLEN];
  inet_ntop(AF_INET6, &v6, out, sizeof out);
  std::string printed = "[";
  printed += out;
  if (scope != 0) {
    printed += '%';
    printed += std::to_string(scope);
  }
  printed += "]:";
  printed += std::to_string(port);
  return printed;
}

std::optional<std::string> EnvoyAddressStringOf(std::string_view addr) {
  const size_t colon = addr.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view port = addr.substr(colon + 1);
  if (!AllDigits(port) || port.size() > 5 || std::stoul(std::string(port)) > 65535) {
    return std::nullopt;
  }
  std::string_view ip = addr.substr(0, colon);
  if (!ip.empty() && ip.front() == '[') {
    if (ip.size() < 2 || ip.back() != ']') return std::nullopt;
    ip = ip.substr(1, ip.size() - 2);
    if (ip.find(':') == std::string_view::npos) return std::nullopt;  // [IPv4] is not Envoy's
  } else if (ip.find(':') != std::string_view::npos) {
    return std::nullopt;  // IPv6 without brackets: its port cannot be told apart
  }
  Result<std::string> text =
      EnvoyAddressString(ip, static_cast<uint32_t>(std::stoul(std::string(port))));
  if (!text.ok()) return std::nullopt;
  return std::move(text).value();
}

}  // namespace chash::internal
