// Node identities and the exact bytes each ring flavor hashes for them.
//
// A ring point chain starts from CRC32(HOST_BYTES + "\0" + PORT_BYTES). The
// three flavors disagree on what HOST and PORT are:
//   nginx       the server text as written, split by nginx's scan from the
//               end: "[::1]:7777" -> "[::1]" and "7777"; "127.0.0.2" ->
//               "127.0.0.2" and ""; "unix:/p" -> "/p" and "".
//   pingora-*   the socket address as Rust prints it: IPv6 per RFC 5952
//               without brackets ("::ffff:1.2.3.4", "2001:db8::abcd"), the
//               port in decimal.
//   resty       no address at all: the node id is opaque bytes and its chain
//               starts from CRC32(ID) alone (no "\0" PORT).
// These functions are the single source of those bytes: the engine, the
// reference ring, the fuzzers and the CLI all call them.
#ifndef CHASH_ADDRESS_H_
#define CHASH_ADDRESS_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "chash/flavors.h"
#include "chash/status.h"

// Public API: exported from libchash.so (built with hidden visibility).
#pragma GCC visibility push(default)
namespace chash {

// Rust `SocketAddr` order, the pingora v2 tie-break: every IPv4 address sorts
// before every IPv6 one; then the address bytes; then the port.
struct SocketOrderKey {
  uint8_t family = 0;              // 4 or 6; 0 for identities without one
  std::array<uint8_t, 16> bytes{};  // IPv4 in the first 4 bytes
  uint16_t port = 0;

  friend auto operator<=>(const SocketOrderKey&, const SocketOrderKey&) = default;
};

// One server as a flavor sees it.
struct NodeAddress {
  std::string written;  // the text as given (what the CLI prints back)
  std::string host;     // HOST_BYTES
  std::string port;     // PORT_BYTES (empty for nginx servers without a port)
  SocketOrderKey order;  // set for IP socket addresses, else family 0
  // resty: `host` is the whole id and HashedBytes() is the id alone. The
  // other flavors' nodes are opaque too, `host` holding what their points
  // are made from: varnish-shard the backend's name, envoy-ring and
  // envoy-maglev the host key, ketama-md5 the server's label (libmemcached:
  // host, or host:port unless the port is 11211; twemproxy: its name, else
  // the same; libketama: the text as written), haproxy the text as written
  // (its points come from NodeInfo::server_id; the text names the server).
  bool opaque_id = false;

  // HOST + '\0' + PORT (the id alone if opaque_id): the bytes whose CRC32
  // seeds this node's point chain.
  // May throw std::bad_alloc, and nothing else: it copies host and port (a
  // few hundred bytes at most) into a new string. Kept a plain value for the
  // tools, fuzzers and benchmarks that hash addresses they just parsed; the
  // library's own uses are inside calls that report kOutOfMemory. A caller
  // that must not throw feeds host, '\0' and port to Crc32Extend (crc32.h).
  std::string HashedBytes() const;
};

// nginx: accepts what an nginx `server` line accepts for a single address:
//   unix:PATH             (prefix case-insensitive, PATH 1..107 bytes: sun_path)
//   IPV4[:PORT]           dotted quad as ngx_inet_addr reads it (octets
//                         0..255, any leading zeros, an empty octet is 0),
//                         or digits and dots that glibc's inet_aton reads,
//                         as nginx's getaddrinfo does ("127.1", "2130706433",
//                         "0377.0.0.1": octal after a leading 0)
//   NAME[:PORT]           letters, digits, '-', '.', '_' (not all digits/dots)
//   [IPV6][:PORT]         what ngx_inet6_addr accepts inside the brackets:
//                         RFC 4291 text, except that one leading ':' is
//                         skipped, a trailing "::" must cover 2+ groups and
//                         an embedded IPv4 is read by ngx_inet_addr and must
//                         not be 255.255.255.255 (its INADDR_NONE)
// chash's tests hold this parser to what the real nginx 1.22.1 answered for
// ~10,000 recorded spellings.
// PORT is 1..65535 in decimal (leading zeros allowed, hashed as written).
// Rejects empty text, whitespace, control bytes, ',' and '#' with kBadAddress.
Result<NodeAddress> ParseNginxAddress(std::string_view text);

// pingora: accepts what Rust's `SocketAddr::from_str` accepts (recorded from
// Rust's standard library for chash's tests too):
//   A.B.C.D:PORT   (octets 0..255 without leading zeros)
//   [IPV6]:PORT    (1-4 hex digits a group, one "::", a trailing dotted quad)
// PORT is 0..65535. IPv6 scope ids ("%eth0") are refused: pingora hashes the
// IP without them, so two such nodes would collide.
Result<NodeAddress> ParsePingoraAddress(std::string_view text);

// resty: any id of 1..4,096 bytes (NUL and every other byte included: APISIX
// writes "host\0port"), taken as it is: resty.chash hashes tostring(id).
// kBadAddress for an empty id or a longer one.
Result<NodeAddress> ParseRestyId(std::string_view id);

// Dispatches on the flavor: nginx -> ParseNginxAddress, pingora-v1/v2 ->
// ParsePingoraAddress, resty -> ParseRestyId; for the other flavors, the
// address as their RingBuilder with default options reads it (ring.h,
// RingBuilder::Add); kBadArgument for a value that is no Flavor.
// Allocation: the parsers copy the text into the NodeAddress; if memory
// runs out they report kOutOfMemory.
Result<NodeAddress> ParseNodeAddress(Flavor flavor, std::string_view text);

// RFC 5952 text of a 16-byte IPv6 address exactly as Rust's Display prints it:
// lower-case hex, the first longest run of >= 2 zero groups as "::",
// IPv4-mapped addresses as "::ffff:a.b.c.d".
// May throw std::bad_alloc, and nothing else (texts over 15 bytes are
// allocated): a formatting helper for tools and fuzzers, kept a plain value
// like HashedBytes. ParsePingoraAddress, which uses it, reports kOutOfMemory.
std::string FormatIpv6(const std::array<uint8_t, 16>& bytes);

}  // namespace chash
#pragma GCC visibility pop

#endif  // CHASH_ADDRESS_H_
