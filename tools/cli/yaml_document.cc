#include "yaml_document.h"

#if CHASH_WITH_YAML

#include <cstdio>
#include <new>
#include <utility>

namespace chash::cli {

void YamlDocument::Deleter::operator()(yaml_document_t* document) const {
  yaml_document_delete(document);
  delete document;
}

YamlDocument::YamlDocument(std::unique_ptr<yaml_document_t, Deleter> document, std::string path)
    : document_(std::move(document)), path_(std::move(path)) {}

Result<YamlDocument> YamlDocument::Load(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                        &std::fclose);
  if (!file) return Status(StatusCode::kIoError, path + ": cannot be opened");
  yaml_parser_t parser;
  if (yaml_parser_initialize(&parser) == 0) {
    return Status(StatusCode::kOutOfMemory, "out of memory: starting the YAML parser");
  }
  yaml_parser_set_input_file(&parser, file.get());
  auto* loaded = new (std::nothrow) yaml_document_t;
  if (loaded == nullptr) {
    yaml_parser_delete(&parser);
    return Status(StatusCode::kOutOfMemory, "out of memory: reading " + path);
  }
  if (yaml_parser_load(&parser, loaded) == 0) {
    const std::string message = path + ":" + std::to_string(parser.problem_mark.line + 1) +
                                ": YAML: " + (parser.problem ? parser.problem : "unreadable");
    yaml_parser_delete(&parser);
    delete loaded;  // yaml_parser_load frees what it loaded on failure
    return Status(StatusCode::kBadArgument, message);
  }
  yaml_parser_delete(&parser);
  return YamlDocument(std::unique_ptr<yaml_document_t, Deleter>(loaded), path);
}

yaml_node_t* YamlDocument::root() const { return yaml_document_get_root_node(document_.get()); }

yaml_node_t* YamlDocument::Get(yaml_node_t* mapping, std::string_view key) const {
  if (mapping == nullptr || mapping->type != YAML_MAPPING_NODE) return nullptr;
  for (yaml_node_pair_t* pair = mapping->data.mapping.pairs.start;
       pair < mapping->data.mapping.pairs.top; ++pair) {
    if (Scalar(yaml_document_get_node(document_.get(), pair->key)) == key) {
      return yaml_document_get_node(document_.get(), pair->value);
    }
  }
  return nullptr;
}

std::vector<yaml_node_t*> YamlDocument::Items(yaml_node_t* sequence) const {
  std::vector<yaml_node_t*> items;
  if (sequence == nullptr || sequence->type != YAML_SEQUENCE_NODE) return items;
  for (yaml_node_item_t* item = sequence->data.sequence.items.start;
       item < sequence->data.sequence.items.top; ++item) {
    items.push_back(yaml_document_get_node(document_.get(), *item));
  }
  return items;
}

std::string YamlDocument::Scalar(const yaml_node_t* node) {
  if (node == nullptr || node->type != YAML_SCALAR_NODE) return {};
  return std::string(reinterpret_cast<const char*>(node->data.scalar.value),
                     node->data.scalar.length);
}

std::string YamlDocument::Where(const yaml_node_t* node) const {
  return path_ + ":" + std::to_string(node->start_mark.line + 1);
}

}  // namespace chash::cli

#endif  // CHASH_WITH_YAML
