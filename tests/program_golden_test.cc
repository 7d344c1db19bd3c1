// The program rings against the real programs' answers: the sets under
// tests/data/{haproxy,libmemcached,twemproxy,varnish,envoy}, recorded by
// tests/oracles/ from haproxy 2.6, libmemcached 1.1, nutcracker 0.5 and
// varnish 7.1 as Debian 12 ships them, and Envoy's own unit-test
// expectations (tests/data/PROVENANCE.md, tests/oracles/README.md). Each
// set's row in its sets.txt names the servers file, the keys and the
// program's options; each answer is `key,ADDR` (split at the last comma).
//
// The harness maps a set's options onto RingOptions the way an operator
// would configure chash for that program, builds the ring from the servers
// file, asks chash for every key and compares the server's ADDR. A set chash
// cannot express is skipped here with its reason, and the test fails if a
// program ends up with fewer answers compared than its data holds minus the
// skipped sets (so a parser that reads nothing cannot pass).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "chash/chash.h"
#include "test_util.h"

namespace chash {
namespace {

// ---- The oracles' files ----------------------------------------------------------------

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Lines of `text` split at '\n' only (a key may hold any other byte).
std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::vector<std::string> Fields(const std::string& line) {
  std::vector<std::string> fields;
  std::istringstream in(line);
  for (std::string field; in >> field;) fields.push_back(field);
  return fields;
}

struct ServerLine {
  std::string addr;
  std::string weight = "1";
  std::map<std::string, std::string> attrs;
};

// `ADDR [WEIGHT] [key=value ...]`, '#' starts a comment (common.py).
std::vector<ServerLine> ReadServers(const std::string& path) {
  std::vector<ServerLine> servers;
  for (std::string line : Lines(ReadFile(path))) {
    line = line.substr(0, line.find('#'));
    std::vector<std::string> fields = Fields(line);
    if (fields.empty()) continue;
    ServerLine server;
    server.addr = fields[0];
    size_t next = 1;
    if (next < fields.size() && fields[next].find('=') == std::string::npos) {
      server.weight = fields[next++];
    }
    for (; next < fields.size(); ++next) {
      const size_t eq = fields[next].find('=');
      server.attrs[fields[next].substr(0, eq)] = fields[next].substr(eq + 1);
    }
    servers.push_back(std::move(server));
  }
  return servers;
}

struct Answer {
  std::string key;
  std::string addr;
};

// `key,ADDR` rows; lines starting with '#' are comments (no key starts with
// '#': the oracles leave such keys out).
std::vector<Answer> ReadAnswers(const std::string& path) {
  std::vector<Answer> rows;
  for (const std::string& line : Lines(ReadFile(path))) {
    if (line.empty() || line[0] == '#') continue;
    const size_t comma = line.rfind(',');
    if (comma == std::string::npos) {
      ADD_FAILURE() << path << ": row without a comma";
      continue;
    }
    rows.push_back({line.substr(0, comma), line.substr(comma + 1)});
  }
  return rows;
}

struct SetRow {
  std::string name, servers, keys;
  std::map<std::string, std::string> options;  // "--x" -> value ("" for a flag)
};

std::vector<SetRow> ReadSets(const std::string& program) {
  std::vector<SetRow> sets;
  for (const std::string& line : Lines(ReadFile(testing::DataPath(program + "/sets.txt")))) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> columns;
    std::istringstream in(line);
    for (std::string column; std::getline(in, column, '\t');) columns.push_back(column);
    if (columns.size() < 4) {
      ADD_FAILURE() << program << "/sets.txt: short row " << line;
      continue;
    }
    SetRow row{columns[0], columns[1], columns[2], {}};
    const std::vector<std::string> words = Fields(columns[3]);
    for (size_t i = 0; i < words.size(); ++i) {
      const bool has_value = i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0;
      row.options[words[i]] = has_value ? words[i + 1] : "";
      if (has_value) ++i;
    }
    sets.push_back(std::move(row));
  }
  return sets;
}

std::string Option(const SetRow& set, const std::string& name, const std::string& otherwise = "") {
  const auto it = set.options.find(name);
  return it == set.options.end() ? otherwise : it->second;
}

uint32_t Weight(const ServerLine& server) {
  return static_cast<uint32_t>(std::stoul(server.weight));
}

// ---- One set ---------------------------------------------------------------------------

// How a set is asked: its ring, each node's ADDR, and how a key becomes the
// node chash answers.
struct SetPlan {
  RingOptions options;
  struct Node {
    std::string address;  // what RingBuilder::Add takes
    uint32_t weight;
    NodeOptions node;
    std::string addr;  // what the program answers
  };
  std::vector<Node> nodes;
  std::function<uint32_t(const Ring&, const std::string& key)> answer;
};

Ring BuildPlan(const SetPlan& setup, const std::string& what) {
  RingBuilder builder(setup.options);
  for (const SetPlan::Node& node : setup.nodes) {
    const Status added = builder.Add(node.address, node.weight, node.node);
    EXPECT_TRUE(added.ok()) << what << ": " << node.address << ": " << added.ToString();
  }
  Result<Ring> ring = std::move(builder).Build();
  EXPECT_TRUE(ring.ok()) << what << ": " << ring.status().ToString();
  return ring.ok() ? std::move(ring).value() : Ring();
}

struct Tally {
  size_t compared = 0;
  size_t rows = 0;
};

// Compares every answer of the set; returns how many were compared.
size_t CompareSet(const std::string& program, const SetRow& set, const SetPlan& setup) {
  const std::string what = program + "/" + set.name;
  const Ring ring = BuildPlan(setup, what);
  const std::vector<Answer> answers =
      ReadAnswers(testing::DataPath(program + "/" + set.name + ".csv"));
  EXPECT_FALSE(answers.empty()) << what;
  size_t wrong = 0;
  for (const Answer& answer : answers) {
    const uint32_t node = setup.answer(ring, answer.key);
    const std::string got = node < setup.nodes.size() ? setup.nodes[node].addr : "(none)";
    if (got != answer.addr && wrong++ == 0) {
      ADD_FAILURE() << what << ": key '" << answer.key << "': the program answered " << answer.addr
                    << ", chash " << got;
    }
  }
  EXPECT_EQ(wrong, 0u) << what << ": " << wrong << " of " << answers.size() << " answers differ";
  return answers.size();
}

// The attribute of a server line that names its node: haproxy's `id`,
// twemproxy's `name`.
enum class NodeAttr { kNone, kId, kName };

// A plan whose nodes are the servers as written (the program answers their
// ADDR), with their `attr` when they have one, and whose keys are looked up
// as they come.
SetPlan KeysPlan(Flavor flavor, const std::vector<ServerLine>& servers, NodeAttr attr) {
  SetPlan setup;
  setup.options.flavor = flavor;
  for (const ServerLine& server : servers) {
    NodeOptions node;
    if (attr == NodeAttr::kId && server.attrs.count("id")) {
      node.server_id = std::stoul(server.attrs.at("id"));
    }
    if (attr == NodeAttr::kName && server.attrs.count("name")) node.name = server.attrs.at("name");
    setup.nodes.push_back({server.addr, Weight(server), node, server.addr});
  }
  setup.answer = [](const Ring& ring, const std::string& key) { return ring.FindNode(key); };
  return setup;
}

size_t RowsOf(const std::string& program, const SetRow& set) {
  return ReadAnswers(testing::DataPath(program + "/" + set.name + ".csv")).size();
}

// Runs every set of `program` on every SIMD target; `make` returns the set's
// SetPlan, or nullopt with `skip` saying why chash cannot ask it.
void RunProgram(const std::string& program,
                const std::function<std::optional<SetPlan>(
                    const SetRow&, const std::vector<ServerLine>&, std::string& skip)>& make,
                const std::vector<std::string>& expected_skips = {}) {
  const std::vector<SetRow> sets = ReadSets(program);
  ASSERT_FALSE(sets.empty()) << program;
  std::vector<std::string> skipped;
  size_t rows = 0, compared = 0;
  testing::ForEachTarget([&](const std::string& target) {
    SCOPED_TRACE(target);
    skipped.clear();
    rows = compared = 0;
    for (const SetRow& set : sets) {
      const std::vector<ServerLine> servers =
          ReadServers(testing::DataPath(program + "/" + set.servers));
      std::string skip;
      const std::optional<SetPlan> setup = make(set, servers, skip);
      if (!setup) {
        skipped.push_back(set.name);
        EXPECT_FALSE(skip.empty()) << set.name;
        continue;
      }
      rows += RowsOf(program, set);
      compared += CompareSet(program, set, *setup);
    }
  });
  EXPECT_EQ(skipped, expected_skips) << program << ": the sets skipped";
  EXPECT_EQ(compared, rows);
  EXPECT_GT(compared, 100u) << program;
}

// ---- HAProxy ---------------------------------------------------------------------------

// What haproxy hashes of a request: `balance uri` the path before the first
// '?', `uri whole` all of it, `hdr(X-Key)` the header's first value with
// spaces and tabs trimmed (the oracle sends one header line).
std::string HaproxyKeyBytes(const std::string& key, const std::string& balance) {
  if (balance == "uri") return key.substr(0, key.find('?'));
  if (balance == "uri-whole") return key;
  std::string value = key.substr(0, key.find(','));
  const size_t first = value.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  value = value.substr(first);
  return value.substr(0, value.find_last_not_of(" \t") + 1);
}

TEST(ProgramGolden, Haproxy) {
  RunProgram("haproxy",
             [](const SetRow& set, const std::vector<ServerLine>& servers,
                std::string&) -> std::optional<SetPlan> {
               SetPlan setup = KeysPlan(Flavor::kHaproxy, servers, NodeAttr::kId);
               const std::string function = Option(set, "--function");
               static const std::map<std::string, HaproxyHash> kFunctions = {
                   {"default", HaproxyHash::kSdbm},
                   {"sdbm", HaproxyHash::kSdbm},
                   {"djb2", HaproxyHash::kDjb2},
                   {"wt6", HaproxyHash::kWt6},
                   {"crc32", HaproxyHash::kCrc32}};
               setup.options.haproxy.hash_function = kFunctions.at(function);
               // `hash-type consistent` alone is sdbm with avalanche.
               setup.options.haproxy.avalanche =
                   function == "default" || set.options.count("--avalanche");
               const std::string balance = Option(set, "--balance");
               setup.answer = [balance](const Ring& ring, const std::string& key) {
                 return ring.FindNode(HaproxyKeyBytes(key, balance));
               };
               return setup;
             });
}

// ---- libmemcached ----------------------------------------------------------------------

const std::map<std::string, KetamaKeyHash>& KetamaHashNames() {
  static const std::map<std::string, KetamaKeyHash> kNames = {
      {"md5", KetamaKeyHash::kMd5},
      {"one_at_a_time", KetamaKeyHash::kOneAtATime},
      {"default", KetamaKeyHash::kOneAtATime},  // libmemcached's default
      {"crc", KetamaKeyHash::kCrc32},           // libmemcached's 15-bit "crc"
      {"crc32", KetamaKeyHash::kCrc32},         // twemproxy's 15-bit "crc32"
      {"crc32a", KetamaKeyHash::kCrc32a},
      {"crc16", KetamaKeyHash::kCrc16},
      {"fnv1_64", KetamaKeyHash::kFnv1_64},
      {"fnv1a_64", KetamaKeyHash::kFnv1a64},
      {"fnv1_32", KetamaKeyHash::kFnv1_32},
      {"fnv1a_32", KetamaKeyHash::kFnv1a32},
      {"hsieh", KetamaKeyHash::kHsieh},
      {"murmur", KetamaKeyHash::kMurmur},
      {"murmur3", KetamaKeyHash::kMurmur3},
      {"jenkins", KetamaKeyHash::kJenkins}};
  return kNames;
}

TEST(ProgramGolden, Libmemcached) {
  RunProgram(
      "libmemcached",
      [](const SetRow& set, const std::vector<ServerLine>& servers,
         std::string&) -> std::optional<SetPlan> {
        SetPlan setup = KeysPlan(Flavor::kKetamaMd5, servers, NodeAttr::kNone);
        const std::string mode = Option(set, "--mode");
        const std::string hash = Option(set, "--hash", "keep");
        // A server added with weight > 1 turns the weighted continuum on in
        // every consistent mode; the key hash stays the mode's.
        const bool heavy = std::any_of(servers.begin(), servers.end(),
                                       [](const ServerLine& s) { return Weight(s) > 1; });
        KetamaOptions& ketama = setup.options.ketama;
        if (mode == "weighted") {
          ketama.variant = KetamaVariant::kLibmemcachedWeighted;
        } else if (mode == "ketama") {
          ketama.variant =
              heavy ? KetamaVariant::kLibmemcachedWeighted : KetamaVariant::kLibmemcachedUnweighted;
          if (heavy && hash == "keep") ketama.key_hash = KetamaKeyHash::kOneAtATime;
        } else {
          ketama.variant =
              heavy ? KetamaVariant::kLibmemcachedSpyWeighted : KetamaVariant::kLibmemcachedSpy;
        }
        if (hash != "keep") ketama.key_hash = KetamaHashNames().at(hash);
        return setup;
      });
}

// ---- twemproxy -------------------------------------------------------------------------

TEST(ProgramGolden, Twemproxy) {
  RunProgram("twemproxy",
             [](const SetRow& set, const std::vector<ServerLine>& servers,
                std::string&) -> std::optional<SetPlan> {
               SetPlan setup = KeysPlan(Flavor::kKetamaMd5, servers, NodeAttr::kName);
               KetamaOptions& ketama = setup.options.ketama;
               ketama.variant = KetamaVariant::kTwemproxy;
               ketama.key_hash = KetamaHashNames().at(Option(set, "--hash", "fnv1a_64"));
               const std::string tag = Option(set, "--hash-tag");
               if (tag.size() == 2) ketama.hash_tag = {tag[0], tag[1]};
               return setup;
             });
}

// ---- Varnish ---------------------------------------------------------------------------

TEST(ProgramGolden, Varnish) {
  RunProgram("varnish",
             [](const SetRow& set, const std::vector<ServerLine>& servers,
                std::string& /*skip: none*/) -> std::optional<SetPlan> {
               SetPlan setup;
               setup.options.flavor = Flavor::kVarnishShard;
               setup.options.varnish.replicas =
                   static_cast<uint32_t>(std::stoul(Option(set, "--replicas", "67")));
               for (const ServerLine& server : servers) {
                 // The shard's ident, or the backend's name without one.
                 const std::string ident = server.attrs.count("ident") ? server.attrs.at("ident")
                                                                       : server.attrs.at("name");
                 // A REAL weight (`1.5`) goes to the engine as it is.
                 if (server.weight.find('.') != std::string::npos) {
                   setup.nodes.push_back(
                       {ident, 0, {.real_weight = std::stod(server.weight)}, server.addr});
                 } else {
                   setup.nodes.push_back({ident, Weight(server), {}, server.addr});
                 }
               }
               const std::string by = Option(set, "--by");
               const uint32_t alt = static_cast<uint32_t>(std::stoul(Option(set, "--alt", "0")));
               setup.answer = [by, alt](const Ring& ring, const std::string& key) {
                 // by=URL and by=KEY hash the text; by=KEY with an integer .key()
                 // takes it as the hash.
                 const uint64_t hash = by == "int" ? std::stoull(key) : ring.KeyHash(key);
                 DistinctNodeWalk walk = ring.WalkDistinctFromHash64(hash);
                 uint32_t node = Ring::kNoNode;
                 for (uint32_t k = 0; k <= alt; ++k) {
                   const uint32_t next = walk.Next();
                   if (next == Ring::kNoNode) break;
                   node = next;
                 }
                 return node;
               };
               return setup;
             });
}

// ---- Envoy -----------------------------------------------------------------------------

// Envoy's hosts: the key string (hash_key metadata, else the hostname with
// use_hostname_for_hashing, else the address), and the weight. Locality
// weights are given as integer weights proportional to Envoy's normalized
// weights (host weight / locality's host weight sum x locality weight /
// locality weight sum), hosts added locality by locality as Envoy walks them.
std::optional<SetPlan> EnvoyPlan(const SetRow& set, const std::vector<ServerLine>& servers) {
  SetPlan setup;
  const bool maglev = Option(set, "--lb") == "maglev";
  setup.options.flavor = maglev ? Flavor::kEnvoyMaglev : Flavor::kEnvoyRing;
  if (maglev) {
    setup.options.maglev.table_size = std::stoull(Option(set, "--table-size", "65537"));
  } else {
    setup.options.envoy_ring.minimum_ring_size =
        std::stoull(Option(set, "--min-ring-size", "1024"));
    setup.options.envoy_ring.maximum_ring_size =
        std::stoull(Option(set, "--max-ring-size", "8388608"));
    if (Option(set, "--hash") == "murmur2") {
      setup.options.envoy_ring.hash_function = EnvoyHash::kMurmurHash2;
    }
  }
  std::vector<uint64_t> locality_weights;
  {
    std::istringstream in(Option(set, "--locality-weights"));
    for (std::string w; std::getline(in, w, ',');) locality_weights.push_back(std::stoull(w));
  }
  const auto locality = [&](const ServerLine& s) -> size_t {
    return s.attrs.count("locality") ? std::stoul(s.attrs.at("locality")) : 0;
  };
  std::vector<size_t> order(servers.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<uint64_t> weights(servers.size());
  for (size_t i = 0; i < servers.size(); ++i) weights[i] = Weight(servers[i]);
  if (!locality_weights.empty()) {
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return locality(servers[a]) < locality(servers[b]);
    });
    std::vector<uint64_t> sums(locality_weights.size(), 0);
    for (size_t i = 0; i < servers.size(); ++i) sums[locality(servers[i])] += weights[i];
    uint64_t common = 1;
    for (const uint64_t sum : sums) {
      if (sum != 0) common = std::lcm(common, sum);
    }
    for (size_t i = 0; i < servers.size(); ++i) {
      const size_t l = locality(servers[i]);
      weights[i] = weights[i] * locality_weights[l] * (common / sums[l]);
    }
  }
  for (const size_t i : order) {
    const ServerLine& server = servers[i];
    std::string key = server.addr;
    if (server.attrs.count("hash_key")) {
      key = server.attrs.at("hash_key");
    } else if (set.options.count("--use-hostname") && server.attrs.count("hostname")) {
      key = server.attrs.at("hostname");
    }
    setup.nodes.push_back({key, static_cast<uint32_t>(weights[i]), {}, server.addr});
  }
  setup.answer = [](const Ring& ring, const std::string& key) {
    return ring.FindNodeByHash64(std::stoull(key));  // the request's hash
  };
  return setup;
}

// A set's .expect assertions (check_models.py reads them the same way).
size_t CheckEnvoyExpect(const SetRow& set, const SetPlan& setup) {
  const std::string path = testing::DataPath("envoy/" + set.name + ".expect");
  if (!std::ifstream(path).good()) return 0;
  const std::string what = "envoy/" + set.name + ".expect";
  const Ring ring = BuildPlan(setup, what);
  const bool maglev = setup.options.flavor == Flavor::kEnvoyMaglev;
  std::map<std::string, uint32_t> node_of;
  for (uint32_t i = 0; i < setup.nodes.size(); ++i) node_of[setup.nodes[i].addr] = i;
  // Entries (points) a host holds, for the hosts of weight > 0.
  std::map<uint32_t, uint64_t> held;
  for (uint32_t i = 0; i < setup.nodes.size(); ++i) {
    if (setup.nodes[i].weight > 0) held[i] = 0;
  }
  for (uint64_t p = 0; p < ring.num_points(); ++p) ++held[ring.At(p).node()];
  if (maglev && held.size() == 1) held.begin()->second = 1;  // DegenerateMaglevTable's stats
  uint64_t least = UINT64_MAX, most = 0;
  for (const auto& [node, count] : held) {
    least = std::min(least, count);
    most = std::max(most, count);
  }
  std::map<std::string, uint64_t> swept;
  size_t checks = 0;
  for (const std::string& line : Lines(ReadFile(path))) {
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> parts = Fields(line);
    ++checks;
    const std::string& kind = parts[0];
    if (kind == "ring_size") {
      EXPECT_EQ(ring.num_points(), std::stoull(parts[1])) << what;
    } else if (kind == "min_hashes_per_host" || kind == "min_entries_per_host") {
      EXPECT_EQ(least, std::stoull(parts[1])) << what << ": " << line;
    } else if (kind == "max_hashes_per_host" || kind == "max_entries_per_host") {
      EXPECT_EQ(most, std::stoull(parts[1])) << what << ": " << line;
    } else if (kind == "point") {
      bool found = false;
      for (uint64_t p = 0; p < ring.num_points() && !found; ++p) {
        const PointCursor point = ring.At(p);
        found = point.hash64() == std::stoull(parts[2]) && point.node() == node_of.at(parts[1]);
      }
      EXPECT_TRUE(found) << what << ": " << line;
    } else if (kind == "attempt") {
      const uint32_t node = ring.FindNodeForAttempt(std::stoull(parts[1]),
                                                    static_cast<uint32_t>(std::stoul(parts[2])));
      EXPECT_EQ(node < setup.nodes.size() ? setup.nodes[node].addr : "(none)", parts[3])
          << what << ": " << line;
    } else if (kind == "sweep_div" || kind == "sweep_seq") {
      const uint64_t n = std::stoull(parts[1]);
      swept.clear();
      for (const SetPlan::Node& node : setup.nodes) swept[node.addr] = 0;
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t h = kind == "sweep_div" ? i * (UINT64_MAX / n) : i;
        const uint32_t node = ring.FindNodeByHash64(h);
        if (node < setup.nodes.size()) ++swept[setup.nodes[node].addr];
      }
    } else if (kind == "count") {
      EXPECT_EQ(swept[parts[1]], std::stoull(parts[2])) << what << ": " << line;
    } else if (kind == "zero_count_hosts") {
      const auto zeros = std::count_if(swept.begin(), swept.end(),
                                       [](const auto& entry) { return entry.second == 0; });
      EXPECT_EQ(static_cast<uint64_t>(zeros), std::stoull(parts[1])) << what;
    } else {
      ADD_FAILURE() << what << ": unknown line " << line;
    }
  }
  return checks;
}

TEST(ProgramGolden, Envoy) {
  const std::vector<SetRow> sets = ReadSets("envoy");
  ASSERT_FALSE(sets.empty());
  testing::ForEachTarget([&](const std::string& target) {
    SCOPED_TRACE(target);
    size_t answers = 0, assertions = 0;
    for (const SetRow& set : sets) {
      const std::vector<ServerLine> servers =
          ReadServers(testing::DataPath("envoy/" + set.servers));
      const std::optional<SetPlan> setup = EnvoyPlan(set, servers);
      ASSERT_TRUE(setup.has_value());
      if (set.keys != "-") answers += CompareSet("envoy", set, *setup);
      assertions += CheckEnvoyExpect(set, *setup);
    }
    EXPECT_GT(answers, 100u);
    EXPECT_GT(assertions, 50u);
  });
}

}  // namespace
}  // namespace chash
