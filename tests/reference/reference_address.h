// The reference's own address parsing: which server texts each peer accepts,
// and the exact HOST and PORT bytes it then hashes (COMPATIBILITY.md §2). The
// reference ring builds from these; the parser fuzzer and the address golden
// test hold chash's parsers (engine/address/address.cc) against them.
//
// Written from the peers' rules and their recorded answers
// (tests/data/address/), not from chash's code, and in a different shape
// (split the text first, then check the pieces) so that a shared misreading
// is unlikely:
//   nginx    ngx_parse_url as `server ADDR;` calls it (no URI part), then
//            ngx_inet_addr for dotted quads and ngx_inet6_addr inside [...];
//            a numeric host ngx_inet_addr refuses goes to getaddrinfo, whose
//            numeric parse is glibc's inet_aton; HOST/PORT by
//            ngx_http_upstream_init_chash's split.
//   pingora  Rust's `SocketAddr::from_str`; HOST is the IP's Display (RFC 5952,
//            `::ffff:a.b.c.d` for IPv4-mapped), PORT the port in decimal.
// What chash refuses although a peer would take it (address.h): ',' '#'
// whitespace and control bytes; IPv6 scope ids; nginx host names outside
// [A-Za-z0-9._-], and numeric hosts no resolver would read.
#ifndef CHASH_ENGINE_REFERENCE_REFERENCE_ADDRESS_H_
#define CHASH_ENGINE_REFERENCE_REFERENCE_ADDRESS_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "chash/address.h"

namespace chash::reference {

struct ParsedAddress {
  bool accepted = false;
  std::string why;       // for a rejection: which rule
  std::string host;      // HOST_BYTES
  std::string port;      // PORT_BYTES
  SocketOrderKey order;  // pingora only (family 0 for nginx)
  bool whole_id = false;  // resty: HOST is the id, hashed alone

  // HOST + '\0' + PORT (resty: the id alone): the bytes whose CRC32 seeds
  // the point chain.
  std::string HashedBytes() const {
    if (whole_id) return host;
    std::string bytes = host;
    bytes.push_back('\0');
    bytes.append(port);
    return bytes;
  }
};

ParsedAddress ParseNginx(std::string_view text);
ParsedAddress ParsePingora(std::string_view text);
// resty.chash: `crc32(tostring(id))`, any id; chash takes 1..4096 bytes.
ParsedAddress ParseResty(std::string_view text);
ParsedAddress ParseAddress(Flavor flavor, std::string_view text);

// RFC 5952 text as Rust's Ipv6Addr Display prints it.
std::string Rfc5952(const std::array<uint8_t, 16>& bytes);

}  // namespace chash::reference

#endif  // CHASH_ENGINE_REFERENCE_REFERENCE_ADDRESS_H_
