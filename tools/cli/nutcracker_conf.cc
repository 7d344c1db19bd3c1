#include "nutcracker_conf.h"

#include <string_view>
#include <utility>

#include "yaml_document.h"

namespace chash::cli {
namespace {

Status Bad(std::string message) { return Status(StatusCode::kBadArgument, std::move(message)); }

}  // namespace

#if !CHASH_WITH_YAML

bool NutcrackerYamlSupported() { return false; }

Result<NutcrackerPool> ReadNutcrackerPool(const std::string&, const std::string&) {
  return Bad("--nutcracker-yml: this chash was built without libyaml (libyaml-dev, found by "
             "pkg-config as yaml-0.1)");
}

#else

bool NutcrackerYamlSupported() { return true; }

Result<NutcrackerPool> ReadNutcrackerPool(const std::string& path, const std::string& pool_name) {
  Result<YamlDocument> loaded = YamlDocument::Load(path);
  if (!loaded.ok()) return loaded.status();
  const YamlDocument& yaml = loaded.value();
  yaml_node_t* root = yaml.root();
  yaml_node_t* pool = yaml.Get(root, pool_name);
  if (pool == nullptr || pool->type != YAML_MAPPING_NODE) {
    return Bad(path + ": no pool named '" + pool_name + "'");
  }
  const std::string where = yaml.Where(pool);
  NutcrackerPool result;
  result.options.flavor = Flavor::kKetamaMd5;
  result.options.ketama.variant = KetamaVariant::kTwemproxy;
  if (yaml_node_t* node = yaml.Get(pool, "distribution")) {
    if (YamlDocument::Scalar(node) != "ketama") {
      return Bad(yaml.Where(node) + ": distribution " + YamlDocument::Scalar(node) +
                 ": twemproxy keeps no ring for it (chash reads `distribution: ketama`)");
    }
  } else {
    return Bad(where + ": pool '" + pool_name +
               "' has no distribution: ketama (twemproxy's default is ketama only with it)");
  }
  const std::string hash = yaml.Get(pool, "hash")
                               ? YamlDocument::Scalar(yaml.Get(pool, "hash"))
                               : std::string("fnv1a_64");
  Result<KetamaKeyHash> key_hash = KetamaKeyHashNamed(hash);
  if (!key_hash.ok() || hash == "default" || hash == "murmur3") {
    return Bad(where + ": hash '" + hash + "' is not one of twemproxy's");
  }
  result.options.ketama.key_hash = key_hash.value();
  if (yaml_node_t* node = yaml.Get(pool, "hash_tag")) {
    const std::string tag = YamlDocument::Scalar(node);
    if (tag.size() != 2) return Bad(yaml.Where(node) + ": hash_tag must be two characters");
    result.options.ketama.hash_tag = {tag[0], tag[1]};
  }
  yaml_node_t* servers = yaml.Get(pool, "servers");
  if (servers == nullptr || servers->type != YAML_SEQUENCE_NODE) {
    return Bad(where + ": pool '" + pool_name + "' has no servers list");
  }
  for (yaml_node_t* node : yaml.Items(servers)) {
    const std::string line = yaml.Where(node);
    // twemproxy's `host:port:weight [name]` (conf_add_server).
    std::string text = YamlDocument::Scalar(node);
    ProgramServer server;
    if (const size_t space = text.find(' '); space != std::string::npos) {
      server.name = text.substr(space + 1);
      text.resize(space);
      if (server.name.empty() || server.name.find(' ') != std::string::npos) {
        return Bad(line + ": '" + YamlDocument::Scalar(node) + "': expected HOST:PORT:WEIGHT [NAME]");
      }
    }
    const size_t colon = text.rfind(':');
    const std::string weight = colon == std::string::npos ? "" : text.substr(colon + 1);
    if (colon == std::string::npos || text.find(':') == colon || weight.empty() ||
        weight.size() > 9 || weight.find_first_not_of("0123456789") != std::string::npos) {
      return Bad(line + ": '" + YamlDocument::Scalar(node) + "': expected HOST:PORT:WEIGHT [NAME]");
    }
    server.hashed = text.substr(0, colon);
    server.weight = static_cast<uint32_t>(std::stoul(weight));
    result.servers.push_back({server.hashed, server.weight,
                              static_cast<size_t>(node->start_mark.line + 1)});
    result.program.push_back(std::move(server));
  }
  if (result.servers.empty()) return Bad(where + ": pool '" + pool_name + "' has no server");
  return result;
}

#endif  // CHASH_WITH_YAML

}  // namespace chash::cli
