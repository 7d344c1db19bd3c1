#include "conf_readers_check.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "haproxy_conf.h"  // tools/cli (chash_conf_readers)
#include "nginx_conf.h"
#include "nutcracker_conf.h"
#include "yaml_document.h"

namespace chash::fuzz {
namespace {

// The private folder nginx configs are read in, with the files they may
// include (by name: an include with a path is neutralized).
struct NginxFolder {
  std::string dir;                           // no trailing '/'
  std::map<std::string, std::string> files;  // name -> text
};

const NginxFolder& Folder() {
  static const NginxFolder* folder = [] {
    auto* f = new NginxFolder;
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/chash-fuzz-nginx-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) Fail("mkdtemp failed", pattern);
    f->dir = pattern;
    f->files = {
        {"servers.inc", "server 10.0.0.4:80 weight=2;\nserver 10.0.0.5:80 down;\n"},
        {"upstream.conf", "upstream u {\n    hash $request_uri consistent;\n    include servers.inc;\n}\n"},
        {"other.conf", "upstream other { server 10.0.0.9:80; zone z 64k; }\n"},
        {"loop.conf", "include loop.conf;\n"},
        {"bad.inc", "server 10.0.0.1:80 weight=x;\n"},
    };
    for (const auto& [name, text] : f->files) {
      std::ofstream(f->dir + "/" + name, std::ios::binary) << text;
    }
    return f;
  }();
  return *folder;
}

size_t LineCount(std::string_view text) {
  size_t lines = 1;
  for (const char c : text) lines += c == '\n';
  return lines;
}

void CheckNamed(const Status& status, const std::vector<std::string>& prefixes,
                const std::string& description) {
  CheckErrorFormat(status, description);
  for (const std::string& prefix : prefixes) {
    if (status.message().rfind(prefix, 0) == 0) return;
  }
  Fail("an error that names no file: " + status.ToString(), description);
}

std::string NginxQuote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

void CheckNginx(std::string text, const std::string& description) {
  const NginxFolder& folder = Folder();
  if (text.find("include") != std::string::npos) {
    for (char& c : text) {
      if (c == '/') c = '_';
    }
  }
  const std::string path = folder.dir + "/nginx.conf";
  const Result<cli::NginxUpstream> read = cli::ReadNginxUpstreamText(path, text, "u");
  if (!read.ok()) {
    CheckNamed(read.status(), {folder.dir + "/", "upstream \""}, description);
    return;
  }
  const cli::NginxUpstream& upstream = read.value();
  if (upstream.servers.empty()) Fail("an nginx ring without servers", description);
  for (const cli::NginxServer& server : upstream.servers) {
    const auto file = folder.files.find(server.file.substr(folder.dir.size() + 1));
    const size_t lines = server.file == path ? LineCount(text)
                         : file != folder.files.end() ? LineCount(file->second)
                                                      : 0;
    if (server.weight == 0 || server.line == 0 || server.line > lines) {
      Fail("nginx server " + Printable(server.address) + " weight " + std::to_string(server.weight) +
               " at " + server.file + ":" + std::to_string(server.line),
           description);
    }
  }
  // Written back as nginx would read it, the same servers come back.
  std::string canonical = "events {}\nhttp {\n    upstream u {\n        hash " +
                          NginxQuote(upstream.hash_key) + " consistent;\n";
  for (const cli::NginxServer& server : upstream.servers) {
    canonical += "        server " + NginxQuote(server.address) + " weight=" +
                 std::to_string(server.weight) + (server.down ? " down" : "") + ";\n";
  }
  canonical += "    }\n}\n";
  const Result<cli::NginxUpstream> again =
      cli::ReadNginxUpstreamText(folder.dir + "/canonical.conf", canonical, "u");
  if (!again.ok()) Fail("nginx: the canonical config is refused: " + again.status().ToString(), description + "\n" + canonical);
  bool same = again.value().servers.size() == upstream.servers.size() &&
              again.value().hash_key == upstream.hash_key;
  for (size_t i = 0; same && i < upstream.servers.size(); ++i) {
    const cli::NginxServer& a = upstream.servers[i];
    const cli::NginxServer& b = again.value().servers[i];
    same = a.address == b.address && a.weight == b.weight && a.down == b.down;
  }
  if (!same) Fail("nginx: the canonical config reads differently", description + "\n" + canonical);
}

std::string HaproxyQuote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '$': out += "\\$"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

void CheckHaproxy(const std::string& text, const std::string& description) {
  const std::string path = "fuzz.cfg";
  const Result<cli::HaproxyBackend> read = cli::ReadHaproxyBackendText(path, text, "b");
  if (!read.ok()) {
    CheckNamed(read.status(), {path + ":"}, description);
    return;
  }
  const cli::HaproxyBackend& backend = read.value();
  if (backend.servers.empty() || backend.servers.size() != backend.program.size()) {
    Fail("haproxy: servers and program servers differ", description);
  }
  const size_t lines = LineCount(text);
  for (size_t i = 0; i < backend.servers.size(); ++i) {
    if (backend.servers[i].weight > 256 || backend.servers[i].line == 0 ||
        backend.servers[i].line > lines || backend.program[i].weight != backend.servers[i].weight ||
        backend.program[i].server_id > 2147483647u) {
      Fail("haproxy server " + std::to_string(i) + " out of HAProxy's bounds", description);
    }
  }
  const HaproxyOptions& options = backend.options.haproxy;
  static const char* kFunctions[] = {"sdbm", "djb2", "wt6", "crc32"};
  std::string canonical = "defaults\n    mode http\nbackend b\n    balance uri\n"
                          "    hash-type consistent " +
                          std::string(kFunctions[static_cast<int>(options.hash_function)]) +
                          (options.avalanche ? " avalanche" : "") + "\n";
  for (size_t i = 0; i < backend.servers.size(); ++i) {
    canonical += "    server s" + std::to_string(i) + " " + HaproxyQuote(backend.servers[i].address) +
                 " weight " + std::to_string(backend.servers[i].weight) +
                 (backend.program[i].server_id != 0
                      ? " id " + std::to_string(backend.program[i].server_id)
                      : std::string()) +
                 "\n";
  }
  const Result<cli::HaproxyBackend> again = cli::ReadHaproxyBackendText(path, canonical, "b");
  if (!again.ok()) Fail("haproxy: the canonical config is refused: " + again.status().ToString(), description + "\n" + canonical);
  bool same = again.value().servers.size() == backend.servers.size() &&
              again.value().options.haproxy.hash_function == options.hash_function &&
              again.value().options.haproxy.avalanche == options.avalanche;
  for (size_t i = 0; same && i < backend.servers.size(); ++i) {
    same = again.value().servers[i].address == backend.servers[i].address &&
           again.value().servers[i].weight == backend.servers[i].weight &&
           again.value().program[i].server_id == backend.program[i].server_id;
  }
  if (!same) Fail("haproxy: the canonical config reads differently", description + "\n" + canonical);
}

bool PlainYaml(std::string_view text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7F) return false;
  }
  return true;
}

void CheckNutcracker(const std::string& text, const std::string& description) {
  const std::string path = "fuzz.yml";
  const Result<cli::NutcrackerPool> read = cli::ReadNutcrackerPoolText(path, text, "a");
  if (!read.ok()) {
    CheckNamed(read.status(), {path + ":", "--nutcracker-yml: this chash was built without"},
               description);
    return;
  }
  const cli::NutcrackerPool& pool = read.value();
  if (pool.servers.empty() || pool.servers.size() != pool.program.size()) {
    Fail("nutcracker: servers and program servers differ", description);
  }
  const size_t lines = LineCount(text);
  std::string canonical = "a:\n  listen: 127.0.0.1:1\n  servers:\n";
  bool plain = true;
  for (size_t i = 0; i < pool.servers.size(); ++i) {
    const ServerEntry& server = pool.servers[i];
    if (server.weight == 0 || server.weight > 2147483647u || server.line == 0 ||
        server.line > lines || pool.program[i].name.empty()) {
      Fail("nutcracker server " + std::to_string(i) + " out of nutcracker's bounds", description);
    }
    // Plain text only (YAML would escape other bytes), and names without
    // spaces (the name is what follows the last one).
    plain = plain && PlainYaml(server.address) && PlainYaml(pool.program[i].name) &&
            pool.program[i].name.find(' ') == std::string::npos;
    std::string line = server.address + ":" + std::to_string(server.weight) + " " + pool.program[i].name;
    std::string quoted = "\"";
    for (const char c : line) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += c;
    }
    canonical += "   - " + quoted + "\"\n";
  }
  if (!plain) return;
  const Result<cli::NutcrackerPool> again = cli::ReadNutcrackerPoolText(path, canonical, "a");
  if (!again.ok()) Fail("nutcracker: the canonical config is refused: " + again.status().ToString(), description + "\n" + canonical);
  bool same = again.value().servers.size() == pool.servers.size();
  for (size_t i = 0; same && i < pool.servers.size(); ++i) {
    same = again.value().servers[i].address == pool.servers[i].address &&
           again.value().servers[i].weight == pool.servers[i].weight &&
           again.value().program[i].name == pool.program[i].name;
  }
  if (!same) Fail("nutcracker: the canonical config reads differently", description + "\n" + canonical);
}

void CheckYaml(const std::string& text, const std::string& description) {
  const std::string path = "fuzz.yaml";
  const Status depth = cli::CheckYamlDepth(path, text);
  const Result<cli::YamlDocument> document = cli::YamlDocument::Parse(path, text);
  if (!depth.ok()) {
    CheckNamed(depth, {path + ":"}, description);
    if (document.ok() || document.status().message() != depth.message()) {
      Fail("YAML: Parse does not stop where the depth scan does", description);
    }
    return;
  }
  if (!document.ok()) {
    CheckNamed(document.status(), {path + ":"}, description);
    return;
  }
  // Every node reachable from the root, each once (aliases may share).
  const cli::YamlDocument& yaml = document.value();
  std::vector<yaml_node_t*> stack;
  std::vector<const yaml_node_t*> seen;
  if (yaml_node_t* root = yaml.root()) stack.push_back(root);
  size_t visited = 0;
  while (!stack.empty()) {
    yaml_node_t* node = stack.back();
    stack.pop_back();
    if (std::find(seen.begin(), seen.end(), node) != seen.end()) continue;
    seen.push_back(node);
    if (++visited > text.size() + 2) Fail("YAML: more nodes than bytes", description);
    for (yaml_node_t* item : yaml.Items(node)) stack.push_back(item);
    for (const auto& [key, value] : yaml.Pairs(node)) {
      stack.push_back(key);
      stack.push_back(value);
    }
  }
}

}  // namespace

size_t RunConfReadersCheck(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t selector = data[0] % 4;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  static const char* kNames[] = {"nginx", "haproxy", "nutcracker", "yaml"};
  const std::string description = std::string("conf_readers case: ") + kNames[selector] + " " +
                                  Printable(text.substr(0, 2048)) +
                                  (text.size() > 2048 ? "..." : "");
  switch (selector) {
    case 0:
      CheckNginx(text, description);
      break;
    case 1:
      CheckHaproxy(text, description);
      break;
    case 2:
      CheckNutcracker(text, description);
      break;
    default:
      CheckYaml(text, description);
      break;
  }
  return 1;
}

}  // namespace chash::fuzz
