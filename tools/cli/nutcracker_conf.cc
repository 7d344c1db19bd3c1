#include "nutcracker_conf.h"

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

bool NutcrackerYamlSupported() { return false; }

Result<NutcrackerPool> ReadNutcrackerPool(const std::string&, const std::string&) {
  return Bad("--nutcracker-yml: this chash was built without libyaml (libyaml-dev, found by "
             "pkg-config as yaml-0.1)");
}

#else

bool NutcrackerYamlSupported() { return true; }

namespace {

struct DocumentDeleter {
  void operator()(yaml_document_t* document) const {
    yaml_document_delete(document);
    delete document;
  }
};

std::string Scalar(yaml_node_t* node) {
  if (node == nullptr || node->type != YAML_SCALAR_NODE) return {};
  return std::string(reinterpret_cast<const char*>(node->data.scalar.value),
                     node->data.scalar.length);
}

// The value of `key` in a mapping node, or nullptr.
yaml_node_t* Lookup(yaml_document_t* document, yaml_node_t* mapping, std::string_view key) {
  if (mapping == nullptr || mapping->type != YAML_MAPPING_NODE) return nullptr;
  for (yaml_node_pair_t* pair = mapping->data.mapping.pairs.start;
       pair < mapping->data.mapping.pairs.top; ++pair) {
    if (Scalar(yaml_document_get_node(document, pair->key)) == key) {
      return yaml_document_get_node(document, pair->value);
    }
  }
  return nullptr;
}

std::string LineOf(const std::string& path, const yaml_node_t* node) {
  return path + ":" + std::to_string(node->start_mark.line + 1);
}

}  // namespace

Result<NutcrackerPool> ReadNutcrackerPool(const std::string& path, const std::string& pool_name) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                        &std::fclose);
  if (!file) return Status(StatusCode::kIoError, path + ": cannot be opened");
  yaml_parser_t parser;
  if (yaml_parser_initialize(&parser) == 0) {
    return Status(StatusCode::kOutOfMemory, "out of memory: starting the YAML parser");
  }
  yaml_parser_set_input_file(&parser, file.get());
  std::unique_ptr<yaml_document_t, DocumentDeleter> document(new yaml_document_t);
  const bool loaded = yaml_parser_load(&parser, document.get()) != 0;
  if (!loaded) {
    const std::string message = path + ":" + std::to_string(parser.problem_mark.line + 1) +
                                ": YAML: " + (parser.problem ? parser.problem : "unreadable");
    yaml_parser_delete(&parser);
    delete document.release();  // yaml_parser_load frees what it loaded on failure
    return Bad(message);
  }
  yaml_parser_delete(&parser);
  yaml_node_t* root = yaml_document_get_root_node(document.get());
  yaml_node_t* pool = Lookup(document.get(), root, pool_name);
  if (pool == nullptr || pool->type != YAML_MAPPING_NODE) {
    return Bad(path + ": no pool named '" + pool_name + "'");
  }
  const std::string where = LineOf(path, pool);
  NutcrackerPool result;
  result.options.flavor = Flavor::kKetamaMd5;
  result.options.ketama.variant = KetamaVariant::kTwemproxy;
  if (yaml_node_t* node = Lookup(document.get(), pool, "distribution")) {
    if (Scalar(node) != "ketama") {
      return Bad(LineOf(path, node) + ": distribution " + Scalar(node) +
                 ": twemproxy keeps no ring for it (chash reads `distribution: ketama`)");
    }
  } else {
    return Bad(where + ": pool '" + pool_name +
               "' has no distribution: ketama (twemproxy's default is ketama only with it)");
  }
  const std::string hash = Lookup(document.get(), pool, "hash")
                               ? Scalar(Lookup(document.get(), pool, "hash"))
                               : std::string("fnv1a_64");
  Result<KetamaKeyHash> key_hash = KetamaKeyHashNamed(hash);
  if (!key_hash.ok() || hash == "default" || hash == "murmur3") {
    return Bad(where + ": hash '" + hash + "' is not one of twemproxy's");
  }
  result.options.ketama.key_hash = key_hash.value();
  if (yaml_node_t* node = Lookup(document.get(), pool, "hash_tag")) {
    const std::string tag = Scalar(node);
    if (tag.size() != 2) return Bad(LineOf(path, node) + ": hash_tag must be two characters");
    result.options.ketama.hash_tag = {tag[0], tag[1]};
  }
  yaml_node_t* servers = Lookup(document.get(), pool, "servers");
  if (servers == nullptr || servers->type != YAML_SEQUENCE_NODE) {
    return Bad(where + ": pool '" + pool_name + "' has no servers list");
  }
  for (yaml_node_item_t* item = servers->data.sequence.items.start;
       item < servers->data.sequence.items.top; ++item) {
    yaml_node_t* node = yaml_document_get_node(document.get(), *item);
    const std::string line = LineOf(path, node);
    // twemproxy's `host:port:weight [name]` (conf_add_server).
    std::string text = Scalar(node);
    ProgramServer server;
    if (const size_t space = text.find(' '); space != std::string::npos) {
      server.name = text.substr(space + 1);
      text.resize(space);
      if (server.name.empty() || server.name.find(' ') != std::string::npos) {
        return Bad(line + ": '" + Scalar(node) + "': expected HOST:PORT:WEIGHT [NAME]");
      }
    }
    const size_t colon = text.rfind(':');
    const std::string weight = colon == std::string::npos ? "" : text.substr(colon + 1);
    if (colon == std::string::npos || text.find(':') == colon || weight.empty() ||
        weight.size() > 9 || weight.find_first_not_of("0123456789") != std::string::npos) {
      return Bad(line + ": '" + Scalar(node) + "': expected HOST:PORT:WEIGHT [NAME]");
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
