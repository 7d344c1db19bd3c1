// The ring (RING_HASH) or table (MAGLEV) of one Envoy cluster, read from
// YAML with Debian's libyaml (--envoy-cluster FILE [--cluster NAME]): the
// cluster's lb_policy, ring_hash_lb_config (minimum/maximum_ring_size,
// hash_function), maglev_lb_config.table_size, and its
// load_assignment's lb_endpoints (socket_address, load_balancing_weight,
// hostname with consistent_hashing_lb_config.use_hostname_for_hashing, the
// envoy.lb hash_key metadata). The file is a cluster, a list of them under
// `clusters:`, or a bootstrap's `static_resources: clusters:`. route prints
// each endpoint's ADDRESS:PORT ([ADDRESS]:PORT for IPv6).
#ifndef CHASH_TOOLS_CLI_ENVOY_CONF_H_
#define CHASH_TOOLS_CLI_ENVOY_CONF_H_

#include <string>
#include <vector>

#include "chash/chash.h"
#include "program_flavors.h"

namespace chash::cli {

struct EnvoyCluster {
  RingOptions options;  // envoy-ring or envoy-maglev
  std::vector<ServerEntry> servers;  // the serving priority's hosts
  std::vector<ProgramServer> program;
};

// `cluster` empty: the file's only cluster. The hosts are the lowest
// priority's, the ring Envoy routes with while they are healthy. With
// locality_weighted_lb_config, each host's weight becomes an integer weight
// that gives the ring Envoy's locality weighting gives (refused where no
// such weight does). Errors name the file and line.
Result<EnvoyCluster> ReadEnvoyCluster(const std::string& path, const std::string& cluster);

}  // namespace chash::cli

#endif  // CHASH_TOOLS_CLI_ENVOY_CONF_H_
