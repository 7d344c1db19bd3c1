#include "nutcracker_conf.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "yaml_document.h"

namespace chash::cli {
namespace {

Status Bad(std::string message) { return Status(StatusCode::kBadArgument, std::move(message)); }

}  // namespace

namespace {

// twemproxy 0.5.0's hash names (HASH_CODEC, nc_hashkit.h) and chash's key
// hash for each.
constexpr std::pair<std::string_view, KetamaKeyHash> kTwemproxyHashes[] = {
    {"one_at_a_time", KetamaKeyHash::kOneAtATime}, {"md5", KetamaKeyHash::kMd5},
    {"crc16", KetamaKeyHash::kCrc16},              {"crc32", KetamaKeyHash::kCrc32},
    {"crc32a", KetamaKeyHash::kCrc32a},            {"fnv1_64", KetamaKeyHash::kFnv1_64},
    {"fnv1a_64", KetamaKeyHash::kFnv1a64},         {"fnv1_32", KetamaKeyHash::kFnv1_32},
    {"fnv1a_32", KetamaKeyHash::kFnv1a32},         {"hsieh", KetamaKeyHash::kHsieh},
    {"murmur", KetamaKeyHash::kMurmur},            {"jenkins", KetamaKeyHash::kJenkins}};
constexpr std::string_view kDistributions[] = {"ketama", "modula", "random"};
constexpr int kRootDepth = 1, kMaxDepth = 2;  // CONF_ROOT_DEPTH, CONF_MAX_DEPTH
constexpr int kUnset = -1;                    // CONF_UNSET_NUM
constexpr int kDefaultKetamaPort = 11211;
// The tokens conf_validate_tokens refuses, by the names its errors give them.
constexpr std::pair<yaml_token_type_t, std::string_view> kDisallowedTokens[] = {
    {YAML_VERSION_DIRECTIVE_TOKEN, "version directive"},
    {YAML_TAG_DIRECTIVE_TOKEN, "tag directive"},
    {YAML_DOCUMENT_START_TOKEN, "document start"},
    {YAML_DOCUMENT_END_TOKEN, "document end"},
    {YAML_FLOW_SEQUENCE_START_TOKEN, "flow sequence start"},
    {YAML_FLOW_SEQUENCE_END_TOKEN, "flow sequence end"},
    {YAML_FLOW_MAPPING_START_TOKEN, "flow mapping start"},
    {YAML_FLOW_MAPPING_END_TOKEN, "flow mapping end"},
    {YAML_FLOW_ENTRY_TOKEN, "flow entry"},
    {YAML_ALIAS_TOKEN, "alias"},
    {YAML_ANCHOR_TOKEN, "anchor"},
    {YAML_TAG_TOKEN, "tag"}};

// nutcracker's _nc_atoi: digits only, at least one, accumulated in an int
// that wraps (4294967297 reads as 1, as the real nutcracker takes it); -1
// for anything else or a negative result.
int64_t NcAtoi(std::string_view text) {
  if (text.empty()) return -1;
  uint32_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  const auto as_int = static_cast<int32_t>(value);
  return as_int < 0 ? -1 : as_int;
}

// An event or token owned until the end of the scope.
struct Event {
  yaml_event_t event{};
  bool valid = false;
  ~Event() {
    if (valid) yaml_event_delete(&event);
  }
};

std::string ScalarOf(const yaml_event_t& event) {
  return std::string(reinterpret_cast<const char*>(event.data.scalar.value),
                     event.data.scalar.length);
}

struct Server {
  std::string address;  // HOST:PORT, what route prints
  std::string name;     // what the ring hashes (nutcracker's server name)
  uint32_t weight = 0;
  size_t line = 0;
};

// One pool as nutcracker's conf_pool holds it.
struct Pool {
  std::string name;
  size_t line = 0;
  std::optional<std::string> listen;
  std::optional<KetamaKeyHash> hash;
  std::optional<std::string> hash_tag, redis_auth;
  std::optional<std::string> distribution;
  size_t distribution_line = 0;
  std::map<std::string, int64_t> numbers;  // conf_set_num and conf_set_bool fields
  std::vector<Server> servers;
};

class Reader {
 public:
  Reader(const std::string& path, const std::string& text) : path_(path), text_(text) {}

  Status Read() {
    if (Status status = CheckYamlDepth(path_, text_); !status.ok()) return status;
    if (Status status = ValidateDocument(); !status.ok()) return status;
    if (Status status = ValidateTokens(); !status.ok()) return status;
    if (Status status = ValidateStructure(); !status.ok()) return status;
    if (Status status = Parse(); !status.ok()) return status;
    return PostValidate();
  }

  const std::vector<Pool>& pools() const { return pools_; }

 private:
  std::string Where(const yaml_mark_t& mark) const { return path_ + ":" + std::to_string(mark.line + 1); }
  std::string Where(size_t line) const { return path_ + ":" + std::to_string(line); }

  Result<std::unique_ptr<YamlStream>> Open() const { return YamlStream::Open(path_, text_); }

  // conf_validate_document: exactly one document.
  Status ValidateDocument() {
    Result<std::unique_ptr<YamlStream>> stream = Open();
    if (!stream.ok()) return stream.status();
    int documents = 0;
    yaml_mark_t second{};
    while (true) {
      Event e;
      if (Status status = stream.value()->NextEvent(e.event); !status.ok()) return status;
      e.valid = true;
      if (e.event.type == YAML_DOCUMENT_START_EVENT && ++documents == 2) second = e.event.start_mark;
      if (e.event.type == YAML_STREAM_END_EVENT) break;
    }
    if (documents != 1) {
      return Bad(Where(documents == 0 ? yaml_mark_t{} : second) +
                 ": nutcracker takes a file of exactly 1 YAML document; found " +
                 std::to_string(documents));
    }
    return Status();
  }

  // conf_validate_tokens: no anchors, aliases, tags, directives, document
  // markers or flow collections.
  Status ValidateTokens() {
    Result<std::unique_ptr<YamlStream>> stream = Open();
    if (!stream.ok()) return stream.status();
    while (true) {
      yaml_token_t token;
      if (Status status = stream.value()->NextToken(token); !status.ok()) return status;
      const yaml_token_type_t type = token.type;
      const yaml_mark_t mark = token.start_mark;
      yaml_token_delete(&token);
      if (type == YAML_STREAM_END_TOKEN) return Status();
      const auto* disallowed =
          std::find_if(std::begin(kDisallowedTokens), std::end(kDisallowedTokens),
                       [type](const auto& token_name) { return token_name.first == type; });
      if (disallowed != std::end(kDisallowedTokens)) {
        return Bad(Where(mark) + ": " + std::string(disallowed->second) +
                   " token is disallowed (nutcracker takes no " +
                   "anchors, aliases, tags, flow collections or document markers)");
      }
    }
  }

  // conf_validate_structure, counter for counter: a mapping of pools, each
  // a mapping of `key: value` and exactly one `key:` list of scalars.
  Status ValidateStructure() {
    Result<std::unique_ptr<YamlStream>> stream = Open();
    if (!stream.ok()) return stream.status();
    int depth = 0;
    int count[kMaxDepth + 1] = {0, 0, 0};
    bool seq = false;
    while (true) {
      Event e;
      if (Status status = stream.value()->NextEvent(e.event); !status.ok()) return status;
      e.valid = true;
      const std::string where = Where(e.event.start_mark);
      switch (e.event.type) {
        case YAML_STREAM_END_EVENT:
          return Status();
        case YAML_MAPPING_START_EVENT:
          if (depth == kRootDepth && count[depth] != 1) {
            return Bad(where + ": has more than one \"key:value\" at depth 1 (nutcracker: a pool "
                               "name maps to its directives)");
          }
          if (depth >= kMaxDepth) {
            return Bad(where + ": has a depth greater than 2 (nutcracker: pools of "
                               "`key: value` directives and one list)");
          }
          ++depth;
          break;
        case YAML_MAPPING_END_EVENT:
          if (depth == kMaxDepth) {
            if (!seq) return Bad(where + ": missing sequence directive at depth 2 (a pool needs its servers: list)");
            seq = false;
          }
          --depth;
          count[depth] = 0;
          break;
        case YAML_SEQUENCE_START_EVENT:
          if (seq) return Bad(where + ": has more than one sequence directive (nutcracker takes one list a pool: servers)");
          if (depth != kMaxDepth) {
            return Bad(where + ": has sequence at depth " + std::to_string(depth) + " instead of 2");
          }
          if (count[depth] != 1) return Bad(where + ": has invalid \"key:value\" at depth 2");
          seq = true;
          break;
        case YAML_SEQUENCE_END_EVENT:
          count[depth] = 0;
          break;
        case YAML_SCALAR_EVENT:
          if (depth == 0) return Bad(where + ": has invalid empty \"key:\" at depth 0 (nutcracker: the file is a mapping of pools)");
          if (depth == kRootDepth && count[depth] != 0) {
            return Bad(where + ": has invalid mapping \"key:\" at depth 1 (a pool maps to its directives)");
          }
          if (depth == kMaxDepth && count[depth] == 2) count[depth] = 0;
          ++count[depth];
          break;
        default:
          break;
      }
    }
  }

  // conf_parse: every directive through its conf_set_* function.
  Status Parse() {
    Result<std::unique_ptr<YamlStream>> stream = Open();
    if (!stream.ok()) return stream.status();
    int depth = 0;
    bool seq = false;
    std::optional<std::string> key;
    while (true) {
      Event e;
      if (Status status = stream.value()->NextEvent(e.event); !status.ok()) return status;
      e.valid = true;
      switch (e.event.type) {
        case YAML_STREAM_END_EVENT:
          return Status();
        case YAML_MAPPING_START_EVENT:
          ++depth;
          break;
        case YAML_MAPPING_END_EVENT:
          --depth;
          break;
        case YAML_SEQUENCE_START_EVENT:
          seq = true;
          break;
        case YAML_SEQUENCE_END_EVENT:
          seq = false;
          key.reset();
          break;
        case YAML_SCALAR_EVENT: {
          const std::string value = ScalarOf(e.event);
          const std::string where = Where(e.event.start_mark);
          // conf_push_scalar fails on an empty scalar (nutcracker then
          // refuses the file without a message).
          if (value.empty()) return Bad(where + ": an empty value: nutcracker refuses the file");
          if (value.find('\0') != std::string::npos) {
            return Bad(where + ": a value with a NUL byte: chash does not read it");
          }
          if (depth == kRootDepth) {
            Pool pool;
            pool.name = value;
            pool.line = e.event.start_mark.line + 1;
            pools_.push_back(std::move(pool));
          } else if (seq) {
            if (Status status = Handle(*key, value, e.event.start_mark); !status.ok()) return status;
          } else if (!key) {
            key = value;
          } else {
            if (Status status = Handle(*key, value, e.event.start_mark); !status.ok()) return status;
            key.reset();
          }
          break;
        }
        default:
          break;
      }
    }
  }

  // conf_handler and the conf_set_* functions, on the pool being read.
  Status Handle(const std::string& key, const std::string& value, const yaml_mark_t& mark) {
    Pool& pool = pools_.back();
    const std::string where = Where(mark) + ": directive \"" + key + "\" ";
    const auto duplicate = [&] { return Bad(where + "is a duplicate"); };
    static const std::string_view kNumbers[] = {
        "timeout", "backlog", "client_connections", "redis_db", "server_connections",
        "server_retry_timeout", "server_failure_limit"};
    static const std::string_view kBools[] = {"redis", "tcpkeepalive", "preconnect",
                                              "auto_eject_hosts"};
    if (key == "listen") {
      if (pool.listen) return duplicate();
      if (Status status = CheckListen(value, where); !status.ok()) return status;
      pool.listen = value;
    } else if (key == "hash") {
      if (pool.hash) return duplicate();
      const auto* row = std::find_if(std::begin(kTwemproxyHashes), std::end(kTwemproxyHashes),
                                     [&](const auto& r) { return r.first == value; });
      if (row == std::end(kTwemproxyHashes)) return Bad(where + "is not a valid hash");
      pool.hash = row->second;
    } else if (key == "hash_tag") {
      if (pool.hash_tag) return duplicate();
      if (value.size() != 2) return Bad(where + "is not a valid hash tag string with two characters");
      pool.hash_tag = value;
    } else if (key == "distribution") {
      if (pool.distribution) return duplicate();
      if (std::find(std::begin(kDistributions), std::end(kDistributions), value) ==
          std::end(kDistributions)) {
        return Bad(where + "is not a valid distribution");
      }
      pool.distribution = value;
      pool.distribution_line = mark.line + 1;
    } else if (key == "redis_auth") {
      if (pool.redis_auth) return duplicate();
      pool.redis_auth = value;
    } else if (std::find(std::begin(kNumbers), std::end(kNumbers), key) != std::end(kNumbers)) {
      if (pool.numbers.count(key)) return duplicate();
      const int64_t number = NcAtoi(value);
      if (number < 0) return Bad(where + "is not a number");
      pool.numbers[key] = number;
    } else if (std::find(std::begin(kBools), std::end(kBools), key) != std::end(kBools)) {
      if (pool.numbers.count(key)) return duplicate();
      if (value != "true" && value != "false") return Bad(where + "is not \"true\" or \"false\"");
      pool.numbers[key] = value == "true";
    } else if (key == "servers") {
      return AddServer(value, mark, where);
    } else {
      return Bad(where + "is unknown");
    }
    return Status();
  }

  // conf_set_listen: "host:port" (the port 1..65535) or "/path [perm]".
  Status CheckListen(const std::string& value, const std::string& where) {
    if (value[0] == '/') {
      const size_t space = value.rfind(' ');
      if (space != std::string::npos) {
        // strtol(perm, NULL, 8): octal digits after optional blanks and sign.
        errno = 0;
        const long perm = std::strtol(value.c_str() + space + 1, nullptr, 8);
        if (errno != 0 || static_cast<unsigned long>(perm) > 0777) {
          return Bad(where + "has an invalid file permission in \"socket_path permission\" format string");
        }
      }
      const size_t path_length = space == std::string::npos ? value.size() : space;
      if (path_length >= 108) return Bad(where + "has an invalid value (a unix path past sun_path)");
      return Status();
    }
    const size_t colon = value.rfind(':');
    if (colon == std::string::npos) return Bad(where + "has an invalid \"hostname:port\" format string");
    const int64_t port = NcAtoi(std::string_view(value).substr(colon + 1));
    if (port < 1 || port > 65535) return Bad(where + "has an invalid port in \"hostname:port\" format string");
    // nutcracker resolves the host here (nc_resolve); chash does not look
    // names up, and refuses only what no resolver takes.
    const std::string host = value.substr(0, colon);
    if (host.empty() || host.find_first_of("[] \t") != std::string::npos) {
      return Bad(where + "has an invalid value (nutcracker cannot resolve '" + host + "')");
    }
    return Status();
  }

  // conf_add_server: "host:port:weight [name]", split from the end at the
  // last space (the name), then the last two colons.
  Status AddServer(const std::string& value, const yaml_mark_t& mark, const std::string& where) {
    if (value[0] == '/') {
      return Bad(Where(mark) + ": server '" + value + "': unix socket servers are not read by chash");
    }
    std::string_view rest = value;
    std::optional<std::string> name;
    if (const size_t space = rest.rfind(' '); space != std::string_view::npos) {
      name = std::string(rest.substr(space + 1));
      rest = rest.substr(0, space);
    }
    const size_t weight_colon = rest.rfind(':');
    const size_t port_colon =
        weight_colon == std::string_view::npos || weight_colon == 0 ? std::string_view::npos
                                                                    : rest.rfind(':', weight_colon - 1);
    if (weight_colon == std::string_view::npos || port_colon == std::string_view::npos) {
      return Bad(where + "has an invalid \"hostname:port:weight [name]\"or "
                         "\"/path/unix_socket:weight [name]\" format string");
    }
    const std::string_view host = rest.substr(0, port_colon);
    const std::string_view port_text = rest.substr(port_colon + 1, weight_colon - port_colon - 1);
    const int64_t weight = NcAtoi(rest.substr(weight_colon + 1));
    if (weight < 0) return Bad(where + "has an invalid weight in \"hostname:port:weight [name]\" format string");
    if (weight == 0) return Bad(where + "has a zero weight in \"hostname:port:weight [name]\" format string");
    const int64_t port = NcAtoi(port_text);
    if (port < 1 || port > 65535) {
      return Bad(where + "has an invalid port in \"hostname:port:weight [name]\" format string");
    }
    if (name && name->empty()) {
      return Bad(Where(mark) + ": server '" + value + "': an empty name after the space: chash does not read it");
    }
    if (host.empty()) {
      // nutcracker takes it (its servers resolve when it connects) and, on
      // port 11211, names it '': no node chash could build or hash.
      return Bad(Where(mark) + ": server '" + value + "': an empty host: chash does not read it");
    }
    Server server;
    server.address = std::string(host) + ":" + std::string(port_text);
    // Without a name nutcracker names the server HOST, or HOST:PORT as
    // written when the port is not 11211 (libmemcached's convention).
    server.name = name ? *name
                       : port == kDefaultKetamaPort ? std::string(host) : server.address;
    server.weight = static_cast<uint32_t>(weight);
    server.line = mark.line + 1;
    pools_.back().servers.push_back(std::move(server));
    return Status();
  }

  // conf_post_validate: every pool, then listens and names across pools.
  Status PostValidate() {
    if (pools_.empty()) return Bad(path_ + ": has no pools");
    for (const Pool& pool : pools_) {
      const std::string where = Where(pool.line) + ": pool '" + pool.name + "': ";
      if (!pool.listen) return Bad(where + "directive \"listen:\" is missing");
      const auto number = [&](const char* key) {
        const auto it = pool.numbers.find(key);
        return it == pool.numbers.end() ? int64_t{kUnset} : it->second;
      };
      if (number("server_connections") == 0) {
        return Bad(where + "directive \"server_connections:\" cannot be 0");
      }
      if (number("redis") != 1 && pool.redis_auth) {
        return Bad(where + "directive \"redis_auth:\" is only valid for a redis pool");
      }
      if (pool.servers.empty()) return Bad(where + "has no servers");
      std::map<std::string, size_t> names;
      for (const Server& server : pool.servers) {
        const auto [it, added] = names.emplace(server.name, server.line);
        if (!added) {
          return Bad(Where(server.line) + ": pool '" + pool.name + "' has servers with same name '" +
                     server.name + "' (also at line " + std::to_string(it->second) + ")");
        }
      }
    }
    std::map<std::string, const Pool*> listens, names;
    for (const Pool& pool : pools_) {
      const auto [it, added] = listens.emplace(*pool.listen, &pool);
      if (!added) {
        return Bad(Where(pool.line) + ": pools '" + it->second->name + "' and '" + pool.name +
                   "' have the same listen address '" + *pool.listen + "'");
      }
    }
    for (const Pool& pool : pools_) {
      const auto [it, added] = names.emplace(pool.name, &pool);
      if (!added) {
        return Bad(Where(pool.line) + ": has pools with same name '" + pool.name +
                   "' (also at line " + std::to_string(it->second->line) + ")");
      }
    }
    return Status();
  }

  const std::string& path_;
  const std::string& text_;
  std::vector<Pool> pools_;
};

}  // namespace

Result<NutcrackerPool> ReadNutcrackerPoolText(const std::string& path, const std::string& text,
                                              const std::string& pool_name) {
  Reader reader(path, text);
  if (Status status = reader.Read(); !status.ok()) return status;
  const auto& pools = reader.pools();
  const auto it = std::find_if(pools.begin(), pools.end(),
                               [&](const Pool& p) { return p.name == pool_name; });
  if (it == pools.end()) return Bad(path + ": no pool named '" + pool_name + "'");
  const Pool& pool = *it;
  const std::string distribution = pool.distribution.value_or("ketama");
  if (distribution != "ketama") {
    return Bad(path + ":" + std::to_string(pool.distribution_line) + ": distribution " + distribution +
               ": twemproxy keeps no ring for it (chash reads `distribution: ketama`)");
  }
  NutcrackerPool result;
  result.options.flavor = Flavor::kKetamaMd5;
  result.options.ketama.variant = KetamaVariant::kTwemproxy;
  result.options.ketama.key_hash = pool.hash.value_or(KetamaKeyHash::kFnv1a64);
  if (pool.hash_tag) result.options.ketama.hash_tag = {(*pool.hash_tag)[0], (*pool.hash_tag)[1]};
  for (const Server& server : pool.servers) {
    result.servers.push_back({server.address, server.weight, server.line});
    result.program.push_back(
        ProgramServer{.address = server.address, .weight = server.weight, .name = server.name});
  }
  return result;
}

Result<NutcrackerPool> ReadNutcrackerPool(const std::string& path, const std::string& pool) {
  Result<std::string> text = ReadYamlFile(path);
  if (!text.ok()) return text.status();
  return ReadNutcrackerPoolText(path, text.value(), pool);
}

}  // namespace chash::cli
