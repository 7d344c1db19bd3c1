// The other programs' flavors in the chash tool (issue 33): haproxy,
// ketama-md5, varnish-shard, envoy-ring, envoy-maglev. Their options are
// named after RingOptions' fields; their servers file is the oracles'
// (tests/oracles/README.md): `ADDR [WEIGHT] [key=value ...]`, ADDR is what
// the tool prints for the server, the attributes are what the program
// knows of it beside the address.
#ifndef CHASH_TOOLS_CLI_PROGRAM_FLAVORS_H_
#define CHASH_TOOLS_CLI_PROGRAM_FLAVORS_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "chash/chash.h"
#include "chash/servers_file.h"
#include "flavors.h"  // engine/: every flavor as a row (chash_internal)

namespace chash::cli {

class Options;

// The valued options and flags of the program flavors' rings (every
// command that builds a ring from --servers takes them): the flavor table's
// option names and aliases, dashed (--key-hash), and
// --use-hostname-for-hashing.
const std::set<std::string_view>& ProgramValued();
const std::set<std::string_view>& ProgramFlags();
// The other programs' configs, read instead of --servers (route and stats).
inline const std::set<std::string_view> kProgramConfigs = {"haproxy-cfg", "backend",
                                                           "nutcracker-yml", "pool",
                                                           "envoy-cluster", "cluster"};

// The other programs' flavors: their options and servers files are this
// file's.
using internal::IsProgramFlavor;

// A --key-hash name (twemproxy's `hash:` names, murmur3, default).
Result<KetamaKeyHash> KetamaKeyHashNamed(std::string_view name);

// Reads the program options given into `ring` (whose flavor is set; an
// option not given keeps `ring`'s value, e.g. a config file's): an option of
// another flavor is kBadArgument, naming the flavors it belongs to.
Status ApplyProgramOptions(const Options& options, RingOptions& ring);

// A server of another program's ring as RingBuilder::Add takes it: its
// address and weight, and the fields (NodeOptions) from which the engine
// picks what the ring hashes. Given to the builder as read, never as
// resolved: a resolved Envoy hash_key would be printed as an address again.
struct ProgramServer {
  std::string address;
  uint32_t weight = 1;
  uint32_t server_id = 0;                  // haproxy id=
  std::string name = {};                   // twemproxy's name=, Varnish's ident= (else name=)
  std::string hostname = {};               // Envoy's hostname=
  std::string hash_key = {};               // Envoy's hash_key=
  bool hash_hostname = false;              // Envoy's use_hostname_for_hashing
  std::optional<double> real_weight = {};  // a REAL weight (weight 0)

  NodeOptions Node() const {
    return {.server_id = server_id,
            .name = name,
            .hostname = hostname,
            .hash_key = hash_key,
            .hash_hostname = hash_hostname,
            .real_weight = real_weight};
  }
};

// Parses a program flavor's servers file into `entries` (ADDR as written,
// the weight, the line) and the servers as the ring takes them. A weight
// with a '.' (`2.5`) is a real one (NodeOptions::real_weight: Varnish's
// REAL weights; the engine refuses it for the other flavors and counts its
// points). `use_hostname` is Envoy's use_hostname_for_hashing
// (NodeOptions::hash_hostname; another flavor refuses it). Errors name
// "SOURCE:LINE".
Result<std::vector<ProgramServer>> ParseProgramServers(std::string_view text,
                                                       std::string_view source,
                                                       const RingOptions& ring,
                                                       std::vector<ServerEntry>& entries,
                                                       bool use_hostname = false);

}  // namespace chash::cli

#endif  // CHASH_TOOLS_CLI_PROGRAM_FLAVORS_H_
