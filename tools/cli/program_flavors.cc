#include "program_flavors.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "builder/flavor_points.h"  // engine/: ResolveNodeFields
#include "cli_common.h"
#include "flavor_options.h"   // engine/: the program options, as rows
#include "flavors.h"          // engine/: every flavor as a row (chash_internal)
#include "util/text_lines.h"  // engine/

namespace chash::cli {
namespace {

// An option's name as the tool spells it: --key-hash for key_hash.
std::string Dashed(std::string_view name) {
  std::string dashed(name);
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  return dashed;
}

// Every program option's spellings (names and aliases, dashed), once each.
struct Spellings {
  std::vector<std::string> valued, flags;
  std::set<std::string_view> valued_set, flag_set;
};
const Spellings& ProgramSpellings() {
  static const Spellings* spellings = [] {
    auto* made = new Spellings;
    for (const internal::FlavorOption& row : internal::FlavorOptions()) {
      for (const std::string_view name : {row.name, row.alias}) {
        if (name.empty()) continue;
        std::vector<std::string>& list =
            row.kind == internal::OptionKind::kSwitch ? made->flags : made->valued;
        const std::string dashed = Dashed(name);
        if (std::find(list.begin(), list.end(), dashed) == list.end()) list.push_back(dashed);
      }
    }
    made->flags.push_back("use-hostname-for-hashing");  // the servers file's, not the ring's
    made->valued_set.insert(made->valued.begin(), made->valued.end());
    made->flag_set.insert(made->flags.begin(), made->flags.end());
    return made;
  }();
  return *spellings;
}

Status Bad(std::string message) { return Status(StatusCode::kBadArgument, std::move(message)); }

}  // namespace


const std::set<std::string_view>& ProgramValued() { return ProgramSpellings().valued_set; }
const std::set<std::string_view>& ProgramFlags() { return ProgramSpellings().flag_set; }

Result<KetamaKeyHash> KetamaKeyHashNamed(std::string_view name) {
  chash_ring_options c = internal::RingOptionsToC(RingOptions{});
  const Status status = internal::SetFlavorOption(c, Flavor::kKetamaMd5, "key_hash", name);
  if (!status.ok()) return status;
  return static_cast<KetamaKeyHash>(c.ketama_key_hash);
}

Status ApplyProgramOptions(const Options& options, RingOptions& ring) {
  // Options not given keep `ring`'s values (a config file's, or the
  // defaults). Each given one is set by the flavor table
  // (engine/flavor_options.h), which says what it takes or whose it is.
  chash_ring_options c = internal::RingOptionsToC(ring);
  std::set<std::string> given;
  for (const internal::FlavorOption& row : internal::FlavorOptions()) {
    for (const std::string_view name : {row.name, row.alias}) {
      if (name.empty()) continue;
      const std::string dashed = Dashed(name);
      if (!options.Has(dashed) || !given.insert(dashed).second) continue;
      const std::string value = row.kind == internal::OptionKind::kSwitch
                                    ? std::string("on")
                                    : options.Get(dashed).value_or("");
      const Status status = internal::SetFlavorOption(c, ring.flavor, name, value);
      if (!status.ok()) return Bad("--" + dashed + ": " + std::string(status.message()));
    }
  }
  if (Status converted = internal::RingOptionsFromC(ring.flavor, c, ring); !converted.ok()) {
    return converted;
  }
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
    CHASH_CRC32_FLAVOR_CASES:
      break;
  }
  return {};
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
                                                       bool use_hostname) {
  const std::vector<std::string_view> allowed = Attributes(ring);
  std::vector<ProgramServer> servers;
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
    server.address = entry.address;
    std::string weight_text = "1";
    size_t next = 1;
    if (next < fields.size() && fields[next].find('=') == std::string_view::npos) {
      weight_text = std::string(fields[next++]);
      if (AllDigits(weight_text)) {
        const uint64_t weight = std::strtoull(weight_text.c_str(), nullptr, 10);
        if (weight > UINT32_MAX) return Bad(where + ": weight '" + weight_text + "' is too large");
        server.weight = static_cast<uint32_t>(weight);
      } else if (IsReal(weight_text)) {
        // A REAL weight: the engine says whose it is and counts its points.
        server.real_weight = std::strtod(weight_text.c_str(), nullptr);
        server.weight = 0;
      } else {
        return Bad(where + ": weight '" + weight_text +
                   "' is not an integer or a real number such as 2.5");
      }
    }
    // What the tool prints of a server: its integer weight, 1 for a real
    // one (the ring's node weight is the point count the engine made).
    entry.weight = server.real_weight ? 1 : server.weight;
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
    // What the ring hashes is the engine's rule (NodeOptions): the file
    // only says which attribute is which field, and the rule's refusals
    // are named by line here.
    const auto attr = [&](std::string_view key) {
      const auto it = attrs.find(std::string(key));
      return it == attrs.end() ? std::string() : it->second;
    };
    if (ring.flavor != Flavor::kHaproxy) server.name = attr("name");  // HAProxy's: a label
    if (!attr("ident").empty()) server.name = attr("ident");          // Varnish: ident over name
    server.hostname = attr("hostname");
    server.hash_key = attr("hash_key");
    server.hash_hostname = use_hostname;
    if (Result<internal::HashedNode> hashed =
            internal::ResolveNodeFields(ring, server.address, server.Node());
        !hashed.ok()) {
      return Bad(where + ": " + hashed.status().message());
    }
    if (const auto [it, fresh] = line_of_addr.emplace(entry.address, number); !fresh) {
      return Bad(where + ": '" + entry.address + "' is listed twice (first on line " +
                 std::to_string(it->second) + "): answers name servers by ADDR");
    }
    entries.push_back(std::move(entry));
    servers.push_back(std::move(server));
  }
  return servers;
}

}  // namespace chash::cli
