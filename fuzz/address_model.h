// An independent model of compat-spec.md §2: which server texts each peer
// accepts, and the exact HOST and PORT bytes it then hashes. The parser
// fuzzer compares chash's parsers (engine/address/address.cc) with it.
//
// Written from the peers' rules, not from chash's code, and in a different
// shape (split the text first, then check the pieces) so that a shared
// misreading is unlikely:
//   nginx    ngx_parse_url as `server ADDR;` calls it (no URI part), then
//            ngx_inet_addr for dotted quads and ngx_inet6_addr inside [...];
//            HOST/PORT by ngx_http_upstream_init_chash's split.
//   pingora  Rust's `SocketAddr::from_str`; HOST is the IP's Display (RFC 5952,
//            `::ffff:a.b.c.d` for IPv4-mapped), PORT the port in decimal.
// What chash refuses although a peer would take it (compat-spec and
// address.h): ',' '#' whitespace and control bytes; IPv6 scope ids; nginx
// hosts that only a resolver could decide (anything but a dotted quad or a
// [A-Za-z0-9._-] name that is not all digits and dots).
#ifndef CHASH_FUZZ_ADDRESS_MODEL_H_
#define CHASH_FUZZ_ADDRESS_MODEL_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "chash/address.h"

namespace chash::fuzz {

struct ModelAddress {
  bool accepted = false;
  std::string why;       // for a rejection: which rule
  std::string host;      // HOST_BYTES
  std::string port;      // PORT_BYTES
  SocketOrderKey order;  // pingora only (family 0 for nginx)
};

ModelAddress NginxModel(std::string_view text);
ModelAddress PingoraModel(std::string_view text);
ModelAddress FlavorModel(Flavor flavor, std::string_view text);

// RFC 5952 text as Rust's Ipv6Addr Display prints it.
std::string Rfc5952(const std::array<uint8_t, 16>& bytes);

// Other valid spellings of the same IPv6 address, for generators:
//   0 RFC 5952            1 all 8 groups          2 8 groups, 4 digits, upper
//   3 first zero run "::"  4 RFC 5952 upper case   5 6 groups + dotted quad
//   6 last zero run "::"   7 "::" + dotted quad (the mapped form if mapped)
// Forms 3 and 6 may compress a single zero group ("1:2:3:4:5:6:7::"), which
// Rust and RFC 4291 accept and nginx's ngx_inet6_addr does not.
inline constexpr int kIpv6TextForms = 8;
std::string Ipv6Text(const std::array<uint8_t, 16>& bytes, int form);

}  // namespace chash::fuzz

#endif  // CHASH_FUZZ_ADDRESS_MODEL_H_
