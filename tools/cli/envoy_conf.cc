#include "envoy_conf.h"

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "builder/flavor_points.h"  // EnvoyRingEntries, MaglevFill (chash_internal)

#include "yaml_document.h"

namespace chash::cli {
namespace {

Status Bad(std::string message) { return Status(StatusCode::kBadArgument, std::move(message)); }

}  // namespace

#if !CHASH_WITH_YAML

Result<EnvoyCluster> ReadEnvoyCluster(const std::string&, const std::string&) {
  return Bad("--envoy-cluster: this chash was built without libyaml (libyaml-dev, found by "
             "pkg-config as yaml-0.1)");
}

#else

namespace {

// The document with the integer fields Envoy's protos write as scalars or
// as {value: N} wrappers.
class Yaml {
 public:
  explicit Yaml(const YamlDocument& document) : document_(document) {}

  yaml_node_t* Get(yaml_node_t* mapping, std::string_view key) const {
    return document_.Get(mapping, key);
  }
  std::vector<yaml_node_t*> Items(yaml_node_t* sequence) const {
    return document_.Items(sequence);
  }
  static std::string Scalar(const yaml_node_t* node) { return YamlDocument::Scalar(node); }
  std::string Where(const yaml_node_t* node) const { return document_.Where(node); }
  // A uint64 scalar (or a {value: N} wrapper) in [min, max]; `fallback` if absent.
  Result<uint64_t> Uint(yaml_node_t* mapping, std::string_view key, uint64_t fallback,
                        uint64_t min, uint64_t max) const {
    yaml_node_t* node = Get(mapping, key);
    if (node == nullptr) return fallback;
    if (node->type == YAML_MAPPING_NODE) node = Get(node, "value");
    const std::string text = Scalar(node);
    bool valid = !text.empty() && text.size() <= 19 &&
                 text.find_first_not_of("0123456789") == std::string::npos;
    const uint64_t value = valid ? std::stoull(text) : 0;
    if (!valid || value < min || value > max) {
      return Bad((node ? Where(node) : document_.path()) + ": " + std::string(key) +
                 " must be an integer " + std::to_string(min) + ".." + std::to_string(max) +
                 ", got '" + text + "'");
    }
    return value;
  }

 private:
  const YamlDocument& document_;
};

}  // namespace

// The hosts of one locality of the serving priority, in configuration
// order, and its load_balancing_weight (with locality_weighted_lb_config).
struct EnvoyLocality {
  uint64_t weight = 0;
  std::vector<size_t> hosts;  // indices into EnvoyCluster::servers
};

template <typename Unsigned>
Unsigned Gcd(Unsigned a, Unsigned b) {
  while (b != 0) a = std::exchange(b, a % b);
  return a;
}

// Envoy weighs localities in two steps in doubles (thread_aware_lb_impl.cc
// normalizeLocalityWeights): a host's normalized weight is w x (lw / Σlw) /
// Σw of its locality, and a locality of weight 0 takes none of its hosts.
// The engine normalizes integer weights in one step, W / ΣW. The integer
// weights W = w x lw x (L / Σw), L the least common multiple of the
// localities' sums, have Envoy's ratios; they replace the hosts' weights
// when they give the ring Envoy gives (the same entry count for every host,
// the same Maglev table), which the two roundings may not: then refused.
Status WeighLocalities(EnvoyCluster& cluster, const std::vector<EnvoyLocality>& localities,
                       const std::string& where) {
  uint64_t locality_sum = 0;
  uint64_t lcm = 1;
  std::vector<uint64_t> host_sums;  // each locality's sum of host weights
  for (const EnvoyLocality& locality : localities) {
    locality_sum += locality.weight;
    uint64_t sum = 0;
    for (const size_t h : locality.hosts) sum += cluster.program[h].weight;
    if (sum > UINT32_MAX) {
      return Bad(where + ": a locality's host weights add up to more than 4294967295 "
                         "(Envoy refuses it)");
    }
    host_sums.push_back(sum);
    // within 2^32 x 2^32, as lcm stops growing once it passes 2^32
    if (locality.weight != 0 && sum != 0 && lcm <= UINT32_MAX) lcm = lcm / Gcd(lcm, sum) * sum;
  }
  const std::string beyond_32_bits =
      where + ": these locality weights need integer weights beyond 32 bits to be "
              "reproduced: chash cannot build Envoy's ring of them";
  if (locality_sum > UINT32_MAX) {
    return Bad(where + ": the locality weights add up to more than 4294967295 (Envoy refuses it)");
  }
  if (locality_sum == 0) {
    return Bad(where + ": every locality weight is 0: Envoy's ring would have no host");
  }
  if (lcm > UINT32_MAX) return Bad(beyond_32_bits);
  std::vector<double> envoy(cluster.program.size(), 0.0);
  std::vector<unsigned __int128> scaled(cluster.program.size(), 0);
  for (size_t l = 0; l < localities.size(); ++l) {
    const EnvoyLocality& locality = localities[l];
    const uint64_t sum = host_sums[l];
    if (locality.weight == 0 || sum == 0) continue;
    const double normalized_locality =
        static_cast<double>(locality.weight) / static_cast<double>(locality_sum);
    for (const size_t h : locality.hosts) {
      const uint32_t w = cluster.program[h].weight;
      envoy[h] = w * normalized_locality / static_cast<double>(sum);
      scaled[h] = static_cast<unsigned __int128>(w) * locality.weight * (lcm / sum);
    }
  }
  unsigned __int128 total = 0;
  unsigned __int128 common = 0;
  for (const unsigned __int128 w : scaled) {
    total += w;
    common = Gcd(common, w);
  }
  if (common == 0 || total / common > UINT32_MAX) return Bad(beyond_32_bits);
  std::vector<NodeInfo> nodes(cluster.program.size());
  for (size_t h = 0; h < nodes.size(); ++h) {
    nodes[h].weight = static_cast<uint32_t>(scaled[h] / common);
  }
  const std::vector<double> integer = internal::EnvoyNormalizedWeights(nodes);
  bool same = true;
  if (cluster.options.flavor == Flavor::kEnvoyRing) {
    same = internal::EnvoyRingEntries(cluster.options.envoy_ring, envoy) ==
           internal::EnvoyRingEntries(cluster.options.envoy_ring, integer);
  } else {
    std::vector<std::string_view> keys;
    for (const ProgramServer& server : cluster.program) keys.push_back(server.hashed);
    const size_t m = cluster.options.maglev.table_size;
    std::vector<uint16_t> a(m, 0), b(m, 0);
    internal::MaglevFill(keys, envoy, a);
    internal::MaglevFill(keys, integer, b);
    same = a == b;
  }
  if (!same) {
    return Bad(where + ": Envoy's two-step normalization of these locality weights rounds so "
                       "that no integer weights give its ring: chash cannot build it exactly");
  }
  for (size_t h = 0; h < nodes.size(); ++h) {
    cluster.program[h].weight = nodes[h].weight;
    cluster.servers[h].weight = nodes[h].weight;
  }
  return Status();
}

Result<EnvoyCluster> ReadEnvoyCluster(const std::string& path, const std::string& name) {
  Result<YamlDocument> loaded = YamlDocument::Load(path);
  if (!loaded.ok()) return loaded.status();
  const Yaml yaml(loaded.value());
  yaml_node_t* root = loaded.value().root();
  std::vector<yaml_node_t*> clusters;
  if (yaml_node_t* list = yaml.Get(yaml.Get(root, "static_resources"), "clusters")) {
    clusters = yaml.Items(list);
  } else if (yaml_node_t* top = yaml.Get(root, "clusters")) {
    clusters = yaml.Items(top);
  } else if (yaml.Get(root, "name") != nullptr) {
    clusters = {root};
  }
  yaml_node_t* cluster = nullptr;
  std::string names;
  for (yaml_node_t* c : clusters) {
    const std::string cluster_name = Yaml::Scalar(yaml.Get(c, "name"));
    names += (names.empty() ? "" : ", ") + cluster_name;
    if (name.empty() ? clusters.size() == 1 : cluster_name == name) cluster = c;
  }
  if (cluster == nullptr) {
    if (name.empty() && clusters.size() > 1) {
      return Bad(path + ": " + std::to_string(clusters.size()) + " clusters (" + names +
                 "): --cluster NAME says which");
    }
    return Bad(path + ": no cluster" + (name.empty() ? "" : " named '" + name + "'"));
  }
  EnvoyCluster result;
  const std::string policy = Yaml::Scalar(yaml.Get(cluster, "lb_policy"));
  if (policy == "RING_HASH") {
    result.options.flavor = Flavor::kEnvoyRing;
    yaml_node_t* config = yaml.Get(cluster, "ring_hash_lb_config");
    Result<uint64_t> min = yaml.Uint(config, "minimum_ring_size", 1024, 1, 8388608);
    if (!min.ok()) return min.status();
    Result<uint64_t> max = yaml.Uint(config, "maximum_ring_size", 8388608, min.value(), 8388608);
    if (!max.ok()) return max.status();
    result.options.envoy_ring.minimum_ring_size = min.value();
    result.options.envoy_ring.maximum_ring_size = max.value();
    if (yaml_node_t* hash = yaml.Get(config, "hash_function")) {
      const std::string function = Yaml::Scalar(hash);
      if (function == "MURMUR_HASH_2") {
        result.options.envoy_ring.hash_function = EnvoyHash::kMurmurHash2;
      } else if (function != "XX_HASH") {
        return Bad(yaml.Where(hash) + ": hash_function " + function +
                   ": Envoy has XX_HASH and MURMUR_HASH_2");
      }
    }
  } else if (policy == "MAGLEV") {
    result.options.flavor = Flavor::kEnvoyMaglev;
    Result<uint64_t> size =
        yaml.Uint(yaml.Get(cluster, "maglev_lb_config"), "table_size", 65537, 2, 5000011);
    if (!size.ok()) return size.status();
    result.options.maglev.table_size = size.value();
  } else {
    return Bad(yaml.Where(cluster) + ": cluster lb_policy is '" + policy +
               "': chash reads RING_HASH and MAGLEV clusters");
  }
  yaml_node_t* common = yaml.Get(cluster, "common_lb_config");
  const bool locality_weighted = yaml.Get(common, "locality_weighted_lb_config") != nullptr;
  const bool use_hostname =
      Yaml::Scalar(yaml.Get(yaml.Get(common, "consistent_hashing_lb_config"),
                            "use_hostname_for_hashing")) == "true";
  yaml_node_t* assignment = yaml.Get(cluster, "load_assignment");
  // The ring that serves while every host is healthy: the lowest priority's
  // (Envoy builds one a priority and sends a key to a higher one only as
  // the lower ones' hosts fail).
  std::vector<std::pair<yaml_node_t*, uint64_t>> localities;
  uint64_t priority = UINT64_MAX;
  for (yaml_node_t* locality : yaml.Items(yaml.Get(assignment, "endpoints"))) {
    Result<uint64_t> p = yaml.Uint(locality, "priority", 0, 0, UINT32_MAX);
    if (!p.ok()) return p.status();
    priority = std::min(priority, p.value());
    localities.emplace_back(locality, p.value());
  }
  std::vector<EnvoyLocality> weighted;
  for (const auto& [locality, locality_priority] : localities) {
    if (locality_priority != priority) continue;
    EnvoyLocality group;
    if (locality_weighted) {
      if (yaml.Get(locality, "load_balancing_weight") == nullptr) {
        return Bad(yaml.Where(locality) + ": a locality without load_balancing_weight in a "
                                          "cluster with locality_weighted_lb_config");
      }
      Result<uint64_t> w = yaml.Uint(locality, "load_balancing_weight", 0, 0, UINT32_MAX);
      if (!w.ok()) return w.status();
      group.weight = w.value();
    }
    for (yaml_node_t* lb_endpoint : yaml.Items(yaml.Get(locality, "lb_endpoints"))) {
      yaml_node_t* endpoint = yaml.Get(lb_endpoint, "endpoint");
      yaml_node_t* socket = yaml.Get(yaml.Get(endpoint, "address"), "socket_address");
      const std::string address = Yaml::Scalar(yaml.Get(socket, "address"));
      const std::string port = Yaml::Scalar(yaml.Get(socket, "port_value"));
      if (address.empty() || port.empty()) {
        return Bad(yaml.Where(lb_endpoint) + ": an lb_endpoint without "
                                             "endpoint.address.socket_address address and "
                                             "port_value");
      }
      ServerEntry entry;
      entry.address = (address.find(':') != std::string::npos ? "[" + address + "]" : address) +
                      ":" + port;
      entry.line = lb_endpoint->start_mark.line + 1;
      Result<uint64_t> weight = yaml.Uint(lb_endpoint, "load_balancing_weight", 1, 1, UINT32_MAX);
      if (!weight.ok()) return weight.status();
      entry.weight = static_cast<uint32_t>(weight.value());
      ProgramServer server;
      server.hashed = entry.address;
      const std::string hostname = Yaml::Scalar(yaml.Get(endpoint, "hostname"));
      if (use_hostname && !hostname.empty()) server.hashed = hostname;
      const std::string hash_key = Yaml::Scalar(
          yaml.Get(yaml.Get(yaml.Get(yaml.Get(lb_endpoint, "metadata"), "filter_metadata"),
                            "envoy.lb"),
                   "hash_key"));
      if (!hash_key.empty()) server.hashed = hash_key;
      server.weight = entry.weight;
      group.hosts.push_back(result.servers.size());
      result.servers.push_back(std::move(entry));
      result.program.push_back(std::move(server));
    }
    weighted.push_back(std::move(group));
  }
  if (locality_weighted && !result.servers.empty()) {
    if (Status exact = WeighLocalities(result, weighted, yaml.Where(assignment)); !exact.ok()) {
      return exact;
    }
  }
  if (result.servers.empty()) {
    return Bad(yaml.Where(cluster) + ": the cluster has no load_assignment lb_endpoints");
  }
  return result;
}

#endif  // CHASH_WITH_YAML

}  // namespace chash::cli
