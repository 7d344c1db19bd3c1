// YAML read with Debian's libyaml, for the config readers (nutcracker_conf.cc,
// envoy_conf.cc): a file read whole (a regular file, up to kMaxYamlBytes),
// its nesting bounded by a scan with libyaml's scanner before anything else
// reads it, then either the first document as a tree (YamlDocument) or the
// token and event streams (YamlStream).
//
// Why the scan: libyaml's scanner keeps one possible simple key per flow
// level and checks them all on every token, so N nested `[` cost N^2
// (200 KB of them took 27 s). Counting levels token by token and stopping
// past kMaxYamlDepth bounds that work before the parser or loader runs.
#ifndef CHASH_TOOLS_CLI_YAML_DOCUMENT_H_
#define CHASH_TOOLS_CLI_YAML_DOCUMENT_H_

#include <yaml.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chash/status.h"

namespace chash::cli {

inline constexpr size_t kMaxYamlBytes = size_t{16} << 20;  // a config file
inline constexpr int kMaxYamlDepth = 64;                   // nested collections

// The bytes of a regular file (kMaxYamlBytes at most). kIoError: it cannot
// be opened or read; kBadArgument: not a regular file, or too large.
Result<std::string> ReadYamlFile(const std::string& path);

// Scans `text` (named `path` in errors) token by token, counting nested
// collections (flow and block), and stops at the first one past
// kMaxYamlDepth: "PATH:LINE: YAML nested deeper than 64 levels: chash reads
// no deeper". A scanner error is "PATH:LINE: YAML: problem".
Status CheckYamlDepth(const std::string& path, std::string_view text);

// libyaml's scanner and parser over a text, for readers that follow a
// program's own token or event walk (nutcracker reads its config so). The
// text must outlive the stream.
class YamlStream {
 public:
  ~YamlStream();
  YamlStream(const YamlStream&) = delete;
  YamlStream& operator=(const YamlStream&) = delete;

  // kOutOfMemory if libyaml cannot start.
  static Result<std::unique_ptr<YamlStream>> Open(const std::string& path, std::string_view text);

  // The next token or event (the caller deletes it with yaml_token_delete or
  // yaml_event_delete); a scanner or parser error is "PATH:LINE: YAML: problem".
  // Use one of the two per stream.
  Status NextToken(yaml_token_t& token);
  Status NextEvent(yaml_event_t& event);

  // "PATH:LINE" of a mark.
  std::string Where(const yaml_mark_t& mark) const;

 private:
  YamlStream(std::string path) : path_(std::move(path)) {}
  Status Error() const;

  std::string path_;
  yaml_parser_t parser_{};
  bool initialized_ = false;
};

class YamlDocument {
 public:
  // The file's first document. kIoError: it cannot be opened;
  // kBadArgument: "PATH:LINE: YAML: problem", a file nested too deep
  // (CheckYamlDepth), not regular or too large; kOutOfMemory.
  static Result<YamlDocument> Load(const std::string& path);
  // The same from text already read (`path` names it in errors).
  static Result<YamlDocument> Parse(const std::string& path, std::string_view text);

  yaml_node_t* root() const;
  // The value of `key` in a mapping node; nullptr if absent or not a mapping.
  yaml_node_t* Get(yaml_node_t* mapping, std::string_view key) const;
  // A sequence node's items; none if it is not a sequence.
  std::vector<yaml_node_t*> Items(yaml_node_t* sequence) const;
  // A mapping node's keys and values, in order; none if it is not a mapping.
  std::vector<std::pair<yaml_node_t*, yaml_node_t*>> Pairs(yaml_node_t* mapping) const;
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

#endif  // CHASH_TOOLS_CLI_YAML_DOCUMENT_H_
