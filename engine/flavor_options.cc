#include "flavor_options.h"

#include <charconv>
#include <cstring>
#include <limits>

#include "flavors.h"
#include "util/out_of_memory.h"

namespace chash::internal {
namespace {

// Each word list is in the order of its C values (chash_c.h's CHASH_*).
constexpr std::string_view kHaproxyHashes[] = {"sdbm", "djb2", "wt6", "crc32"};
constexpr std::string_view kHaproxyServerKeys[] = {"id", "id-unfixed-30"};
constexpr std::string_view kKetamaVariants[] = {
    "libmemcached-weighted", "libmemcached-unweighted", "twemproxy",
    "libketama",             "libmemcached-spy",        "libmemcached-spy-weighted"};
// twemproxy's `hash:` names, and libmemcached's murmur3.
constexpr std::string_view kKetamaKeyHashes[] = {
    "default", "md5",  "one_at_a_time", "fnv1a_64", "fnv1_64", "fnv1_32", "fnv1a_32",
    "crc32a",  "crc32", "crc16",        "hsieh",    "murmur",  "jenkins", "murmur3"};
// Envoy's HashFunction enum names, lower case.
constexpr std::string_view kEnvoyHashes[] = {"xx_hash", "murmur_hash_2"};

// Envoy's bound on both ring sizes and on a Maglev table.
constexpr uint64_t kEnvoyMaxRingSize = 8388608;
constexpr uint64_t kMaglevMaxTableSize = 5000011;

#define CHASH_FIELD(field) offsetof(chash_ring_options, field), sizeof(chash_ring_options::field)

constexpr FlavorOption kRows[] = {
    {Flavor::kHaproxy, "hash_function", "", OptionKind::kWord, kHaproxyHashes, 0, 0,
     CHASH_FIELD(haproxy_hash), "sdbm", "the key hash (`hash-type consistent FUNCTION`)"},
    {Flavor::kHaproxy, "avalanche", "", OptionKind::kSwitch, {}, 0, 0,
     CHASH_FIELD(haproxy_avalanche), "on",
     "the avalanche modifier; naming a hash_function turns it off unless given"},
    {Flavor::kHaproxy, "server_key", "", OptionKind::kWord, kHaproxyServerKeys, 0, 0,
     CHASH_FIELD(haproxy_server_key), "id",
     "the point key: id x 4096 + j (2.x, 3.3 on), or 3.0-3.2's unfixed one"},
    {Flavor::kKetamaMd5, "variant", "", OptionKind::kWord, kKetamaVariants, 0, 0,
     CHASH_FIELD(ketama_variant), "libmemcached-weighted", "which program's continuum"},
    {Flavor::kKetamaMd5, "key_hash", "", OptionKind::kWord, kKetamaKeyHashes, 0, 0,
     CHASH_FIELD(ketama_key_hash), "default",
     "the key hash, twemproxy's `hash:` (`default`: the variant's own)"},
    {Flavor::kKetamaMd5, "default_port", "", OptionKind::kCount, {}, 1, 65535,
     CHASH_FIELD(ketama_default_port), "11211",
     "the port of a server written without one, left out of its label"},
    {Flavor::kKetamaMd5, "hash_tag", "", OptionKind::kTwoBytes, {}, 0, 0,
     offsetof(chash_ring_options, ketama_hash_tag), 1, "none",
     "twemproxy's hash_tag: only the bytes between its two hash a key"},
    {Flavor::kVarnishShard, "replicas", "", OptionKind::kCount, {}, 1,
     std::numeric_limits<uint32_t>::max(), CHASH_FIELD(varnish_replicas), "67",
     "points of a backend of weight 1"},
    {Flavor::kEnvoyRing, "min_ring_size", "minimum_ring_size", OptionKind::kCount, {}, 1,
     kEnvoyMaxRingSize, CHASH_FIELD(envoy_minimum_ring_size), "1024",
     "ring_hash_lb_config.minimum_ring_size"},
    {Flavor::kEnvoyRing, "max_ring_size", "maximum_ring_size", OptionKind::kCount, {}, 1,
     kEnvoyMaxRingSize, CHASH_FIELD(envoy_maximum_ring_size), "8388608",
     "ring_hash_lb_config.maximum_ring_size"},
    {Flavor::kEnvoyRing, "hash_function", "", OptionKind::kWord, kEnvoyHashes, 0, 0,
     CHASH_FIELD(envoy_hash), "xx_hash", "ring_hash_lb_config.hash_function: the point hash"},
    {Flavor::kEnvoyMaglev, "table_size", "", OptionKind::kCount, {}, 2, kMaglevMaxTableSize,
     CHASH_FIELD(maglev_table_size), "65537", "maglev_lb_config.table_size: a prime"},
};

#undef CHASH_FIELD

// The rows are grouped by flavor in the table's order, so that a flavor's
// options read as one list.
constexpr bool RowsFollowTheFlavorTable() {
  size_t flavor_index = 0;
  for (const FlavorOption& row : kRows) {
    while (flavor_index < std::size(kFlavors) && kFlavors[flavor_index].flavor != row.flavor) {
      ++flavor_index;
    }
    if (flavor_index == std::size(kFlavors)) return false;
    // IsProgramFlavor's rule, without its pointer comparison (which g++ 12
    // refuses in a constant expression under -fsanitize=address).
    if (static_cast<uint8_t>(row.flavor) <= static_cast<uint8_t>(Flavor::kResty)) return false;
  }
  return true;
}
static_assert(RowsFollowTheFlavorTable());

void Store(chash_ring_options& options, const FlavorOption& row, uint64_t value) noexcept {
  unsigned char* field = reinterpret_cast<unsigned char*>(&options) + row.offset;
  if (row.size == sizeof(uint64_t)) {
    std::memcpy(field, &value, sizeof(uint64_t));
  } else {
    const uint32_t narrow = static_cast<uint32_t>(value);
    std::memcpy(field, &narrow, sizeof(uint32_t));
  }
}

Status Bad(std::string message) { return Status(StatusCode::kBadArgument, std::move(message)); }

Status SetOrThrow(chash_ring_options& options, Flavor flavor, std::string_view name,
                  std::string_view value) {
  const FlavorOption* row = FindFlavorOption(flavor, name);
  if (row == nullptr) {
    std::string owners;
    for (const FlavorOption& other : FlavorOptions()) {
      if (other.name != name && other.alias != name) continue;
      if (owners.find(FlavorName(other.flavor)) != std::string::npos) continue;
      if (!owners.empty()) owners += " and ";
      owners += FlavorName(other.flavor);
    }
    std::string message = "'";
    message += name;
    message += owners.empty() ? "' is not an option of flavor " : "' is an option of ";
    if (!owners.empty()) {
      message += owners;
      message += ", not of flavor ";
    }
    message += FlavorName(flavor);
    const std::string own = FlavorOptionNames(flavor);
    message += own.empty() ? std::string(", which takes none") : " (its options: " + own + ")";
    return Bad(std::move(message));
  }
  const auto refuse = [&] {
    std::string message(FlavorName(flavor));
    message += " option ";
    message += name;  // as the caller spelled it (the name or its alias)
    message += " must be ";
    message += FlavorOptionValues(*row);
    message += ", got '";
    message += value;
    message += "'";
    return Bad(std::move(message));
  };
  switch (row->kind) {
    case OptionKind::kWord:
      for (size_t i = 0; i < row->words.size(); ++i) {
        if (row->words[i] == value) {
          Store(options, *row, i);
          if (flavor == Flavor::kHaproxy && row->name == "hash_function" &&
              options.haproxy_avalanche == 0) {
            options.haproxy_avalanche = 2;
          }
          return Status();
        }
      }
      return refuse();
    case OptionKind::kCount: {
      uint64_t number = 0;
      const char* end = value.data() + value.size();
      const auto [last, error] = std::from_chars(value.data(), end, number);
      if (value.empty() || error != std::errc() || last != end || number < row->min ||
          number > row->max) {
        return refuse();
      }
      Store(options, *row, number);
      return Status();
    }
    case OptionKind::kSwitch:
      if (value != "on" && value != "off") return refuse();
      Store(options, *row, value == "on" ? 1 : 2);
      return Status();
    case OptionKind::kTwoBytes:
      if (value.size() != 2 || value[0] == '\0' || value[1] == '\0') return refuse();
      std::memcpy(reinterpret_cast<unsigned char*>(&options) + row->offset, value.data(), 2);
      return Status();
  }
  return refuse();
}

}  // namespace

std::span<const FlavorOption> FlavorOptions() noexcept { return kRows; }

const FlavorOption* FindFlavorOption(Flavor flavor, std::string_view name) noexcept {
  for (const FlavorOption& row : kRows) {
    if (row.flavor == flavor && !name.empty() && (row.name == name || row.alias == name)) {
      return &row;
    }
  }
  return nullptr;
}

std::string FlavorOptionValues(const FlavorOption& option) {
  switch (option.kind) {
    case OptionKind::kWord: {
      std::string words = "one of ";
      for (size_t i = 0; i < option.words.size(); ++i) {
        if (i > 0) words += ", ";
        words += option.words[i];
      }
      return words;
    }
    case OptionKind::kCount:
      return "an integer " + std::to_string(option.min) + ".." + std::to_string(option.max);
    case OptionKind::kSwitch:
      return "on or off";
    case OptionKind::kTwoBytes:
      return "two bytes, neither NUL";
  }
  return "";
}

Status SetFlavorOption(chash_ring_options& options, Flavor flavor, std::string_view name,
                       std::string_view value) noexcept {
  if (FindFlavor(flavor) == nullptr) {
    return Status(StatusCode::kBadArgument, "unknown flavor");
  }
  return CatchOutOfMemory("an option's message",
                          [&] { return SetOrThrow(options, flavor, name, value); });
}

namespace {

// A value past an enumeration is kept as it is (uint8_t) only when it fits,
// else made 0xFF, so that ValidateRingOptions refuses it instead of a
// conversion wrapping it onto a valid value.
uint8_t EnumByte(uint32_t value) { return static_cast<uint8_t>(value > 0xFF ? 0xFF : value); }

}  // namespace

chash_ring_options RingOptionsToC(const RingOptions& options) noexcept {
  chash_ring_options c;
  std::memset(&c, 0, sizeof c);
  c.size = sizeof c;
  c.haproxy_hash = static_cast<uint32_t>(options.haproxy.hash_function);
  c.haproxy_avalanche = options.haproxy.avalanche ? 0 : 2;
  c.haproxy_server_key = static_cast<uint32_t>(options.haproxy.server_key);
  c.ketama_variant = static_cast<uint32_t>(options.ketama.variant);
  c.ketama_key_hash = static_cast<uint32_t>(options.ketama.key_hash);
  c.ketama_default_port = options.ketama.default_port;
  c.ketama_hash_tag[0] = static_cast<uint8_t>(options.ketama.hash_tag[0]);
  c.ketama_hash_tag[1] = static_cast<uint8_t>(options.ketama.hash_tag[1]);
  c.varnish_replicas = options.varnish.replicas;
  c.envoy_hash = static_cast<uint32_t>(options.envoy_ring.hash_function);
  c.envoy_minimum_ring_size = options.envoy_ring.minimum_ring_size;
  c.envoy_maximum_ring_size = options.envoy_ring.maximum_ring_size;
  c.maglev_table_size = options.maglev.table_size;
  return c;
}

Status RingOptionsFromC(Flavor flavor, const chash_ring_options& in, RingOptions& out) {
  if (in.reserved0[0] != 0 || in.reserved0[1] != 0) {
    return Status(StatusCode::kBadArgument, "reserved0 is not zero");
  }
  if (in.haproxy_avalanche > 2) {
    return Status(StatusCode::kBadArgument, "haproxy_avalanche " +
                                                std::to_string(in.haproxy_avalanche) +
                                                " (0 default, 1 on, 2 off)");
  }
  RingOptions options = out;
  options.flavor = flavor;
  options.haproxy = {};
  options.ketama = {};
  options.varnish = {};
  options.envoy_ring = {};
  options.maglev = {};
  options.haproxy.hash_function = static_cast<HaproxyHash>(EnumByte(in.haproxy_hash));
  options.haproxy.avalanche = in.haproxy_avalanche != 2;
  options.haproxy.server_key = static_cast<HaproxyServerKey>(EnumByte(in.haproxy_server_key));
  options.ketama.variant = static_cast<KetamaVariant>(EnumByte(in.ketama_variant));
  options.ketama.key_hash = static_cast<KetamaKeyHash>(EnumByte(in.ketama_key_hash));
  if (in.ketama_default_port != 0) options.ketama.default_port = in.ketama_default_port;
  options.ketama.hash_tag = {static_cast<char>(in.ketama_hash_tag[0]),
                             static_cast<char>(in.ketama_hash_tag[1])};
  if (in.varnish_replicas != 0) options.varnish.replicas = in.varnish_replicas;
  options.envoy_ring.hash_function = static_cast<EnvoyHash>(EnumByte(in.envoy_hash));
  if (in.envoy_minimum_ring_size != 0) {
    options.envoy_ring.minimum_ring_size = in.envoy_minimum_ring_size;
  }
  if (in.envoy_maximum_ring_size != 0) {
    options.envoy_ring.maximum_ring_size = in.envoy_maximum_ring_size;
  }
  if (in.maglev_table_size != 0) options.maglev.table_size = in.maglev_table_size;
  out = options;
  return Status();
}

std::string FlavorOptionNames(Flavor flavor) {
  std::string names;
  for (const FlavorOption& row : kRows) {
    if (row.flavor != flavor) continue;
    if (!names.empty()) names += ", ";
    names += row.name;
  }
  return names;
}

}  // namespace chash::internal
