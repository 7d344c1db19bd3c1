// Spellings of IPv6 addresses for the fuzzers' generators. The parsing model
// the fuzzers check chash against is the reference's own parser
// (tests/reference/reference_address.h).
#ifndef CHASH_FUZZ_ADDRESS_MODEL_H_
#define CHASH_FUZZ_ADDRESS_MODEL_H_

#include <array>
#include <cstdint>
#include <string>

#include "reference/reference_address.h"

namespace chash::fuzz {

using reference::Rfc5952;

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
