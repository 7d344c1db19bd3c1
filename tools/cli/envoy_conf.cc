#include "envoy_conf.h"

#include <cstdio>
#include <memory>
#include <string_view>
#include <utility>

#if CHASH_WITH_YAML
#include <yaml.h>
#endif

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

struct DocumentDeleter {
  void operator()(yaml_document_t* document) const {
    yaml_document_delete(document);
    delete document;
  }
};

class Yaml {
 public:
  Yaml(yaml_document_t* document, std::string path) : document_(document), path_(std::move(path)) {}

  yaml_node_t* Get(yaml_node_t* mapping, std::string_view key) const {
    if (mapping == nullptr || mapping->type != YAML_MAPPING_NODE) return nullptr;
    for (yaml_node_pair_t* pair = mapping->data.mapping.pairs.start;
         pair < mapping->data.mapping.pairs.top; ++pair) {
      if (Scalar(yaml_document_get_node(document_, pair->key)) == key) {
        return yaml_document_get_node(document_, pair->value);
      }
    }
    return nullptr;
  }
  std::vector<yaml_node_t*> Items(yaml_node_t* sequence) const {
    std::vector<yaml_node_t*> items;
    if (sequence == nullptr || sequence->type != YAML_SEQUENCE_NODE) return items;
    for (yaml_node_item_t* item = sequence->data.sequence.items.start;
         item < sequence->data.sequence.items.top; ++item) {
      items.push_back(yaml_document_get_node(document_, *item));
    }
    return items;
  }
  static std::string Scalar(const yaml_node_t* node) {
    if (node == nullptr || node->type != YAML_SCALAR_NODE) return {};
    return std::string(reinterpret_cast<const char*>(node->data.scalar.value),
                       node->data.scalar.length);
  }
  std::string Where(const yaml_node_t* node) const {
    return path_ + ":" + std::to_string(node->start_mark.line + 1);
  }
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
      return Bad((node ? Where(node) : path_) + ": " + std::string(key) + " must be an integer " +
                 std::to_string(min) + ".." + std::to_string(max) + ", got '" + text + "'");
    }
    return value;
  }

 private:
  yaml_document_t* document_;
  std::string path_;
};

}  // namespace

Result<EnvoyCluster> ReadEnvoyCluster(const std::string& path, const std::string& name) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                        &std::fclose);
  if (!file) return Status(StatusCode::kIoError, path + ": cannot be opened");
  yaml_parser_t parser;
  if (yaml_parser_initialize(&parser) == 0) {
    return Status(StatusCode::kOutOfMemory, "out of memory: starting the YAML parser");
  }
  yaml_parser_set_input_file(&parser, file.get());
  std::unique_ptr<yaml_document_t, DocumentDeleter> document(new yaml_document_t);
  if (yaml_parser_load(&parser, document.get()) == 0) {
    const std::string message = path + ":" + std::to_string(parser.problem_mark.line + 1) +
                                ": YAML: " + (parser.problem ? parser.problem : "unreadable");
    yaml_parser_delete(&parser);
    delete document.release();  // yaml_parser_load frees what it loaded on failure
    return Bad(message);
  }
  yaml_parser_delete(&parser);
  const Yaml yaml(document.get(), path);
  yaml_node_t* root = yaml_document_get_root_node(document.get());
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
