// A YAML file read whole with Debian's libyaml (its document API), for the
// config readers (nutcracker_conf.cc, envoy_conf.cc). Only with
// CHASH_WITH_YAML: a build without libyaml has the readers refuse instead.
#ifndef CHASH_TOOLS_CLI_YAML_DOCUMENT_H_
#define CHASH_TOOLS_CLI_YAML_DOCUMENT_H_

#if CHASH_WITH_YAML

#include <yaml.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chash/status.h"

namespace chash::cli {

class YamlDocument {
 public:
  // The file's first document. kIoError: it cannot be opened;
  // kBadArgument: "PATH:LINE: YAML: problem"; kOutOfMemory.
  static Result<YamlDocument> Load(const std::string& path);

  yaml_node_t* root() const;
  // The value of `key` in a mapping node; nullptr if absent or not a mapping.
  yaml_node_t* Get(yaml_node_t* mapping, std::string_view key) const;
  // A sequence node's items; none if it is not a sequence.
  std::vector<yaml_node_t*> Items(yaml_node_t* sequence) const;
  // A scalar's text; "" for anything else (nullptr included).
  static std::string Scalar(const yaml_node_t* node);
  // "PATH:LINE" of a node, for errors.
  std::string Where(const yaml_node_t* node) const;
  const std::string& path() const { return path_; }

 private:
  struct Deleter {
    void operator()(yaml_document_t* document) const;
  };
  YamlDocument(std::unique_ptr<yaml_document_t, Deleter> document, std::string path);

  std::unique_ptr<yaml_document_t, Deleter> document_;
  std::string path_;
};

}  // namespace chash::cli

#endif  // CHASH_WITH_YAML

#endif  // CHASH_TOOLS_CLI_YAML_DOCUMENT_H_
