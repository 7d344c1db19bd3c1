// The ring (RING_HASH) or table (MAGLEV) of one Envoy cluster, read from
// YAML with Debian's libyaml (--envoy-cluster FILE [--cluster NAME]) as
// Envoy reads it: its YAML scalars typed as Envoy's YAML loader types them,
// its validation rules, and the host set, priority, health, locality order
// and weights Envoy builds the ring of. The file is a cluster, a list of
// them under `clusters:`, or a bootstrap (`static_resources: clusters:`,
// whose `node.locality` is Envoy's local locality). The parts of the
// cluster that decide the ring (tools/cli/README.md lists them) are read
// key by key: a key chash does not read there is refused by name, never
// ignored. route prints each host as Envoy prints its address
// (envoy_address.h).
#ifndef CHASH_TOOLS_CLI_ENVOY_CONF_H_
#define CHASH_TOOLS_CLI_ENVOY_CONF_H_

#include <string>
#include <vector>

#include "chash/chash.h"
#include "program_flavors.h"

namespace chash::cli {

struct EnvoyCluster {
  RingOptions options;  // envoy-ring or envoy-maglev
  // The hosts of the priority whose ring answers every key, in the order
  // Envoy builds its ring in; those not on the ring (not healthy, or in a
  // locality of no weight) have weight 0.
  std::vector<ServerEntry> servers;
  std::vector<ProgramServer> program;
  std::vector<std::string> notes;  // what Envoy leaves out or ignores, and where
};

// `cluster` empty: the file's only cluster. With locality_weighted_lb_config
// each host's weight becomes an integer weight that gives the ring Envoy's
// two-step locality weighting gives (refused where no such weight does).
// Refusals name the file, the line and Envoy's reason.
Result<EnvoyCluster> ReadEnvoyCluster(const std::string& path, const std::string& cluster);

}  // namespace chash::cli

#endif  // CHASH_TOOLS_CLI_ENVOY_CONF_H_
