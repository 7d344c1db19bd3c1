#pragma once
// The other programs' ring options, as data: one row an option of a flavor,
// the only place their names, spellings, values, ranges and defaults are
// written. The C API serves it to the bindings (chash_flavor_option_name,
// chash_flavor_option_values, chash_ring_options_set), and every surface
// spells an option from the row's name:
//
//   nginx `chash`     NAME=VALUE        (a switch: the bare NAME)
//   chash.resty       NAME = VALUE      (a switch: a boolean)
//   the chash tool    --NAME-WITH-DASHES VALUE (a switch: the bare flag)
//   C                 chash_ring_options_set(&o, flavor, "NAME", "VALUE")
//
// An option also answers to its alias (Envoy's field name where chash's is
// shorter). The value lands in a field of chash_ring_options (0 there is
// the program's default), so the C struct is what every binding fills and
// libchash's ValidateRingOptions then checks as a whole (a prime table
// size, a minimum ring size over the maximum). Not part of the public API.
//
// The per-node fields (HAProxy's server id, twemproxy's server name) are
// not ring options: FlavorRow says which a flavor takes.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "chash/chash_c.h"
#include "chash/flavors.h"
#include "chash/status.h"

namespace chash::internal {

enum class OptionKind : uint8_t {
  kWord,      // one of `words`; the field holds its index
  kCount,     // an integer min..max
  kSwitch,    // on or off (HAProxy's `avalanche`); the field: 1 on, 2 off
  kTwoBytes,  // exactly two bytes, neither NUL (twemproxy's hash_tag)
};

struct FlavorOption {
  Flavor flavor;
  std::string_view name;   // snake_case
  std::string_view alias;  // a second spelling, or empty
  OptionKind kind;
  std::span<const std::string_view> words;  // kWord
  uint64_t min = 0;                         // kCount
  uint64_t max = 0;                         // kCount
  size_t offset = 0;                        // of the chash_ring_options field
  size_t size = 0;                          // of that field: 1 (x2), 4 or 8
  std::string_view default_text;            // the value the field's 0 means
  std::string_view what;                    // one phrase: what it chooses
};

// Every row, flavor by flavor in flavors.h's order.
std::span<const FlavorOption> FlavorOptions() noexcept;

// The option `name` (or its alias) of `flavor`; nullptr if it has none.
const FlavorOption* FindFlavorOption(Flavor flavor, std::string_view name) noexcept;

// What a value of the option may be: "one of sdbm, djb2, wt6, crc32",
// "an integer 1..65535", "on or off", "two bytes". Throws std::bad_alloc.
std::string FlavorOptionValues(const FlavorOption& option);

// Sets option `name` of `flavor` from its text in `options`. kBadArgument,
// naming the option and what it takes, for a name that is no option of the
// flavor (the flavors whose it is, if any), or a value it does not take.
// Naming HAProxy's hash_function turns avalanche off unless avalanche is
// set (HAProxy's `hash-type consistent FUNCTION [avalanche]`), whatever the
// order the options are set in. Allocates only an error's message.
Status SetFlavorOption(chash_ring_options& options, Flavor flavor, std::string_view name,
                       std::string_view value) noexcept;

// The program options of `options` as the C struct (each field as the
// C API documents it: 0 where the program's default is meant; a HAProxy
// avalanche that is on is 0, so that naming a hash_function then turns it
// off as HAProxy's grammar does). point_multiple and the others stay 0.
chash_ring_options RingOptionsToC(const RingOptions& options) noexcept;

// Sets `options` to flavor `flavor` with the C struct's program options,
// its other fields (point multiple, max points, threads) kept; a value past
// an enumeration made one ValidateRingOptions refuses. kBadArgument (and
// `options` unchanged) for a nonzero reserved byte or a haproxy_avalanche
// over 2. The set is not validated: the caller calls ValidateRingOptions.
// (A Status, not a Result<RingOptions>: that template's statics would be
// exported from libchash.so.)
Status RingOptionsFromC(Flavor flavor, const chash_ring_options& in, RingOptions& options);

// "variant, key_hash, default_port, hash_tag"; "" for a flavor with none.
// Throws std::bad_alloc.
std::string FlavorOptionNames(Flavor flavor);

}  // namespace chash::internal
