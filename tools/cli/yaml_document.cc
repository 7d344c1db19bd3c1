#include "yaml_document.h"

#include <new>
#include <utility>

#include "config_file.h"

namespace chash::cli {

Result<std::string> ReadYamlFile(const std::string& path) {
  int os_error = 0;
  Result<std::string> text = ReadConfigFile(path, kMaxYamlBytes, os_error);
  if (!text.ok()) {
    return Status(text.status().code(),
                  path + (os_error != 0 ? ": cannot be opened" : ": " + text.status().message()));
  }
  return text;
}

YamlStream::~YamlStream() {
  if (initialized_) yaml_parser_delete(&parser_);
}

Result<std::unique_ptr<YamlStream>> YamlStream::Open(const std::string& path,
                                                     std::string_view text) {
  std::unique_ptr<YamlStream> stream(new (std::nothrow) YamlStream(path));
  if (!stream || yaml_parser_initialize(&stream->parser_) == 0) {
    return Status(StatusCode::kOutOfMemory, "out of memory: starting the YAML parser");
  }
  stream->initialized_ = true;
  yaml_parser_set_input_string(&stream->parser_,
                               reinterpret_cast<const unsigned char*>(text.data()), text.size());
  return stream;
}

Status YamlStream::Error() const {
  if (parser_.error == YAML_MEMORY_ERROR) {
    return Status(StatusCode::kOutOfMemory, "out of memory: reading " + path_);
  }
  return Status(StatusCode::kBadArgument,
                Where(parser_.problem_mark) + ": YAML: " +
                    (parser_.problem ? parser_.problem : "unreadable"));
}

Status YamlStream::NextToken(yaml_token_t& token) {
  if (yaml_parser_scan(&parser_, &token) == 0) return Error();
  return Status();
}

Status YamlStream::NextEvent(yaml_event_t& event) {
  if (yaml_parser_parse(&parser_, &event) == 0) return Error();
  return Status();
}

std::string YamlStream::Where(const yaml_mark_t& mark) const {
  return path_ + ":" + std::to_string(mark.line + 1);
}

Status CheckYamlDepth(const std::string& path, std::string_view text) {
  Result<std::unique_ptr<YamlStream>> opened = YamlStream::Open(path, text);
  if (!opened.ok()) return opened.status();
  YamlStream& stream = *opened.value();
  int depth = 0;
  while (true) {
    yaml_token_t token;
    if (Status status = stream.NextToken(token); !status.ok()) return status;
    const yaml_token_type_t type = token.type;
    const yaml_mark_t mark = token.start_mark;
    yaml_token_delete(&token);
    switch (type) {
      case YAML_FLOW_SEQUENCE_START_TOKEN:
      case YAML_FLOW_MAPPING_START_TOKEN:
      case YAML_BLOCK_SEQUENCE_START_TOKEN:
      case YAML_BLOCK_MAPPING_START_TOKEN:
        if (++depth > kMaxYamlDepth) {
          return Status(StatusCode::kBadArgument,
                        stream.Where(mark) + ": YAML nested deeper than " +
                            std::to_string(kMaxYamlDepth) + " levels: chash reads no deeper");
        }
        break;
      case YAML_FLOW_SEQUENCE_END_TOKEN:
      case YAML_FLOW_MAPPING_END_TOKEN:
      case YAML_BLOCK_END_TOKEN:
        --depth;
        break;
      case YAML_STREAM_END_TOKEN:
        return Status();
      default:
        break;
    }
  }
}

void YamlDocument::Deleter::operator()(yaml_document_t* document) const {
  yaml_document_delete(document);
  delete document;
}

YamlDocument::YamlDocument(std::unique_ptr<yaml_document_t, Deleter> document, std::string path)
    : document_(std::move(document)), path_(std::move(path)) {}

Result<YamlDocument> YamlDocument::Load(const std::string& path) {
  Result<std::string> text = ReadYamlFile(path);
  if (!text.ok()) return text.status();
  return Parse(path, text.value());
}

Result<YamlDocument> YamlDocument::Parse(const std::string& path, std::string_view text) {
  if (Status status = CheckYamlDepth(path, text); !status.ok()) return status;
  yaml_parser_t parser;
  if (yaml_parser_initialize(&parser) == 0) {
    return Status(StatusCode::kOutOfMemory, "out of memory: starting the YAML parser");
  }
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()),
                               text.size());
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

std::vector<std::pair<yaml_node_t*, yaml_node_t*>> YamlDocument::Pairs(yaml_node_t* mapping) const {
  std::vector<std::pair<yaml_node_t*, yaml_node_t*>> pairs;
  if (mapping == nullptr || mapping->type != YAML_MAPPING_NODE) return pairs;
  for (yaml_node_pair_t* pair = mapping->data.mapping.pairs.start;
       pair < mapping->data.mapping.pairs.top; ++pair) {
    pairs.emplace_back(yaml_document_get_node(document_.get(), pair->key),
                       yaml_document_get_node(document_.get(), pair->value));
  }
  return pairs;
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
