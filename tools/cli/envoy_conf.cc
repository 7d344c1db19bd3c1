#include "envoy_conf.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "address/envoy_address.h"  // engine/
#include "builder/flavor_points.h"  // EnvoyRingEntries, MaglevFill, IsPrime, ResolveNodeFields (chash_internal)
#include "yaml_document.h"

namespace chash::cli {
namespace {

Status Bad(std::string message) { return Status(StatusCode::kBadArgument, std::move(message)); }

}  // namespace

namespace {

// ---- YAML as Envoy reads it ---------------------------------------------------------------
//
// Envoy loads YAML with yaml-cpp, turns it into JSON and fills the proto
// with protobuf's JSON parser (source/common/protobuf/yaml_utility.cc
// parseYamlNode, then JsonStringToMessage with legacy syntax on). A
// scalar's JSON type is decided before the proto is looked at: a quoted
// (or block) scalar is a string; a plain one is null (empty, ~, null, Null,
// NULL), else a bool as yaml-cpp's convert<bool> reads it, else an integer
// as its convert<int64_t> reads it (0x hex and 0 octal too; a number within
// int32, a decimal string beyond), else a string.

enum class Json { kAbsent, kNull, kBool, kNumber, kString, kObject, kArray };

// An enum's names and numbers.
using EnumName = std::pair<std::string_view, int>;
using EnumNames = std::span<const EnumName>;

struct JsonValue {
  Json kind = Json::kAbsent;
  bool flag = false;    // kBool
  int64_t number = 0;   // kNumber
  std::string text;     // kString: the string; otherwise the scalar as written
};

// Indexed by Json's value; kArray is its last.
constexpr std::array<std::string_view, 7> kJsonKindNames = {
    "absent", "null", "a bool", "a number", "a string", "a mapping", "a sequence"};
static_assert(kJsonKindNames.size() == static_cast<size_t>(Json::kArray) + 1);

std::string_view KindName(Json kind) { return kJsonKindNames[static_cast<size_t>(kind)]; }

bool IsLower(char c) { return c >= 'a' && c <= 'z'; }
bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }

// yaml-cpp's convert<bool>: y/yes/true/on and n/no/false/off, all lower
// case, all upper case or capitalized.
std::optional<bool> YamlCppBool(std::string_view text) {
  const bool lower = std::all_of(text.begin(), text.end(), IsLower);
  const bool capitalized =
      !text.empty() && IsUpper(text[0]) &&
      (std::all_of(text.begin() + 1, text.end(), IsLower) ||
       std::all_of(text.begin() + 1, text.end(), IsUpper));
  if (!lower && !capitalized) return std::nullopt;
  std::string folded(text);
  for (char& c : folded) c = IsUpper(c) ? static_cast<char>(c - 'A' + 'a') : c;
  for (const auto& [yes, no] : {std::pair{"y", "n"}, {"yes", "no"}, {"true", "false"},
                                {"on", "off"}}) {
    if (folded == yes) return true;
    if (folded == no) return false;
  }
  return std::nullopt;
}

// yaml-cpp's convert<int64_t>: a stream with the base left to the prefix.
std::optional<int64_t> YamlCppInt64(const std::string& text) {
  std::istringstream stream(text);
  stream.unsetf(std::ios::dec);
  int64_t value = 0;
  if ((stream >> std::noskipws >> value) && (stream >> std::ws).eof()) return value;
  return std::nullopt;
}

// absl::SimpleAtob, which protobuf's JSON parser applies to a string given
// for a bool.
std::optional<bool> SimpleAtob(std::string_view text) {
  std::string folded(text);
  for (char& c : folded) c = IsUpper(c) ? static_cast<char>(c - 'A' + 'a') : c;
  for (const char* yes : {"true", "t", "yes", "y", "1"}) {
    if (folded == yes) return true;
  }
  for (const char* no : {"false", "f", "no", "n", "0"}) {
    if (folded == no) return false;
  }
  return std::nullopt;
}

// absl::SimpleAtod (an optional '+', then std::from_chars' general format).
std::optional<double> SimpleAtod(std::string_view text) {
  if (!text.empty() && text[0] == '+') {
    text.remove_prefix(1);
    if (!text.empty() && text[0] == '-') return std::nullopt;
  }
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error == std::errc::invalid_argument || end != text.data() + text.size()) {
    return std::nullopt;
  }
  if (error == std::errc::result_out_of_range) return std::nullopt;  // infinite: refused below
  return value;
}

// The unsigned integer protobuf's JSON parser reads from `value` (ParseUInt:
// a number; a string without blanks read by SimpleAtoi, else by SimpleAtod
// if it is integral, 0..2^54).
std::optional<uint64_t> JsonUint(const JsonValue& value) {
  if (value.kind == Json::kNumber) {
    if (value.number < 0) return std::nullopt;
    return static_cast<uint64_t>(value.number);
  }
  if (value.kind != Json::kString) return std::nullopt;
  std::string_view text = value.text;
  if (std::any_of(text.begin(), text.end(), [](char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
      })) {
    return std::nullopt;
  }
  std::string_view digits = text;
  if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
  uint64_t integer = 0;
  if (!digits.empty()) {
    const auto [end, error] =
        std::from_chars(digits.data(), digits.data() + digits.size(), integer);
    if (error == std::errc() && end == digits.data() + digits.size()) return integer;
  }
  const std::optional<double> real = SimpleAtod(text);
  if (!real || !std::isfinite(*real) || *real < 0 || *real > 18014398509481984.0) {
    return std::nullopt;
  }
  const auto whole = static_cast<uint64_t>(*real);
  if (*real - static_cast<double>(whole) != 0) return std::nullopt;
  return whole;
}

// The document read as Envoy reads it, and the refusals that name a
// node's file and line.
class EnvoyYaml {
 public:
  explicit EnvoyYaml(const YamlDocument& document)
      : document_(document), nodes_(document.root()) {}

  yaml_node_t* root() const { return document_.root(); }
  yaml_node_t* Get(yaml_node_t* mapping, std::string_view key) const {
    return document_.Get(mapping, key);
  }
  std::vector<yaml_node_t*> Items(yaml_node_t* sequence) const {
    return document_.Items(sequence);
  }
  std::string Where(const yaml_node_t* node) const { return document_.Where(node); }
  const std::string& path() const { return document_.path(); }

  JsonValue Value(const yaml_node_t* node) const {
    JsonValue value;
    if (node == nullptr) return value;
    switch (node->type) {
      case YAML_MAPPING_NODE:
        value.kind = Json::kObject;
        return value;
      case YAML_SEQUENCE_NODE:
        value.kind = Json::kArray;
        return value;
      case YAML_SCALAR_NODE:
        break;
      default:
        value.kind = Json::kNull;
        return value;
    }
    value.text = YamlDocument::Scalar(node);
    const std::string_view tag =
        node->tag != nullptr ? reinterpret_cast<const char*>(node->tag) : "";
    if (node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || tag == "!") {
      value.kind = Json::kString;
      return value;
    }
    const std::string& text = value.text;
    if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
      value.kind = Json::kNull;
    } else if (const std::optional<bool> flag = YamlCppBool(text)) {
      value.kind = Json::kBool;
      value.flag = *flag;
    } else if (const std::optional<int64_t> number = YamlCppInt64(text)) {
      if (*number >= INT32_MIN && *number <= INT32_MAX) {
        value.kind = Json::kNumber;
        value.number = *number;
      } else {
        value.kind = Json::kString;
        value.text = std::to_string(*number);
      }
    } else {
      value.kind = Json::kString;
    }
    return value;
  }

  // A message field: present unless absent or null (JSON null leaves a
  // message unset). kBadArgument if it is there but not a mapping.
  Result<yaml_node_t*> Message(yaml_node_t* mapping, std::string_view key) const {
    yaml_node_t* node = Get(mapping, key);
    const JsonValue value = Value(node);
    if (value.kind == Json::kAbsent || value.kind == Json::kNull) return nullptr;
    if (value.kind != Json::kObject) {
      return Bad(Where(node) + ": " + std::string(key) + " must be a mapping (Envoy's " +
                 std::string(key) + " is a message), got " + std::string(KindName(value.kind)));
    }
    return node;
  }

  // A repeated field: its items (none if absent or null).
  Result<std::vector<yaml_node_t*>> List(yaml_node_t* mapping, std::string_view key) const {
    yaml_node_t* node = Get(mapping, key);
    const JsonValue value = Value(node);
    if (value.kind == Json::kAbsent || value.kind == Json::kNull) {
      return std::vector<yaml_node_t*>{};
    }
    if (value.kind != Json::kArray) {
      return Bad(Where(node) + ": " + std::string(key) + " must be a sequence, got " +
                 std::string(KindName(value.kind)));
    }
    return Items(node);
  }

  // Refuses a key of `mapping` that is not in `read` (what chash reads)
  // nor in `unread` (Envoy's fields that do not change the ring), and a
  // key given twice.
  Status CheckKeys(yaml_node_t* mapping, std::string_view what,
                   std::initializer_list<std::string_view> read,
                   std::initializer_list<std::string_view> unread = {}) const {
    if (mapping == nullptr || mapping->type != YAML_MAPPING_NODE) return Status();
    std::set<std::string> seen;
    for (yaml_node_pair_t* pair = mapping->data.mapping.pairs.start;
         pair < mapping->data.mapping.pairs.top; ++pair) {
      // libyaml keeps a document's nodes in one array that starts with the
      // root (yaml_document_get_node is nodes.start + index - 1).
      const yaml_node_t* key_node = nodes_ + (pair->key - 1);
      const std::string key = YamlDocument::Scalar(key_node);
      if (!seen.insert(key).second) {
        return Bad(Where(key_node) + ": " + std::string(what) + ": '" + key + "' given twice");
      }
      if (std::find(read.begin(), read.end(), key) != read.end() ||
          std::find(unread.begin(), unread.end(), key) != unread.end()) {
        continue;
      }
      std::string names;
      for (const std::string_view name : read) {
        names += (names.empty() ? "" : ", ") + std::string(name);
      }
      return Bad(Where(key_node) + ": " + std::string(what) + ": '" + key +
                 "' is not a key chash reads here, and it may change the ring: refused rather "
                 "than ignored (chash reads " +
                 names + ")");
    }
    return Status();
  }

  // Message(mapping, key), then its keys checked as CheckKeys does (naming
  // the message `key`); a message not given has none to check.
  Result<yaml_node_t*> Message(yaml_node_t* mapping, std::string_view key,
                               std::initializer_list<std::string_view> read,
                               std::initializer_list<std::string_view> unread = {}) const {
    Result<yaml_node_t*> node = Message(mapping, key);
    if (!node.ok()) return node;
    if (Status keys = CheckKeys(node.value(), key, read, unread); !keys.ok()) return keys;
    return node;
  }

  // A bool field: absent or null is false; a string is read by SimpleAtob.
  Result<bool> Bool(yaml_node_t* mapping, std::string_view key) const {
    yaml_node_t* node = Get(mapping, key);
    const JsonValue value = Value(node);
    switch (value.kind) {
      case Json::kAbsent:
      case Json::kNull:
        return false;
      case Json::kBool:
        return value.flag;
      case Json::kString:
        if (const std::optional<bool> flag = SimpleAtob(value.text)) return *flag;
        break;
      default:
        break;
    }
    return Bad(Where(node) + ": " + std::string(key) + " '" + value.text +
               "': Envoy's YAML and JSON readers make " + std::string(KindName(value.kind)) +
               " of it, not a bool (\"expected 'true' or 'false'\")");
  }

  // An unsigned integer field or wrapper (also written {value: N}) in
  // [min, max], `rule` naming Envoy's bound; nullopt if absent or null.
  Result<std::optional<uint64_t>> Uint(yaml_node_t* mapping, std::string_view key, uint64_t min,
                                       uint64_t max, std::string_view rule) const {
    yaml_node_t* node = Get(mapping, key);
    JsonValue value = Value(node);
    if (value.kind == Json::kObject) {
      if (Status keys = CheckKeys(node, key, {"value"}); !keys.ok()) return keys;
      node = Get(node, "value");
      value = Value(node);
    }
    if (value.kind == Json::kAbsent || value.kind == Json::kNull) {
      return std::optional<uint64_t>();
    }
    const std::optional<uint64_t> number = JsonUint(value);
    if (!number) {
      return Bad(Where(node) + ": " + std::string(key) + " '" + value.text +
                 "': not an unsigned integer to Envoy's YAML and JSON readers");
    }
    if (*number < min || *number > max) {
      return Bad(Where(node) + ": " + std::string(key) + " " + std::to_string(*number) +
                 ": Envoy refuses it (" + std::string(rule) + ")");
    }
    return number;
  }

  // A string field: absent or null is "".
  Result<std::string> String(yaml_node_t* mapping, std::string_view key) const {
    yaml_node_t* node = Get(mapping, key);
    const JsonValue value = Value(node);
    if (value.kind == Json::kAbsent || value.kind == Json::kNull) return std::string();
    if (value.kind != Json::kString) {
      return Bad(Where(node) + ": " + std::string(key) + " '" + value.text +
                 "': Envoy's YAML reader makes " + std::string(KindName(value.kind)) +
                 " of it, and the field is a string (quote it)");
    }
    return value.text;
  }

  // An enum field: a name of `names` or its number; absent or null is the
  // value 0.
  Result<int> Enum(yaml_node_t* mapping, std::string_view key, EnumNames names) const {
    yaml_node_t* node = Get(mapping, key);
    const JsonValue value = Value(node);
    if (value.kind == Json::kAbsent || value.kind == Json::kNull) return 0;
    std::optional<int64_t> number;
    if (value.kind == Json::kNumber) number = value.number;
    for (const auto& [name, n] : names) {
      if ((value.kind == Json::kString && value.text == name) || number == n) return n;
    }
    if (value.kind == Json::kString) {
      int64_t parsed = 0;
      const auto [end, error] =
          std::from_chars(value.text.data(), value.text.data() + value.text.size(), parsed);
      if (error == std::errc() && end == value.text.data() + value.text.size()) {
        for (const auto& [name, n] : names) {
          if (parsed == n) return n;
        }
      }
    }
    std::string list;
    for (const auto& [name, n] : names) list += (list.empty() ? "" : ", ") + std::string(name);
    return Bad(Where(node) + ": " + std::string(key) + " '" + value.text +
               "' is not one of Envoy's " + list);
  }

  // A double field (envoy.type.v3.Percent's value); nullopt if absent or null.
  Result<std::optional<double>> Double(yaml_node_t* mapping, std::string_view key) const {
    yaml_node_t* node = Get(mapping, key);
    const JsonValue value = Value(node);
    if (value.kind == Json::kAbsent || value.kind == Json::kNull) {
      return std::optional<double>();
    }
    if (value.kind == Json::kNumber) return std::optional<double>(static_cast<double>(value.number));
    if (value.kind == Json::kString) {
      if (value.text == "NaN") return std::optional<double>(NAN);
      if (value.text == "Infinity") return std::optional<double>(INFINITY);
      if (value.text == "-Infinity") return std::optional<double>(-INFINITY);
      if (const std::optional<double> real = SimpleAtod(value.text)) return real;
    }
    return Bad(Where(node) + ": " + std::string(key) + " '" + value.text +
               "': not a number to Envoy's YAML and JSON readers");
  }

 private:
  const YamlDocument& document_;
  const yaml_node_t* nodes_;
};

// ---- The host set ---------------------------------------------------------------------

// Envoy's LocalityLess order: region, zone, sub_zone, byte by byte.
using Locality = std::tuple<std::string, std::string, std::string>;

std::string LocalityText(const Locality& locality) {
  const auto& [region, zone, sub_zone] = locality;
  return "{region: '" + region + "', zone: '" + zone + "', sub_zone: '" + sub_zone + "'}";
}

// A host's state from its health_status (HostImplBase::setEdsHealthFlag):
// UNKNOWN and HEALTHY are healthy, UNHEALTHY and TIMEOUT failed, DEGRADED
// degraded, DRAINING excluded (failed in an Envoy without
// envoy.reloadable_features.exclude_host_in_eds_status_draining).
enum class Health { kHealthy, kDegraded, kFailed, kDraining };

struct Host {
  size_t line = 0;
  uint32_t priority = 0;
  Locality locality;
  std::string address;  // as Envoy prints it
  std::string hostname;
  std::string hash_key;  // envoy.lb hash_key metadata, when a string
  std::string hashed;    // what the ring hashes (ResolveNodeFields)
  uint32_t weight = 1;
  Health health = Health::kHealthy;
  std::string status;  // health_status as written, for notes
};

// What Envoy's load balancer base decides from the health of each
// priority (source/common/upstream/load_balancer_impl.cc).
struct LoadPolicy {
  uint64_t overprovisioning_factor = 140;
  bool weighted_priority_health = false;
  uint64_t panic_threshold = 50;
};

// The priority whose ring a key takes, for every key, and whether that
// priority is in panic (its ring then has all its hosts, healthy or not).
struct Serving {
  uint32_t priority = 0;
  bool panic = false;
  std::set<uint32_t> priorities;  // every priority some key goes to
  friend bool operator==(const Serving& a, const Serving& b) {
    return a.priority == b.priority && a.panic == b.panic && a.priorities == b.priorities;
  }
};

struct PriorityHealth {
  uint64_t hosts = 0, healthy = 0, degraded = 0, excluded = 0;
  uint64_t weight = 0, healthy_weight = 0, degraded_weight = 0, excluded_weight = 0;
};

std::vector<PriorityHealth> HealthOf(const std::vector<Host>& hosts, uint32_t priorities,
                                     bool draining_excluded) {
  std::vector<PriorityHealth> out(priorities);
  for (const Host& host : hosts) {
    PriorityHealth& p = out[host.priority];
    ++p.hosts;
    p.weight += host.weight;
    if (host.health == Health::kHealthy) {
      ++p.healthy;
      p.healthy_weight += host.weight;
    } else if (host.health == Health::kDegraded) {
      ++p.degraded;
      p.degraded_weight += host.weight;
    } else if (host.health == Health::kDraining && draining_excluded) {
      ++p.excluded;
      p.excluded_weight += host.weight;
    }
  }
  return out;
}

// LoadBalancerBase's recalculatePerPriorityState, recalculatePerPriorityPanic
// and choosePriority(hash % 100 + 1) over the 100 slots a hash can take.
Serving ServingPriority(const std::vector<PriorityHealth>& priorities, const LoadPolicy& policy) {
  const size_t n = priorities.size();
  std::vector<uint32_t> health(n, 0), degraded(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const PriorityHealth& p = priorities[i];
    const uint64_t host_count = p.hosts - p.excluded;
    if (host_count == 0) continue;
    const uint64_t healthy = policy.weighted_priority_health ? p.healthy_weight : p.healthy;
    const uint64_t degraded_part =
        policy.weighted_priority_health ? p.degraded_weight : p.degraded;
    const uint64_t total =
        policy.weighted_priority_health ? p.weight - p.excluded_weight : host_count;
    health[i] = static_cast<uint32_t>(
        std::min<uint64_t>(100, policy.overprovisioning_factor * healthy / total));
    degraded[i] = static_cast<uint32_t>(
        std::min<uint64_t>(100, policy.overprovisioning_factor * degraded_part / total));
  }
  uint64_t sum = 0;
  for (size_t i = 0; i < n; ++i) sum += health[i] + degraded[i];
  const uint32_t availability = static_cast<uint32_t>(std::min<uint64_t>(sum, 100));
  std::vector<uint32_t> healthy_load(n, 0), degraded_load(n, 0);
  // distributeLoad: as much as each priority's availability takes, in order.
  const auto distribute = [&](std::vector<uint32_t>& load, const std::vector<uint32_t>& avail,
                              uint32_t total_load) {
    int first = -1;
    for (size_t i = 0; i < n; ++i) {
      if (first < 0 && avail[i] > 0) first = static_cast<int>(i);
      load[i] = std::min<uint32_t>(total_load, avail[i] * 100 / availability);
      total_load -= load[i];
    }
    return std::pair{first, total_load};
  };
  if (availability > 0) {
    const auto [first_healthy, left] = distribute(healthy_load, health, 100);
    const auto [first_degraded, rest] = distribute(degraded_load, degraded, left);
    if (rest != 0) {
      if (first_healthy != -1) {
        healthy_load[first_healthy] += rest;
      } else {
        degraded_load[first_degraded] += rest;
      }
    }
  }
  std::vector<bool> panic(n, false);
  const uint64_t threshold = std::min<uint64_t>(100, policy.panic_threshold);
  if (threshold == 0 && availability == 0) {
    healthy_load.assign(n, 0);
    healthy_load[0] = 100;
  } else {
    bool total_panic = true;
    for (size_t i = 0; i < n; ++i) {
      const PriorityHealth& p = priorities[i];
      const uint64_t host_count = p.hosts - p.excluded;
      const double healthy_percent =
          host_count == 0 ? 0.0 : 100.0 * static_cast<double>(p.healthy) / host_count;
      const double degraded_percent =
          host_count == 0 ? 0.0 : 100.0 * static_cast<double>(p.degraded) / host_count;
      panic[i] = availability == 100
                     ? false
                     : healthy_percent + degraded_percent < static_cast<double>(threshold);
      total_panic = total_panic && panic[i];
    }
    if (total_panic) {  // recalculateLoadInTotalPanic: by host counts
      uint64_t all = 0;
      for (const PriorityHealth& p : priorities) all += p.hosts;
      healthy_load.assign(n, 0);
      degraded_load.assign(n, 0);
      if (all == 0) {
        healthy_load[0] = 100;
      } else {
        uint32_t left = 100;
        int first = -1;
        for (size_t i = 0; i < n; ++i) {
          if (first == -1 && priorities[i].hosts != 0) first = static_cast<int>(i);
          healthy_load[i] = static_cast<uint32_t>(100 * priorities[i].hosts / all);
          left -= healthy_load[i];
        }
        healthy_load[first] += left;
      }
    }
  }
  Serving serving;
  for (uint32_t slot = 1; slot <= 100; ++slot) {
    uint32_t chosen = 0;  // Envoy's fallback when the loads do not add up
    uint32_t aggregate = 0;
    bool found = false;
    for (size_t i = 0; i < n && !found; ++i) {
      aggregate += healthy_load[i];
      if (slot <= aggregate) chosen = static_cast<uint32_t>(i), found = true;
    }
    for (size_t i = 0; i < n && !found; ++i) {
      aggregate += degraded_load[i];
      if (slot <= aggregate) chosen = static_cast<uint32_t>(i), found = true;
    }
    serving.priorities.insert(chosen);
  }
  serving.priority = *serving.priorities.begin();
  serving.panic = panic[serving.priority];
  return serving;
}

template <typename Unsigned>
Unsigned Gcd(Unsigned a, Unsigned b) {
  while (b != 0) a = std::exchange(b, a % b);
  return a;
}

// The hosts of one locality of the serving priority, in Envoy's order, and
// the weight Envoy registered for it (0: none).
struct LocalityHosts {
  Locality locality;
  uint64_t weight = 0;
  std::vector<size_t> hosts;  // indices into EnvoyCluster::servers
};

// Envoy weighs localities in two steps in doubles (thread_aware_lb_impl.cc
// normalizeLocalityWeights): a ring host's normalized weight is
// w x (lw / Σlw) / Σw, Σw over its locality's ring hosts and Σlw over
// every locality of the priority (one whose hosts are all off the ring
// keeps its share), and a locality of weight 0 takes none of its hosts. The
// engine normalizes integer weights in one step, W / ΣW. The integer
// weights W = w x lw x (L / Σw), L the least common multiple of the
// localities' sums, have Envoy's ratios; they replace the hosts' weights
// when they give the ring Envoy gives (the same entry count for every host,
// the same Maglev table), which the two roundings may not: then refused.
Status WeighLocalities(EnvoyCluster& cluster, const std::vector<LocalityHosts>& localities,
                       const std::vector<bool>& on_ring, const std::string& where) {
  uint64_t locality_sum = 0;
  uint64_t lcm = 1;
  std::vector<uint64_t> host_sums;  // each locality's sum of ring host weights
  for (const LocalityHosts& locality : localities) {
    locality_sum += locality.weight;
    uint64_t sum = 0;
    for (const size_t h : locality.hosts) sum += on_ring[h] ? cluster.program[h].weight : 0;
    if (locality.weight != 0 && sum > UINT32_MAX) {
      return Bad(where + ": the weights of the hosts of locality " +
                 LocalityText(locality.locality) +
                 " add up to more than 4294967295: Envoy refuses it (\"The sum of weights of all "
                 "upstream hosts in a locality exceeds 4294967295\")");
    }
    host_sums.push_back(sum);
    // within 2^32 x 2^32, as lcm stops growing once it passes 2^32
    if (locality.weight != 0 && sum != 0 && lcm <= UINT32_MAX) lcm = lcm / Gcd(lcm, sum) * sum;
  }
  const std::string beyond_32_bits =
      where + ": these locality weights need integer weights beyond 32 bits to be "
              "reproduced: chash cannot build Envoy's ring of them";
  if (locality_sum > UINT32_MAX) {
    return Bad(where + ": the locality weights add up to more than 4294967295: Envoy refuses "
                       "it (\"The sum of weights of all localities at the same priority "
                       "exceeds 4294967295\")");
  }
  if (lcm > UINT32_MAX) return Bad(beyond_32_bits);
  std::vector<double> envoy(cluster.program.size(), 0.0);
  std::vector<unsigned __int128> scaled(cluster.program.size(), 0);
  bool any = false;
  for (size_t l = 0; l < localities.size(); ++l) {
    const LocalityHosts& locality = localities[l];
    const uint64_t sum = host_sums[l];
    if (locality.weight == 0 || sum == 0) continue;
    const double normalized_locality =
        static_cast<double>(locality.weight) / static_cast<double>(locality_sum);
    for (const size_t h : locality.hosts) {
      if (!on_ring[h]) continue;
      const uint32_t w = cluster.program[h].weight;
      envoy[h] = w * normalized_locality / static_cast<double>(sum);
      scaled[h] = static_cast<unsigned __int128>(w) * locality.weight * (lcm / sum);
      any = true;
    }
  }
  if (!any) {
    return Bad(where + ": no ring host is in a locality with a weight: Envoy's ring has no "
                       "host (a locality's weight counts only with `locality` and "
                       "load_balancing_weight both given)");
  }
  unsigned __int128 total = 0;
  unsigned __int128 common = 0;
  for (const unsigned __int128 w : scaled) {
    total += w;
    common = Gcd(common, w);
  }
  if (common == 0 || total / common > UINT32_MAX) return Bad(beyond_32_bits);
  std::vector<NodeInfo> nodes(cluster.program.size());
  for (size_t h = 0; h < nodes.size(); ++h) {
    nodes[h].weight = static_cast<uint32_t>(scaled[h] / common);
  }
  const std::vector<double> integer = internal::EnvoyNormalizedWeights(nodes);
  bool same = true;
  if (cluster.options.flavor == Flavor::kEnvoyRing) {
    same = internal::EnvoyRingEntries(cluster.options.envoy_ring, envoy) ==
           internal::EnvoyRingEntries(cluster.options.envoy_ring, integer);
  } else {
    // What each host's ring hashes, as the builder will pick it.
    std::vector<std::string> hashed;
    for (const ProgramServer& server : cluster.program) {
      Result<internal::HashedNode> node =
          internal::ResolveNodeFields(cluster.options, server.address, server.Node());
      if (!node.ok()) return node.status();
      hashed.push_back(std::move(node.value().replaced).value_or(server.address));
    }
    const std::vector<std::string_view> keys(hashed.begin(), hashed.end());
    const size_t m = cluster.options.maglev.table_size;
    std::vector<uint16_t> a(m, 0), b(m, 0);
    internal::MaglevFill(keys, envoy, a);
    internal::MaglevFill(keys, integer, b);
    same = a == b;
  }
  if (!same) {
    return Bad(where + ": Envoy's two-step normalization of these locality weights rounds so "
                       "that no integer weights give its ring (or a locality of weight whose "
                       "hosts are all off the ring keeps its share and shrinks Envoy's ring): "
                       "chash cannot build it exactly");
  }
  for (size_t h = 0; h < nodes.size(); ++h) {
    cluster.program[h].weight = nodes[h].weight;
    cluster.servers[h].weight = nodes[h].weight;
  }
  return Status();
}

// ---- The cluster ----------------------------------------------------------------------

constexpr EnumName kLbPolicies[] = {
    {"ROUND_ROBIN", 0}, {"LEAST_REQUEST", 1}, {"RING_HASH", 2}, {"RANDOM", 3},
    {"MAGLEV", 5},      {"CLUSTER_PROVIDED", 6}, {"LOAD_BALANCING_POLICY_CONFIG", 7}};
constexpr EnumName kDiscoveryTypes[] = {
    {"STATIC", 0}, {"STRICT_DNS", 1}, {"LOGICAL_DNS", 2}, {"EDS", 3}, {"ORIGINAL_DST", 4}};
constexpr EnumName kHealthStatuses[] = {{"UNKNOWN", 0},  {"HEALTHY", 1}, {"UNHEALTHY", 2},
                                       {"DRAINING", 3}, {"TIMEOUT", 4}, {"DEGRADED", 5}};
constexpr EnumName kHashFunctions[] = {{"XX_HASH", 0}, {"MURMUR_HASH_2", 1}};
constexpr EnumName kProtocols[] = {{"TCP", 0}, {"UDP", 1}};

std::string_view NameOf(EnumNames names, int n) {
  for (const auto& [name, value] : names) {
    if (value == n) return name;
  }
  return "?";
}

// The refusal of a key that decides Envoy's answer in a way chash does not
// model, if the key is given (and not null).
Status RefuseIfGiven(const EnvoyYaml& yaml, yaml_node_t* mapping, std::string_view key,
                     std::string_view why) {
  yaml_node_t* node = yaml.Get(mapping, key);
  const Json kind = yaml.Value(node).kind;
  if (kind == Json::kAbsent || kind == Json::kNull) return Status();
  return Bad(yaml.Where(node) + ": " + std::string(key) + ": " + std::string(why));
}

// The lb_policy's own config message (`own`, nullptr if not given), its keys
// checked; the other policy's config refused, since this policy does not
// read it.
Result<yaml_node_t*> PolicyConfig(const EnvoyYaml& yaml, yaml_node_t* cluster,
                                  std::string_view policy, std::string_view own,
                                  std::string_view other,
                                  std::initializer_list<std::string_view> keys) {
  if (Status refused = RefuseIfGiven(yaml, cluster, other,
                                     "given with lb_policy " + std::string(policy) +
                                         ", which does not read it");
      !refused.ok()) {
    return refused;
  }
  return yaml.Message(cluster, own, keys);
}

// A Locality message: (region, zone, sub_zone), nullopt if not given.
Result<std::optional<Locality>> ReadLocality(const EnvoyYaml& yaml, yaml_node_t* mapping) {
  Result<yaml_node_t*> node = yaml.Message(mapping, "locality", {"region", "zone", "sub_zone"});
  if (!node.ok()) return node.status();
  if (node.value() == nullptr) return std::optional<Locality>();
  Locality locality;
  for (auto [field, key] : {std::pair{&std::get<0>(locality), "region"},
                            {&std::get<1>(locality), "zone"},
                            {&std::get<2>(locality), "sub_zone"}}) {
    Result<std::string> text = yaml.String(node.value(), key);
    if (!text.ok()) return text.status();
    *field = std::move(text).value();
  }
  return std::optional<Locality>(std::move(locality));
}

struct ClusterPolicy {
  bool locality_weighted = false;
  bool use_hostname = false;
  LoadPolicy load;
};

// lb_policy and its ring_hash_lb_config or maglev_lb_config, and the other
// cluster keys that decide which ring Envoy builds.
Status ReadLbPolicy(const EnvoyYaml& yaml, yaml_node_t* cluster, RingOptions& options) {
  Result<int> type = yaml.Enum(cluster, "type", kDiscoveryTypes);
  if (!type.ok()) return type.status();
  if (type.value() != 0) {
    return Bad(yaml.Where(yaml.Get(cluster, "type")) + ": cluster type " +
               std::string(NameOf(kDiscoveryTypes, type.value())) +
               ": chash reads STATIC clusters, whose load_assignment gives the hosts' IP "
               "addresses (Envoy resolves or discovers the others' hosts at run time)");
  }
  for (const auto& [key, why] : std::initializer_list<std::pair<std::string_view, std::string_view>>{
           {"cluster_type", "a custom cluster's hosts are its extension's: chash reads STATIC "
                            "clusters"},
           {"load_balancing_policy", "chash reads the ring from lb_policy RING_HASH or MAGLEV "
                                     "(with ring_hash_lb_config or maglev_lb_config), not from "
                                     "a typed load_balancing_policy"},
           {"lb_subset_config", "the subset load balancer builds a ring a subset of the hosts, "
                                "chosen by each request's metadata: chash builds one ring"}}) {
    if (Status refused = RefuseIfGiven(yaml, cluster, key, why); !refused.ok()) return refused;
  }
  Result<int> policy = yaml.Enum(cluster, "lb_policy", kLbPolicies);
  if (!policy.ok()) return policy.status();
  yaml_node_t* where = yaml.Get(cluster, "lb_policy");
  if (where == nullptr) where = cluster;
  if (policy.value() == 2) {
    options.flavor = Flavor::kEnvoyRing;
    Result<yaml_node_t*> config =
        PolicyConfig(yaml, cluster, "RING_HASH", "ring_hash_lb_config", "maglev_lb_config",
                     {"minimum_ring_size", "maximum_ring_size", "hash_function"});
    if (!config.ok()) return config.status();
    Result<std::optional<uint64_t>> min =
        yaml.Uint(config.value(), "minimum_ring_size", 0, 8388608, "lte 8388608");
    if (!min.ok()) return min.status();
    Result<std::optional<uint64_t>> max =
        yaml.Uint(config.value(), "maximum_ring_size", 0, 8388608, "lte 8388608");
    if (!max.ok()) return max.status();
    EnvoyRingOptions& ring = options.envoy_ring;
    ring.minimum_ring_size = min.value().value_or(1024);
    ring.maximum_ring_size = max.value().value_or(8388608);
    if (ring.minimum_ring_size == 0) {
      return Bad(yaml.Where(yaml.Get(config.value(), "minimum_ring_size")) +
                 ": minimum_ring_size 0: Envoy takes it and then chooses no host for any "
                 "request (envoyproxy/envoy#31724): chash refuses it");
    }
    if (ring.minimum_ring_size > ring.maximum_ring_size) {
      return Bad(yaml.Where(config.value()) + ": ring_hash_lb_config: Envoy refuses it (\"ring "
                                              "hash: minimum_ring_size (" +
                 std::to_string(ring.minimum_ring_size) + ") > maximum_ring_size (" +
                 std::to_string(ring.maximum_ring_size) + ")\")");
    }
    Result<int> function =
        yaml.Enum(config.value(), "hash_function", kHashFunctions);
    if (!function.ok()) return function.status();
    ring.hash_function = function.value() == 1 ? EnvoyHash::kMurmurHash2 : EnvoyHash::kXxHash;
    return Status();
  }
  if (policy.value() == 5) {
    options.flavor = Flavor::kEnvoyMaglev;
    Result<yaml_node_t*> config = PolicyConfig(yaml, cluster, "MAGLEV", "maglev_lb_config",
                                               "ring_hash_lb_config", {"table_size"});
    if (!config.ok()) return config.status();
    Result<std::optional<uint64_t>> size =
        yaml.Uint(config.value(), "table_size", 0, 5000011, "lte 5000011");
    if (!size.ok()) return size.status();
    options.maglev.table_size = size.value().value_or(65537);
    // Before anything fills a table: a table of a size that is not prime
    // is never full.
    if (!internal::IsPrime(options.maglev.table_size)) {
      return Bad(yaml.Where(yaml.Get(config.value(), "table_size")) + ": table_size " +
                 std::to_string(options.maglev.table_size) +
                 ": Envoy refuses it (\"The table size of maglev must be prime number\")");
    }
    return Status();
  }
  return Bad(yaml.Where(where) + ": cluster lb_policy is '" +
             std::string(NameOf(kLbPolicies, policy.value())) +
             "': chash reads RING_HASH and MAGLEV clusters");
}

Status ReadCommonLbConfig(const EnvoyYaml& yaml, yaml_node_t* cluster, ClusterPolicy& out) {
  Result<yaml_node_t*> common =
      yaml.Message(cluster, "common_lb_config",
                   {"healthy_panic_threshold", "locality_weighted_lb_config",
                    "zone_aware_lb_config", "consistent_hashing_lb_config"},
                   // the thread-aware balancers do no zone-aware routing; the others
                   // act on connections, merge windows and override hosts
                   {"update_merge_window", "ignore_new_hosts_until_first_hc",
                    "close_connections_on_host_set_change", "override_host_status"});
  if (!common.ok()) return common.status();
  Result<yaml_node_t*> locality = yaml.Message(common.value(), "locality_weighted_lb_config");
  if (!locality.ok()) return locality.status();
  Result<yaml_node_t*> zone_aware = yaml.Message(common.value(), "zone_aware_lb_config");
  if (!zone_aware.ok()) return zone_aware.status();
  if (locality.value() != nullptr && zone_aware.value() != nullptr) {
    return Bad(yaml.Where(zone_aware.value()) +
               ": zone_aware_lb_config beside locality_weighted_lb_config: Envoy refuses two "
               "members of the locality_config_specifier oneof");
  }
  if (Status keys = yaml.CheckKeys(locality.value(), "locality_weighted_lb_config", {});
      !keys.ok()) {
    return keys;
  }
  out.locality_weighted = locality.value() != nullptr;
  Result<yaml_node_t*> threshold =
      yaml.Message(common.value(), "healthy_panic_threshold", {"value"});
  if (!threshold.ok()) return threshold.status();
  if (threshold.value() != nullptr) {
    Result<std::optional<double>> percent = yaml.Double(threshold.value(), "value");
    if (!percent.ok()) return percent.status();
    const double value = percent.value().value_or(0.0);
    if (!(value >= 0.0 && value <= 100.0)) {
      return Bad(yaml.Where(threshold.value()) + ": healthy_panic_threshold " +
                 std::to_string(value) + ": Envoy refuses it (Percent.value: gte 0, lte 100)");
    }
    // ProtobufPercentHelper::convertPercent, as Envoy truncates it
    out.load.panic_threshold = static_cast<uint64_t>(100 * (value / 100.0));
  }
  Result<yaml_node_t*> hashing = yaml.Message(common.value(), "consistent_hashing_lb_config",
                                              {"use_hostname_for_hashing", "hash_balance_factor"});
  if (!hashing.ok()) return hashing.status();
  if (Status refused = RefuseIfGiven(
          yaml, hashing.value(), "hash_balance_factor",
          "bounded loads: Envoy moves a key off its host while that host is loaded, which no "
          "ring predicts; chash answers for the ring alone (remove it to read the ring)");
      !refused.ok()) {
    return refused;
  }
  Result<bool> hostname = yaml.Bool(hashing.value(), "use_hostname_for_hashing");
  if (!hostname.ok()) return hostname.status();
  out.use_hostname = hostname.value();
  return Status();
}

// One lb_endpoint's host (its address, weight, health and hash key).
Result<Host> ReadHost(const EnvoyYaml& yaml, yaml_node_t* lb_endpoint, const RingOptions& ring,
                      bool use_hostname, std::vector<std::string>& notes) {
  if (Status keys = yaml.CheckKeys(lb_endpoint, "lb_endpoint",
                                   {"endpoint", "health_status", "metadata",
                                    "load_balancing_weight"});
      !keys.ok()) {
    return keys;
  }
  Host host;
  host.line = lb_endpoint->start_mark.line + 1;
  Result<yaml_node_t*> endpoint = yaml.Message(lb_endpoint, "endpoint", {"address", "hostname"},
                                               // neither is hashed
                                               {"health_check_config", "additional_addresses"});
  if (!endpoint.ok()) return endpoint.status();
  Result<yaml_node_t*> address = yaml.Message(endpoint.value(), "address", {"socket_address"});
  if (!address.ok()) return address.status();
  Result<yaml_node_t*> socket = yaml.Message(address.value(), "socket_address",
                                             {"address", "port_value", "protocol", "ipv4_compat"});
  if (!socket.ok()) return socket.status();
  if (socket.value() == nullptr) {
    return Bad(yaml.Where(lb_endpoint) +
               ": an lb_endpoint without endpoint.address.socket_address: chash reads hosts "
               "at IP socket addresses (a pipe or an internal address is not one)");
  }
  Result<std::string> ip = yaml.String(socket.value(), "address");
  if (!ip.ok()) return ip.status();
  if (ip.value().empty()) {
    return Bad(yaml.Where(socket.value()) +
               ": socket_address without address: Envoy refuses it (SocketAddress.address: "
               "min_len 1)");
  }
  Result<std::optional<uint64_t>> port =
      yaml.Uint(socket.value(), "port_value", 0, 65535, "port_value: lte 65535");
  if (!port.ok()) return port.status();
  if (Result<int> protocol = yaml.Enum(socket.value(), "protocol", kProtocols);
      !protocol.ok()) {
    return protocol.status();
  }
  if (Result<bool> compat = yaml.Bool(socket.value(), "ipv4_compat"); !compat.ok()) {
    return compat.status();
  }
  // Envoy's IP resolver takes no port as port 0.
  Result<std::string> printed =
      internal::EnvoyAddressString(ip.value(), static_cast<uint32_t>(port.value().value_or(0)));
  if (!printed.ok()) {
    return Bad(yaml.Where(yaml.Get(socket.value(), "address")) + ": " +
               printed.status().message() + ": Envoy refuses it");
  }
  host.address = std::move(printed).value();
  Result<std::optional<uint64_t>> weight = yaml.Uint(
      lb_endpoint, "load_balancing_weight", 1, UINT32_MAX, "LbEndpoint.load_balancing_weight: "
                                                           "gte 1");
  if (!weight.ok()) return weight.status();
  host.weight = static_cast<uint32_t>(weight.value().value_or(1));
  Result<int> status = yaml.Enum(lb_endpoint, "health_status", kHealthStatuses);
  if (!status.ok()) return status.status();
  host.status = NameOf(kHealthStatuses, status.value());
  switch (status.value()) {
    case 2:
    case 4:
      host.health = Health::kFailed;
      break;
    case 3:
      host.health = Health::kDraining;
      break;
    case 5:
      host.health = Health::kDegraded;
      break;
    default:
      host.health = Health::kHealthy;
      break;
  }
  Result<std::string> hostname = yaml.String(endpoint.value(), "hostname");
  if (!hostname.ok()) return hostname.status();
  // What Envoy hashes (its hashKey) is the engine's rule (NodeOptions):
  // the hash_key metadata if it is a string, the hostname with
  // use_hostname_for_hashing, the address.
  Result<yaml_node_t*> metadata =
      yaml.Message(lb_endpoint, "metadata", {"filter_metadata", "typed_filter_metadata"});
  if (!metadata.ok()) return metadata.status();
  Result<yaml_node_t*> filters = yaml.Message(metadata.value(), "filter_metadata");
  if (!filters.ok()) return filters.status();
  Result<yaml_node_t*> lb = yaml.Message(filters.value(), "envoy.lb");
  if (!lb.ok()) return lb.status();
  yaml_node_t* key_node = yaml.Get(lb.value(), "hash_key");
  const JsonValue key = yaml.Value(key_node);
  if (key.kind != Json::kAbsent && key.kind != Json::kNull && key.kind != Json::kString) {
    notes.push_back(yaml.Where(key_node) + ": hash_key '" + key.text +
                    "' is " + std::string(KindName(key.kind)) +
                    " to Envoy's YAML reader, not a string: Envoy ignores it (quote it to make "
                    "it a string)");
  }
  host.hostname = hostname.value();
  if (key.kind == Json::kString) host.hash_key = key.text;
  NodeOptions fields{
      .hostname = host.hostname, .hash_key = host.hash_key, .hash_hostname = use_hostname};
  Result<internal::HashedNode> hashed = internal::ResolveNodeFields(ring, host.address, fields);
  if (!hashed.ok()) {
    return Bad(yaml.Where(endpoint.value()) + ": " + hashed.status().message() +
               " (chash refuses it)");
  }
  host.hashed = std::move(hashed.value().replaced).value_or(host.address);
  return host;
}

// Bootstrap node.locality, Envoy's local locality (placed first).
Result<std::optional<Locality>> LocalLocality(const EnvoyYaml& yaml) {
  Result<yaml_node_t*> node = yaml.Message(yaml.root(), "node");
  if (!node.ok()) return node.status();
  if (node.value() == nullptr) return std::optional<Locality>();
  return ReadLocality(yaml, node.value());
}

Result<EnvoyCluster> ReadCluster(const EnvoyYaml& yaml, yaml_node_t* cluster,
                                 const std::optional<Locality>& local) {
  EnvoyCluster result;
  if (Status policy = ReadLbPolicy(yaml, cluster, result.options); !policy.ok()) return policy;
  ClusterPolicy policy;
  if (Status common = ReadCommonLbConfig(yaml, cluster, policy); !common.ok()) return common;
  for (const char* runtime : {"health_checks", "outlier_detection"}) {
    if (yaml_node_t* node = yaml.Get(cluster, runtime)) {
      result.notes.push_back(yaml.Where(node) + ": " + runtime +
                             ": Envoy takes hosts off the ring as they fail at run time; this "
                             "is the ring while every host passes");
    }
  }

  Result<yaml_node_t*> assignment =
      yaml.Message(cluster, "load_assignment", {"cluster_name", "endpoints", "policy"});
  if (!assignment.ok()) return assignment.status();
  if (assignment.value() == nullptr) {
    return Bad(yaml.Where(cluster) + ": the cluster has no load_assignment");
  }
  yaml_node_t* load = assignment.value();
  const std::string where = yaml.Where(load);
  Result<std::string> cluster_name = yaml.String(load, "cluster_name");
  if (!cluster_name.ok()) return cluster_name.status();
  if (cluster_name.value().empty()) {
    return Bad(where + ": load_assignment without cluster_name: Envoy refuses it "
                       "(ClusterLoadAssignment.cluster_name: min_len 1)");
  }
  Result<yaml_node_t*> lb_policy =
      yaml.Message(load, "policy", {"overprovisioning_factor", "weighted_priority_health"},
                   // requests dropped at random, EDS staleness
                   {"drop_overloads", "endpoint_stale_after"});
  if (!lb_policy.ok()) return lb_policy.status();
  Result<std::optional<uint64_t>> factor = yaml.Uint(
      lb_policy.value(), "overprovisioning_factor", 1, UINT32_MAX, "overprovisioning_factor: gt 0");
  if (!factor.ok()) return factor.status();
  policy.load.overprovisioning_factor = factor.value().value_or(140);
  Result<bool> weighted_health = yaml.Bool(lb_policy.value(), "weighted_priority_health");
  if (!weighted_health.ok()) return weighted_health.status();
  policy.load.weighted_priority_health = weighted_health.value();

  // Every host in configuration order, and the locality weights each
  // priority registers (PriorityStateManager::initializePriorityFor: only
  // with `locality` and load_balancing_weight both given; the last one
  // given for a locality wins).
  std::vector<Host> hosts;
  std::vector<std::map<Locality, uint64_t>> weights;
  uint32_t priorities = 1;
  Result<std::vector<yaml_node_t*>> endpoints = yaml.List(load, "endpoints");
  if (!endpoints.ok()) return endpoints.status();
  for (yaml_node_t* group : endpoints.value()) {
    if (yaml.Value(group).kind != Json::kObject) {
      return Bad(yaml.Where(group) + ": an endpoints item must be a mapping (LocalityLbEndpoints)");
    }
    if (Status keys = yaml.CheckKeys(
            group, "endpoints item",
            {"locality", "lb_endpoints", "load_balancing_weight", "priority"},
            {"proximity", "metadata"});  // not read by Envoy's ring
        !keys.ok()) {
      return keys;
    }
    Result<std::optional<uint64_t>> priority =
        yaml.Uint(group, "priority", 0, 128, "LocalityLbEndpoints.priority: lte 128");
    if (!priority.ok()) return priority.status();
    const uint32_t p = static_cast<uint32_t>(priority.value().value_or(0));
    priorities = std::max(priorities, p + 1);
    weights.resize(priorities);
    Result<std::optional<Locality>> locality = ReadLocality(yaml, group);
    if (!locality.ok()) return locality.status();
    Result<std::optional<uint64_t>> weight =
        yaml.Uint(group, "load_balancing_weight", 1, UINT32_MAX,
                  "LocalityLbEndpoints.load_balancing_weight: gte 1");
    if (!weight.ok()) return weight.status();
    if (locality.value() && weight.value()) weights[p][*locality.value()] = *weight.value();
    Result<std::vector<yaml_node_t*>> lb_endpoints = yaml.List(group, "lb_endpoints");
    if (!lb_endpoints.ok()) return lb_endpoints.status();
    for (yaml_node_t* lb_endpoint : lb_endpoints.value()) {
      if (yaml.Value(lb_endpoint).kind != Json::kObject) {
        return Bad(yaml.Where(lb_endpoint) + ": an lb_endpoints item must be a mapping");
      }
      Result<Host> host =
          ReadHost(yaml, lb_endpoint, result.options, policy.use_hostname, result.notes);
      if (!host.ok()) return host.status();
      host.value().priority = p;
      host.value().locality = locality.value().value_or(Locality());
      hosts.push_back(std::move(host).value());
    }
  }
  if (hosts.empty()) return Bad(where + ": the cluster has no load_assignment lb_endpoints");

  // The priority whose ring answers, with DRAINING hosts excluded (Envoy's
  // default) and counted unhealthy (Envoy before the change): refused where
  // the two differ.
  const Serving serving = ServingPriority(HealthOf(hosts, priorities, true), policy.load);
  const bool draining = std::any_of(hosts.begin(), hosts.end(),
                                    [](const Host& h) { return h.health == Health::kDraining; });
  if (draining && !(ServingPriority(HealthOf(hosts, priorities, false), policy.load) == serving)) {
    return Bad(where + ": health_status DRAINING: Envoy excludes a draining host from its "
                       "priority's health (envoy.reloadable_features."
                       "exclude_host_in_eds_status_draining) where older Envoys counted it "
                       "unhealthy, and here the two choose different rings: chash refuses it");
  }
  if (serving.priorities.size() > 1) {
    std::string list;
    for (const uint32_t p : serving.priorities) {
      list += (list.empty() ? "" : ", ") + std::to_string(p);
    }
    return Bad(where + ": Envoy splits the keys between priorities " + list +
               " (by request hash mod 100, as their hosts' health allows): chash builds one "
               "ring");
  }
  const uint32_t p = serving.priority;
  std::vector<size_t> in_priority;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (hosts[i].priority == p) in_priority.push_back(i);
  }
  if (p != 0) {
    result.notes.push_back(where + ": every key goes to priority " + std::to_string(p) +
                           ", as the lower priorities' hosts are missing or not healthy");
  }
  // The host order of Envoy's ring: per locality (std::map by LocalityLess,
  // the local locality first) with locality weighting, else as configured.
  std::vector<LocalityHosts> groups;
  std::vector<size_t> order;
  if (policy.locality_weighted) {
    std::map<Locality, std::vector<size_t>> by_locality;
    for (const size_t i : in_priority) by_locality[hosts[i].locality].push_back(i);
    if (local && by_locality.count(*local) != 0) {
      groups.push_back({*local, 0, by_locality[*local]});
      by_locality.erase(*local);
    }
    for (auto& [locality, members] : by_locality) {
      groups.push_back({locality, 0, std::move(members)});
    }
    for (LocalityHosts& group : groups) {
      const auto it = weights[p].find(group.locality);
      group.weight = it == weights[p].end() ? 0 : it->second;
      for (size_t& member : group.hosts) {
        order.push_back(member);
        member = order.size() - 1;  // now an index into result.servers
      }
    }
  } else {
    order = in_priority;
  }
  std::vector<bool> on_ring;
  size_t off_ring = 0;
  std::map<std::string, size_t> line_of_key;
  uint64_t ring_weight = 0;
  for (const size_t i : order) {
    const Host& host = hosts[i];
    const bool ring = serving.panic || host.health == Health::kHealthy;
    if (const auto [it, fresh] = line_of_key.emplace(host.hashed, host.line); !fresh) {
      return Bad(yaml.path() + ":" + std::to_string(host.line) + ": this host is hashed as '" +
                 host.hashed + "', as the host on line " + std::to_string(it->second) +
                 " is: Envoy orders their equal entries as it sorts them (Maglev: by host "
                 "pointer), which no ring reproduces: chash refuses two hosts of one key");
    }
    on_ring.push_back(ring);
    off_ring += ring ? 0 : 1;
    ring_weight += ring ? host.weight : 0;
    result.servers.push_back({host.address, ring ? host.weight : 0, host.line});
    ProgramServer server;
    server.address = host.address;
    server.hostname = host.hostname;
    server.hash_key = host.hash_key;
    server.hash_hostname = policy.use_hostname;
    server.weight = ring ? host.weight : 0;
    result.program.push_back(std::move(server));
  }
  if (serving.panic) {
    result.notes.push_back(where + ": priority " + std::to_string(p) +
                           " is in panic (too few healthy hosts for healthy_panic_threshold " +
                           std::to_string(policy.load.panic_threshold) +
                           "%): Envoy's ring is of all its hosts, healthy or not");
  } else if (off_ring != 0) {
    result.notes.push_back(where + ": " + std::to_string(off_ring) + " of priority " +
                           std::to_string(p) + "'s " + std::to_string(order.size()) +
                           " hosts are not healthy (health_status UNHEALTHY, TIMEOUT, DRAINING "
                           "or DEGRADED): Envoy's ring is of the healthy ones");
  }
  if (ring_weight == 0) {
    return Bad(where + ": priority " + std::to_string(p) +
               " has no healthy host and is not in panic: Envoy chooses no host for any key");
  }
  if (policy.locality_weighted) {
    for (size_t h = 0; h < result.program.size(); ++h) {
      result.program[h].weight = hosts[order[h]].weight;  // WeighLocalities uses on_ring
    }
    if (Status exact = WeighLocalities(result, groups, on_ring, where); !exact.ok()) return exact;
  } else if (ring_weight > UINT32_MAX) {
    return Bad(where + ": the weights of the ring's hosts add up to more than 4294967295: Envoy "
                       "refuses it (\"The sum of weights of all upstream hosts in a locality "
                       "exceeds 4294967295\")");
  }
  return result;
}

}  // namespace

Result<EnvoyCluster> ReadEnvoyCluster(const std::string& path, const std::string& name) {
  Result<YamlDocument> loaded = YamlDocument::Load(path);
  if (!loaded.ok()) return loaded.status();
  const EnvoyYaml yaml(loaded.value());
  yaml_node_t* root = yaml.root();
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
    const std::string cluster_name = YamlDocument::Scalar(yaml.Get(c, "name"));
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
  Result<std::optional<Locality>> local = LocalLocality(yaml);
  if (!local.ok()) return local.status();
  return ReadCluster(yaml, cluster, local.value());
}

}  // namespace chash::cli
