#include "envoy_conf.h"

#include <string_view>
#include <vector>
#include <utility>

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
  if (yaml.Get(common, "locality_weighted_lb_config") != nullptr) {
    return Bad(yaml.Where(common) + ": locality_weighted_lb_config: chash does not weigh "
                                    "localities yet");
  }
  const bool use_hostname =
      Yaml::Scalar(yaml.Get(yaml.Get(common, "consistent_hashing_lb_config"),
                            "use_hostname_for_hashing")) == "true";
  yaml_node_t* assignment = yaml.Get(cluster, "load_assignment");
  for (yaml_node_t* locality : yaml.Items(yaml.Get(assignment, "endpoints"))) {
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
      result.servers.push_back(std::move(entry));
      result.program.push_back(std::move(server));
    }
  }
  if (result.servers.empty()) {
    return Bad(yaml.Where(cluster) + ": the cluster has no load_assignment lb_endpoints");
  }
  return result;
}

#endif  // CHASH_WITH_YAML

}  // namespace chash::cli
