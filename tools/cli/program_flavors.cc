#include "program_flavors.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <utility>

#include "cli_common.h"
#include "envoy_address.h"
#include "flavors.h"  // engine/: every flavor as a row (chash_internal)
#include "text_lines.h"  // engine/

namespace chash::cli {
namespace {

template <typename Enum>
struct Named {
  std::string_view name;
  Enum value;
};

constexpr Named<HaproxyHash> kHaproxyHashes[] = {{"sdbm", HaproxyHash::kSdbm},
                                                 {"djb2", HaproxyHash::kDjb2},
                                                 {"wt6", HaproxyHash::kWt6},
                                                 {"crc32", HaproxyHash::kCrc32}};
constexpr Named<HaproxyServerKey> kServerKeys[] = {
    {"id", HaproxyServerKey::kId}, {"id-unfixed-30", HaproxyServerKey::kIdUnfixed30}};
constexpr Named<KetamaVariant> kVariants[] = {
    {"libmemcached-weighted", KetamaVariant::kLibmemcachedWeighted},
    {"libmemcached-unweighted", KetamaVariant::kLibmemcachedUnweighted},
    {"twemproxy", KetamaVariant::kTwemproxy},
    {"libketama", KetamaVariant::kLibketama},
    {"libmemcached-spy", KetamaVariant::kLibmemcachedSpy},
    {"libmemcached-spy-weighted", KetamaVariant::kLibmemcachedSpyWeighted}};
// twemproxy's `hash:` names, and libmemcached's murmur3.
constexpr Named<KetamaKeyHash> kKeyHashes[] = {
    {"default", KetamaKeyHash::kDefault},  {"md5", KetamaKeyHash::kMd5},
    {"one_at_a_time", KetamaKeyHash::kOneAtATime}, {"fnv1a_64", KetamaKeyHash::kFnv1a64},
    {"fnv1_64", KetamaKeyHash::kFnv1_64},  {"fnv1_32", KetamaKeyHash::kFnv1_32},
    {"fnv1a_32", KetamaKeyHash::kFnv1a32}, {"crc32a", KetamaKeyHash::kCrc32a},
    {"crc32", KetamaKeyHash::kCrc32},      {"crc16", KetamaKeyHash::kCrc16},
    {"hsieh", KetamaKeyHash::kHsieh},      {"murmur", KetamaKeyHash::kMurmur},
    {"jenkins", KetamaKeyHash::kJenkins},  {"murmur3", KetamaKeyHash::kMurmur3}};
// Envoy's HashFunction enum names, lower case.
constexpr Named<EnvoyHash> kEnvoyHashes[] = {{"xx_hash", EnvoyHash::kXxHash},
                                             {"murmur_hash_2", EnvoyHash::kMurmurHash2}};

template <typename Enum, size_t N>
Result<Enum> Lookup(const Named<Enum> (&table)[N], std::string_view option,
                    std::string_view text) {
  std::string names;
  for (const Named<Enum>& row : table) {
    if (row.name == text) return row.value;
    names += (names.empty() ? "" : ", ") + std::string(row.name);
  }
  return Status(StatusCode::kBadArgument, "--" + std::string(option) + " must be one of " +
                                              names + ", got '" + std::string(text) + "'");
}

// --option NAME, if given, into `field` (one of the table's names).
template <typename Enum, size_t N>
Status SetNamed(const Options& options, std::string_view option, const Named<Enum> (&table)[N],
                Enum& field) {
  if (const auto text = options.Get(option)) {
    Result<Enum> value = Lookup(table, option, *text);
    if (!value.ok()) return value.status();
    field = value.value();
  }
  return Status();
}

// --option N, if given, into `field` (kept otherwise), within [min, max].
template <typename Uint>
Status SetUint(const Options& options, std::string_view option, uint64_t min, uint64_t max,
               Uint& field) {
  Result<uint64_t> value = options.GetUint(option, field, min, max);
  if (!value.ok()) return value.status();
  field = static_cast<Uint>(value.value());
  return Status();
}

// Which flavors each program option belongs to.
struct OptionFlavors {
  std::string_view option;
  std::vector<Flavor> flavors;
};
const std::vector<OptionFlavors>& ProgramOptionFlavors() {
  static const std::vector<OptionFlavors> kTable = {
      {"hash-function", {Flavor::kHaproxy, Flavor::kEnvoyRing}},
      {"avalanche", {Flavor::kHaproxy}},
      {"server-key", {Flavor::kHaproxy}},
      {"variant", {Flavor::kKetamaMd5}},
      {"key-hash", {Flavor::kKetamaMd5}},
      {"default-port", {Flavor::kKetamaMd5}},
      {"hash-tag", {Flavor::kKetamaMd5}},
      {"replicas", {Flavor::kVarnishShard}},
      {"min-ring-size", {Flavor::kEnvoyRing}},
      {"max-ring-size", {Flavor::kEnvoyRing}},
      {"table-size", {Flavor::kEnvoyMaglev}},
      {"use-hostname-for-hashing", {Flavor::kEnvoyRing, Flavor::kEnvoyMaglev}},
  };
  return kTable;
}

std::string FlavorNames(const std::vector<Flavor>& flavors) {
  std::string names;
  for (size_t i = 0; i < flavors.size(); ++i) {
    if (i > 0) names += i + 1 == flavors.size() ? " and " : ", ";
    names += FlavorName(flavors[i]);
  }
  return names;
}

Status Bad(std::string message) { return Status(StatusCode::kBadArgument, std::move(message)); }

}  // namespace


Result<KetamaKeyHash> KetamaKeyHashNamed(std::string_view name) {
  return Lookup(kKeyHashes, "key-hash", name);
}

Status ApplyProgramOptions(const Options& options, RingOptions& ring) {
  // Options not given keep `ring`'s values (a config file's, or the defaults).
  for (const OptionFlavors& row : ProgramOptionFlavors()) {
    if (options.Has(row.option) &&
        std::find(row.flavors.begin(), row.flavors.end(), ring.flavor) == row.flavors.end()) {
      return Bad("--" + std::string(row.option) + " is an option of the " +
                 FlavorNames(row.flavors) + " flavor" + (row.flavors.size() > 1 ? "s" : "") +
                 ", not of " + std::string(FlavorName(ring.flavor)));
    }
  }
  Status status;
  switch (ring.flavor) {
    case Flavor::kHaproxy:
      // HAProxy's `hash-type consistent` alone is sdbm with avalanche;
      // naming a function drops the avalanche unless `avalanche` follows.
      if (options.Has("hash-function")) ring.haproxy.avalanche = options.Has("avalanche");
      status = SetNamed(options, "hash-function", kHaproxyHashes, ring.haproxy.hash_function);
      if (status.ok())
        status = SetNamed(options, "server-key", kServerKeys, ring.haproxy.server_key);
      break;
    case Flavor::kKetamaMd5:
      status = SetNamed(options, "variant", kVariants, ring.ketama.variant);
      if (status.ok()) status = SetNamed(options, "key-hash", kKeyHashes, ring.ketama.key_hash);
      if (status.ok())
        status = SetUint(options, "default-port", 1, 65535, ring.ketama.default_port);
      if (!status.ok()) return status;
      if (const auto tag = options.Get("hash-tag")) {
        if (tag->size() != 2) {
          return Bad("--hash-tag must be two bytes (twemproxy's hash_tag: \"{}\"), got '" + *tag +
                     "'");
        }
        if (ring.ketama.variant != KetamaVariant::kTwemproxy) {
          return Bad("--hash-tag is twemproxy's hash_tag: it needs --variant twemproxy");
        }
        ring.ketama.hash_tag = {(*tag)[0], (*tag)[1]};
      }
      break;
    case Flavor::kVarnishShard:
      status = SetUint(options, "replicas", 1, UINT32_MAX, ring.varnish.replicas);
      break;
    case Flavor::kEnvoyRing:
      status = SetUint(options, "min-ring-size", 1, 8388608, ring.envoy_ring.minimum_ring_size);
      if (status.ok()) {
        status = SetUint(options, "max-ring-size", 1, 8388608, ring.envoy_ring.maximum_ring_size);
      }
      if (status.ok() && ring.envoy_ring.minimum_ring_size > ring.envoy_ring.maximum_ring_size) {
        return Bad("--min-ring-size " + std::to_string(ring.envoy_ring.minimum_ring_size) +
                   " is above --max-ring-size " +
                   std::to_string(ring.envoy_ring.maximum_ring_size));
      }
      if (status.ok()) {
        status = SetNamed(options, "hash-function", kEnvoyHashes, ring.envoy_ring.hash_function);
      }
      break;
    case Flavor::kEnvoyMaglev:
      status = SetUint(options, "table-size", 2, 5000011, ring.maglev.table_size);
      break;
    default:
      break;
  }
  if (!status.ok()) return status;
  const Status valid = ValidateRingOptions(ring);
  if (!valid.ok()) return Status(valid.code(), "--flavor " + std::string(FlavorName(ring.flavor)) +
                                                   ": " + valid.message());
  return Status();
}

namespace {

// The attributes a flavor's servers take (tests/oracles/README.md's table).
std::vector<std::string_view> Attributes(const RingOptions& ring) {
  switch (ring.flavor) {
    case Flavor::kHaproxy:
      return {"id", "name"};  // name: HAProxy's server name, not hashed
    case Flavor::kKetamaMd5:
      if (ring.ketama.variant == KetamaVariant::kTwemproxy) return {"name"};
      return {};
    case Flavor::kVarnishShard:
      return {"name", "ident"};
    case Flavor::kEnvoyRing:
    case Flavor::kEnvoyMaglev:
      return {"hash_key", "hostname"};
    default:
      return {};
  }
}

bool AllDigits(std::string_view text) {
  return !text.empty() && text.size() <= 10 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A Varnish REAL weight: digits with one '.', at least one digit.
bool IsReal(std::string_view text) {
  if (text.empty() || text.size() > 32 || std::count(text.begin(), text.end(), '.') != 1) {
    return false;
  }
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return c == '.' || (c >= '0' && c <= '9'); }) &&
         text != ".";
}

}  // namespace

Result<std::vector<ProgramServer>> ParseProgramServers(std::string_view text,
                                                       std::string_view source,
                                                       const RingOptions& ring,
                                                       std::vector<ServerEntry>& entries,
                                                       bool& point_counts, bool use_hostname) {
  const std::vector<std::string_view> allowed = Attributes(ring);
  const bool varnish = ring.flavor == Flavor::kVarnishShard;
  const bool envoy = ring.flavor == Flavor::kEnvoyRing || ring.flavor == Flavor::kEnvoyMaglev;
  std::vector<ProgramServer> servers;
  std::vector<std::string> weights;  // as written
  std::map<std::string, size_t> line_of_addr;
  TextLines lines(text);
  std::string_view line;
  size_t number = 0;
  while (lines.Next(line, number)) {
    line = line.substr(0, line.find('#'));
    const std::string where = std::string(source) + ":" + std::to_string(number);
    std::vector<std::string_view> fields;
    for (size_t i = 0; i < line.size();) {
      if (line[i] == ' ' || line[i] == '\t') {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
      fields.push_back(line.substr(i, j - i));
      i = j;
    }
    if (fields.empty()) continue;
    ServerEntry entry{std::string(fields[0]), 1, number};
    if (fields[0].find('=') != std::string_view::npos) {
      return Bad(where + ": the line starts with '" + std::string(fields[0]) +
                 "': expected ADDR [WEIGHT] [key=value ...]");
    }
    ProgramServer server;
    server.hashed = entry.address;
    std::string weight_text = "1";
    size_t next = 1;
    if (next < fields.size() && fields[next].find('=') == std::string_view::npos) {
      weight_text = std::string(fields[next++]);
      if (!AllDigits(weight_text) && !(varnish && IsReal(weight_text))) {
        return Bad(where + ": weight '" + weight_text + "' is not an integer" +
                   (varnish ? " or a REAL such as 2.5" : ""));
      }
    }
    std::map<std::string, std::string> attrs;
    for (; next < fields.size(); ++next) {
      const std::string_view field = fields[next];
      const size_t eq = field.find('=');
      if (eq == std::string_view::npos || eq == 0 || eq + 1 == field.size()) {
        return Bad(where + ": '" + std::string(field) + "' is not key=value");
      }
      const std::string key(field.substr(0, eq));
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string list;
        for (const std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        return Bad(where + ": the " + std::string(FlavorName(ring.flavor)) +
                   (ring.flavor == Flavor::kKetamaMd5 && allowed.empty()
                        ? " flavor takes no attribute here (name= is twemproxy's: --variant "
                          "twemproxy)"
                        : " flavor takes no attribute '" + key + "'" +
                              (list.empty() ? "" : " (it takes: " + list + ")")));
      }
      if (!attrs.emplace(key, std::string(field.substr(eq + 1))).second) {
        return Bad(where + ": '" + key + "' given twice");
      }
    }
    if (const auto it = attrs.find("id"); it != attrs.end()) {
      const uint64_t id = AllDigits(it->second) ? std::strtoull(it->second.c_str(), nullptr, 10) : 0;
      if (id < 1 || id > 2147483647) {
        return Bad(where + ": id '" + it->second + "' must be an integer 1..2147483647");
      }
      server.server_id = static_cast<uint32_t>(id);
    }
    if (varnish) {
      if (const auto it = attrs.find("ident"); it != attrs.end()) {
        server.hashed = it->second;
      } else if (const auto name = attrs.find("name"); name != attrs.end()) {
        server.hashed = name->second;
      }
    } else if (const auto it = attrs.find("name"); it != attrs.end() &&
                                                    ring.flavor == Flavor::kKetamaMd5) {
      server.name = it->second;
    }
    // Envoy hashes the host's address as it prints it, its hostname with
    // use_hostname_for_hashing (the empty one if it has none), and its
    // envoy.lb hash_key metadata over either.
    if (envoy) {
      if (std::optional<std::string> printed = EnvoyAddressStringOf(entry.address)) {
        server.hashed = std::move(*printed);
      }
      const auto hash_key = attrs.find("hash_key");
      const auto hostname = attrs.find("hostname");
      if (hash_key != attrs.end()) {
        server.hashed = hash_key->second;
      } else if (use_hostname && hostname != attrs.end()) {
        server.hashed = hostname->second;
      } else if (use_hostname) {
        return Bad(where + ": --use-hostname-for-hashing and no hostname= (nor hash_key=): "
                           "Envoy would hash this host's empty hostname");
      }
    }
    if (const auto [it, fresh] = line_of_addr.emplace(entry.address, number); !fresh) {
      return Bad(where + ": '" + entry.address + "' is listed twice (first on line " +
                 std::to_string(it->second) + "): answers name servers by ADDR");
    }
    weights.push_back(weight_text);
    entries.push_back(std::move(entry));
    servers.push_back(std::move(server));
  }
  point_counts = varnish && std::any_of(weights.begin(), weights.end(), IsReal);
  for (size_t i = 0; i < servers.size(); ++i) {
    const std::string where = std::string(source) + ":" + std::to_string(entries[i].line);
    if (point_counts) {
      // vmod_directors' shard: a weight below 1 counts as 1, and
      // replicas x weight is truncated to an integer.
      const double weight = std::max(std::strtod(weights[i].c_str(), nullptr), 1.0);
      const double points = std::floor(static_cast<double>(ring.varnish.replicas) * weight);
      if (!(points <= 4294967295.0)) return Bad(where + ": replicas x weight is above 2^32 - 1");
      servers[i].weight = static_cast<uint32_t>(points);
    } else {
      const uint64_t weight = std::strtoull(weights[i].c_str(), nullptr, 10);
      if (weight > UINT32_MAX) return Bad(where + ": weight '" + weights[i] + "' is too large");
      servers[i].weight = static_cast<uint32_t>(weight);
    }
    entries[i].weight = servers[i].weight;
  }
  return servers;
}

}  // namespace chash::cli
