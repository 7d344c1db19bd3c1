// An Envoy host's address as Envoy reads it from a socket_address and
// prints it (Address::Instance::asString): the text Envoy's ring and
// Maglev table hash for a host without hash_key or hostname. The builder
// (RingBuilder::Add of an Envoy ring) and the chash tool's --envoy-cluster
// reader both use it, so one host is one key whichever way it is given.
// Not part of the public API.
#ifndef CHASH_ENGINE_ADDRESS_ENVOY_ADDRESS_H_
#define CHASH_ENGINE_ADDRESS_ENVOY_ADDRESS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "chash/status.h"

namespace chash::internal {

// `ip` and `port` as Envoy's Network::Utility::parseInternetAddressNoThrow
// reads them (source/common/network/utility.cc: inet_pton(AF_INET), else a
// numeric AF_INET6 getaddrinfo, which is inet_pton(AF_INET6) with an
// optional %SCOPE), printed as Envoy prints the address (address_impl.cc):
// "A.B.C.D:PORT", "[IPV6]:PORT" with the IPv6 text glibc's inet_ntop writes
// (lower case, the longest run of zero groups as "::", "%SCOPE" after it
// when the scope id is not 0). kBadAddress with Envoy's reason
// ("malformed IP address") where Envoy refuses the address. A scope given
// as an interface name is refused too: its id is the machine's (chash
// reads numeric scope ids only).
Result<std::string> EnvoyAddressString(std::string_view ip, uint32_t port);

// A node's address, "A.B.C.D:PORT" or "[IPV6]:PORT" (PORT 0..65535), as
// EnvoyAddressString prints it; nullopt when it is not such an address
// Envoy reads (a name or any other label: the ring hashes it as written).
// Throws std::bad_alloc.
std::optional<std::string> EnvoyAddressStringOf(std::string_view addr);

}  // namespace chash::internal

#endif  // CHASH_ENGINE_ADDRESS_ENVOY_ADDRESS_H_
