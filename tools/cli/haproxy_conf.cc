#include "haproxy_conf.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include "text_lines.h"  // engine/

namespace chash::cli {
namespace {

// The keywords that open a section of haproxy.cfg.
const std::set<std::string, std::less<>> kSections = {
    "global",  "defaults", "frontend",    "backend", "listen",  "peers",  "resolvers",
    "userlist", "cache",   "http-errors", "ring",    "mailers", "program"};

std::vector<std::string> Words(std::string_view line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ' || line[i] == '\t') {
      ++i;
      continue;
    }
    if (line[i] == '#') break;  // a comment runs to the end of the line
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    words.emplace_back(line.substr(i, j - i));
    i = j;
  }
  return words;
}

bool ParseU32(const std::string& text, uint64_t max, uint32_t& value) {
  if (text.empty() || text.size() > 10 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  const uint64_t v = std::stoull(text);
  if (v > max) return false;
  value = static_cast<uint32_t>(v);
  return true;
}

// What a section (or the defaults it inherits) says about the ring.
struct HashSettings {
  std::optional<std::vector<std::string>> hash_type;  // the words after `hash-type`
  std::optional<std::vector<std::string>> balance;    // the words after `balance`
  std::optional<uint32_t> default_weight;             // `default-server weight N`
  std::string hash_type_where, balance_where;
};

Status Bad(std::string message) { return Status(StatusCode::kBadArgument, std::move(message)); }

}  // namespace

Result<HaproxyBackend> ReadHaproxyBackend(const std::string& path, const std::string& backend) {
  std::ifstream file(path, std::ios::binary);
  if (!file.is_open()) return Status(StatusCode::kIoError, path + ": cannot be opened");
  std::ostringstream read;
  read << file.rdbuf();
  if (file.bad()) return Status(StatusCode::kIoError, path + ": cannot be read");
  const std::string text = read.str();

  HashSettings defaults, own;
  bool in_target = false, found = false, in_defaults = false;
  HaproxyBackend result;
  result.options.flavor = Flavor::kHaproxy;
  std::vector<std::pair<size_t, std::vector<std::string>>> server_lines;
  TextLines lines(text);
  std::string_view line;
  size_t number = 0;
  while (lines.Next(line, number)) {
    const std::vector<std::string> words = Words(line);
    if (words.empty()) continue;
    const std::string where = path + ":" + std::to_string(number);
    if (kSections.count(words[0])) {
      in_defaults = words[0] == "defaults";
      if (in_defaults) defaults = HashSettings{};  // a defaults section replaces the last
      const bool proxy = words[0] == "backend" || words[0] == "listen";
      in_target = proxy && words.size() >= 2 && words[1] == backend;
      if (in_target) {
        if (found) return Bad(where + ": a second proxy named '" + backend + "'");
        found = true;
        own = defaults;
      }
      continue;
    }
    HashSettings* settings = in_target ? &own : in_defaults ? &defaults : nullptr;
    if (settings == nullptr) continue;
    const std::vector<std::string> rest(words.begin() + 1, words.end());
    if (words[0] == "hash-type") {
      settings->hash_type = rest;
      settings->hash_type_where = where;
    } else if (words[0] == "balance") {
      settings->balance = rest;
      settings->balance_where = where;
    } else if (words[0] == "default-server") {
      for (size_t i = 1; i + 1 < words.size(); ++i) {
        if (words[i] != "weight") continue;
        uint32_t weight = 0;
        if (!ParseU32(words[i + 1], 256, weight)) {
          return Bad(where + ": weight '" + words[i + 1] + "' must be an integer 0..256");
        }
        settings->default_weight = weight;
      }
    } else if (in_target && words[0] == "server-template") {
      return Bad(where + ": server-template: chash reads `server` lines only");
    } else if (in_target && words[0] == "hash-key") {
      if (rest.size() != 1 || rest[0] != "id") {
        return Bad(where + ": hash-key: chash computes HAProxy's `hash-key id` ring only");
      }
    } else if (in_target && words[0] == "server") {
      server_lines.emplace_back(number, words);
    }
  }
  if (!found) return Bad(path + ": no backend or listen section named '" + backend + "'");

  if (!own.hash_type || own.hash_type->empty() || (*own.hash_type)[0] != "consistent") {
    return Bad((own.hash_type ? own.hash_type_where : path) + ": backend '" + backend +
               "' uses hash-type " + (own.hash_type && !own.hash_type->empty()
                                          ? (*own.hash_type)[0]
                                          : std::string("map-based (the default)")) +
               ": HAProxy keeps no ring for it (chash reads `hash-type consistent`)");
  }
  const std::vector<std::string>& hash_type = *own.hash_type;
  HaproxyOptions& haproxy = result.options.haproxy;
  if (hash_type.size() >= 2) {
    static const std::pair<std::string_view, HaproxyHash> kFunctions[] = {
        {"sdbm", HaproxyHash::kSdbm}, {"djb2", HaproxyHash::kDjb2},
        {"wt6", HaproxyHash::kWt6},   {"crc32", HaproxyHash::kCrc32}};
    const auto it = std::find_if(std::begin(kFunctions), std::end(kFunctions),
                                 [&](const auto& row) { return row.first == hash_type[1]; });
    if (it == std::end(kFunctions)) {
      return Bad(own.hash_type_where + ": hash-type consistent " + hash_type[1] +
                 ": chash knows sdbm, djb2, wt6 and crc32");
    }
    // Naming the function drops the avalanche unless `avalanche` follows.
    haproxy.hash_function = it->second;
    haproxy.avalanche = hash_type.size() >= 3 && hash_type[2] == "avalanche";
    if (hash_type.size() > 3 || (hash_type.size() == 3 && !haproxy.avalanche)) {
      return Bad(own.hash_type_where + ": hash-type: unexpected '" + hash_type.back() + "'");
    }
  }
  if (!own.balance || own.balance->empty()) {
    return Bad(path + ": backend '" + backend +
               "' has no `balance` line: roundrobin, which is not a hash");
  }
  const std::string& algorithm = (*own.balance)[0];
  if (algorithm != "uri" && algorithm != "url_param" && algorithm != "source" &&
      algorithm.rfind("hdr(", 0) != 0 && algorithm.rfind("rdp-cookie", 0) != 0 &&
      algorithm != "hash") {
    return Bad(own.balance_where + ": balance " + algorithm +
               " does not hash a key: the ring is not used");
  }
  for (const std::string& word : *own.balance) {
    result.balance += (result.balance.empty() ? "" : " ") + word;
  }

  for (const auto& [line_number, words] : server_lines) {
    const std::string where = path + ":" + std::to_string(line_number);
    if (words.size() < 3) return Bad(where + ": server NAME ADDRESS expected");
    ServerEntry entry{words[2], own.default_weight.value_or(1), line_number};
    ProgramServer server;
    server.hashed = words[2];
    bool out_of_ring = false;
    for (size_t i = 3; i < words.size(); ++i) {
      if (words[i] == "weight" || words[i] == "id") {
        if (i + 1 >= words.size()) return Bad(where + ": " + words[i] + " needs a value");
        uint32_t value = 0;
        if (words[i] == "weight") {
          if (!ParseU32(words[i + 1], 256, value)) {
            return Bad(where + ": weight '" + words[i + 1] + "' must be an integer 0..256");
          }
          entry.weight = value;
        } else {
          if (!ParseU32(words[i + 1], 2147483647, value) || value == 0) {
            return Bad(where + ": id '" + words[i + 1] + "' must be an integer 1..2147483647");
          }
          server.server_id = value;
        }
        ++i;
      } else if (words[i] == "disabled" || words[i] == "backup") {
        out_of_ring = true;
        result.notes.push_back(where + ": server " + words[1] + " is " + words[i] +
                               ": out of HAProxy's active tree, it owns no points");
      }
    }
    if (out_of_ring) entry.weight = 0;  // keeps its id, as HAProxy numbers it
    server.weight = entry.weight;
    result.servers.push_back(std::move(entry));
    result.program.push_back(std::move(server));
  }
  if (result.servers.empty()) return Bad(path + ": backend '" + backend + "' has no server line");
  return result;
}

}  // namespace chash::cli
