// The resty flavor against answers recorded from the real resty.chash
// (lua-resty-balancer, tests/data/PROVENANCE.md): every key of ra, rb and
// ra_walk (node and point position), every 12-point walk of ra_walk, every
// step of re.ops, through the library, the reference ring and `chash route
// --mode resty`; chash's collision rule (the smallest id) and APISIX's ids.
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "chash/chash_c.h"
#include "chash/crc32.h"
#include "chash/identity.h"
#include "chash/ring.h"
#include "chash/snapshot.h"
#include "cli_run.h"
#include "reference/reference_ring.h"
#include "test_util.h"

namespace chash {
namespace {

using testing::DataPath;
using testing::ReadLines;

using Nodes = std::vector<std::pair<std::string, uint32_t>>;

// `ID WEIGHT` lines (split at the last space); '#' lines are comments.
Nodes ReadNodes(const std::string& name) {
  Nodes nodes;
  for (const std::string& line : ReadLines(DataPath("resty/" + name + ".nodes"))) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    nodes.emplace_back(line.substr(0, space), std::stoul(line.substr(space + 1)));
  }
  return nodes;
}

struct Answer {
  std::string key, id;
  uint64_t position = 0;
};

// `key,id,index` rows, split at the last two commas.
std::vector<Answer> ReadAnswers(const std::string& file) {
  std::vector<Answer> answers;
  for (const std::string& line : ReadLines(DataPath("resty/" + file))) {
    const size_t last = line.rfind(',');
    const size_t middle = line.rfind(',', last - 1);
    answers.push_back({line.substr(0, middle), line.substr(middle + 1, last - middle - 1),
                       std::stoull(line.substr(last + 1))});
  }
  return answers;
}

Ring Build(const Nodes& nodes) {
  RingBuilder builder({.flavor = Flavor::kResty});
  for (const auto& [id, weight] : nodes) {
    const Status status = builder.Add(id, weight);
    EXPECT_TRUE(status.ok()) << id << ": " << status.message();
  }
  Result<Ring> ring = std::move(builder).Build();
  EXPECT_TRUE(ring.ok()) << ring.status().message();
  return ring.ok() ? std::move(ring).value() : Ring();
}

// resty.chash keeps every generated point, duplicated hashes included; chash
// keeps one a hash and lists the others as collision losers. resty.chash's
// position of chash's slot is the slot plus the losers at smaller hashes.
uint64_t RestyPosition(const Ring& ring, uint32_t slot) {
  const uint32_t hash = ring.At(slot).hash();
  const auto losers = ring.collision_losers().hashes;
  return slot + static_cast<uint64_t>(std::lower_bound(losers.begin(), losers.end(), hash) -
                                      losers.begin());
}

// resty.chash's point-by-point walk: each kept point, then the points that
// lost to it (chash's order: the smallest id first).
std::vector<uint32_t> RestyWalk(const Ring& ring, uint32_t hash, size_t steps) {
  std::vector<uint32_t> nodes;
  const auto losers = ring.collision_losers();
  PointCursor cursor = ring.WalkFromHash(hash);
  while (nodes.size() < steps) {
    nodes.push_back(cursor.node());
    const auto first = std::lower_bound(losers.hashes.begin(), losers.hashes.end(), cursor.hash());
    for (auto it = first; it != losers.hashes.end() && *it == cursor.hash(); ++it) {
      nodes.push_back(losers.nodes[static_cast<size_t>(it - losers.hashes.begin())]);
    }
    cursor.Advance();
  }
  nodes.resize(steps);
  return nodes;
}

void ExpectAnswers(const Nodes& nodes, const std::vector<Answer>& answers,
                   const std::string& what) {
  ASSERT_FALSE(answers.empty()) << what;
  const Ring ring = Build(nodes);
  std::vector<reference::Server> servers;
  for (const auto& [id, weight] : nodes) servers.push_back({id, weight});
  Result<reference::ReferenceRing> model =
      reference::ReferenceRing::Build(Flavor::kResty, 160, servers);
  ASSERT_TRUE(model.ok()) << model.status().message();
  size_t mismatches = 0;
  for (const Answer& answer : answers) {
    const uint32_t hash = Crc32(answer.key);
    const PointCursor point = ring.WalkFromHash(hash);
    const std::string& got = ring.node(point.node()).address.written;
    EXPECT_EQ(model.value().FindNodeByHash(hash), point.node()) << what << " " << answer.key;
    if ((got != answer.id || RestyPosition(ring, point.position()) != answer.position) &&
        ++mismatches <= 5) {
      ADD_FAILURE() << what << " key '" << answer.key << "': resty.chash " << answer.id << " @"
                    << answer.position << ", chash " << got << " @"
                    << RestyPosition(ring, point.position());
    }
  }
  EXPECT_EQ(mismatches, 0u) << what << ": of " << answers.size() << " keys";
}

TEST(RestyGolden, EveryKeyOfRaRbAndRaWalk) {
  for (const std::string name : {"ra", "rb", "ra_walk"}) {
    ExpectAnswers(ReadNodes(name), ReadAnswers(name + ".csv"), name);
  }
}

TEST(RestyGolden, RaHasDuplicatedHashesRbToo) {
  // The sets exercise the position mapping: resty.chash counts the points
  // chash drops.
  EXPECT_EQ(Build(ReadNodes("ra")).collisions(), 1u);
  EXPECT_EQ(Build(ReadNodes("rb")).collisions(), 10u);
}

TEST(RestyGolden, WalksOfTwelvePoints) {
  const Ring ring = Build(ReadNodes("ra_walk"));
  size_t rows = 0;
  for (const std::string& line : ReadLines(DataPath("resty/ra_walk.next12.csv"))) {
    const size_t comma = line.rfind(',');
    const std::string key = line.substr(0, comma);
    std::vector<std::string> expected;
    for (size_t at = comma + 1; at <= line.size();) {
      size_t space = line.find(' ', at);
      if (space == std::string::npos) space = line.size();
      expected.push_back(line.substr(at, space - at));
      at = space + 1;
    }
    ASSERT_EQ(expected.size(), 12u) << key;
    const std::vector<uint32_t> walk = RestyWalk(ring, Crc32(key), 12);
    for (size_t i = 0; i < 12; ++i) {
      ASSERT_EQ(ring.node(walk[i]).address.written, expected[i]) << key << " step " << i;
    }
    ++rows;
  }
  EXPECT_EQ(rows, 1000u);
}

// resty.chash's operations on a weight table (its rules, lib/resty/chash.lua).
void Apply(std::map<std::string, uint32_t>& table, const std::string& op, const std::string& id,
           uint32_t weight) {
  const auto it = table.find(id);
  const uint32_t old = it == table.end() ? 0 : it->second;
  if (op == "set") {
    if (weight == 0) {
      table.erase(id);
    } else {
      table[id] = weight;
    }
  } else if (op == "delete") {
    table.erase(id);
  } else if (op == "incr") {
    table[id] = old + weight;
  } else if (op == "decr") {
    if (it == table.end()) return;
    if (old <= weight) {
      table.erase(it);
    } else {
      it->second = old - weight;
    }
  } else {
    FAIL() << "unknown op " << op;
  }
}

std::string ServersText(const std::map<std::string, uint32_t>& table) {
  std::string text;
  for (const auto& [id, weight] : table) text += id + " " + std::to_string(weight) + "\n";
  return text;
}

TEST(RestyGolden, EveryStepOfReOps) {
  const Nodes initial = ReadNodes("re");
  std::map<std::string, uint32_t> table(initial.begin(), initial.end());
  ASSERT_EQ(table.size(), initial.size());
  int steps = 0;
  auto check = [&](int step) {
    ExpectAnswers(Nodes(table.begin(), table.end()),
                  ReadAnswers("re.step" + std::to_string(step) + ".csv"),
                  "re step " + std::to_string(step));
    ++steps;
  };
  check(0);
  for (const std::string& line : ReadLines(DataPath("resty/re.ops"))) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    for (size_t at = 0; at <= line.size();) {
      size_t space = line.find(' ', at);
      if (space == std::string::npos) space = line.size();
      f.push_back(line.substr(at, space - at));
      at = space + 1;
    }
    ASSERT_GE(f.size(), 3u) << line;
    const int step = std::stoi(f[0]);
    if (f[1] == "reinit") {
      // "every other node of re.nodes (lines 1, 3, 5, ...), same weights"
      table.clear();
      for (size_t i = 0; i < initial.size(); i += 2) table.insert(initial[i]);
    } else {
      Apply(table, f[1], f[2], static_cast<uint32_t>(std::stoul(f[3])));
    }
    check(step);
  }
  EXPECT_EQ(steps, 9);
}

// The CLI: `chash route --mode resty` prints KEY,ID for every golden key.
void ExpectCliAnswers(const std::string& servers_path, const std::string& keys_path,
                      const std::vector<Answer>& answers, const std::string& what) {
  const testing::CliRun run =
      testing::RunChash("route --mode resty --servers " + servers_path + " --keys " + keys_path);
  ASSERT_EQ(run.status, 0) << what << ": " << run.err;
  const std::vector<std::string> lines = testing::SplitLines(run.out);
  ASSERT_EQ(lines.size(), answers.size()) << what;
  for (size_t i = 0; i < lines.size(); ++i) {
    ASSERT_EQ(lines[i], answers[i].key + "," + answers[i].id) << what << " line " << i;
  }
}

TEST(RestyGoldenCli, ChashRouteModeResty) {
  for (const std::string name : {"ra", "rb", "ra_walk"}) {
    ExpectCliAnswers(DataPath("resty/" + name + ".nodes"), DataPath("resty/" + name + ".keys"),
                     ReadAnswers(name + ".csv"), name);
  }
  const Nodes initial = ReadNodes("re");
  std::map<std::string, uint32_t> table(initial.begin(), initial.end());
  ExpectCliAnswers(testing::WriteTemp("re0", ServersText(table)), DataPath("resty/re.keys"),
                   ReadAnswers("re.step0.csv"), "re step 0");
  for (const std::string& line : ReadLines(DataPath("resty/re.ops"))) {
    if (line.empty() || line[0] == '#') continue;
    const size_t a = line.find(' '), b = line.find(' ', a + 1), c = line.find(' ', b + 1);
    const std::string step = line.substr(0, a), op = line.substr(a + 1, b - a - 1);
    if (op == "reinit") {
      table.clear();
      for (size_t i = 0; i < initial.size(); i += 2) table.insert(initial[i]);
    } else {
      Apply(table, op, line.substr(b + 1, c - b - 1), std::stoul(line.substr(c + 1)));
    }
    ExpectCliAnswers(testing::WriteTemp("re" + step, ServersText(table)), DataPath("resty/re.keys"),
                     ReadAnswers("re.step" + step + ".csv"), "re step " + step);
  }
}

// resty.chash's winner on a duplicated hash follows Lua's table order; chash
// gives the smallest id by bytes whatever the order the ids come in. ra's one
// duplicated hash is shared by 10.133.0.124:34755 and 10.62.102.189:8080.
TEST(RestyFlavor, CollisionsGoToTheSmallestIdInEveryOrder) {
  Nodes nodes = ReadNodes("ra");
  const Ring forward = Build(nodes);
  ASSERT_EQ(forward.collision_losers().hashes.size(), 1u);
  const uint32_t hash = forward.collision_losers().hashes[0];
  std::reverse(nodes.begin(), nodes.end());
  const Ring backward = Build(nodes);
  std::rotate(nodes.begin(), nodes.begin() + 17, nodes.end());
  const Ring rotated = Build(nodes);
  for (const Ring* ring : {&forward, &backward, &rotated}) {
    EXPECT_EQ(ring->node(ring->FindNodeByHash(hash)).address.written, "10.133.0.124:34755");
    EXPECT_EQ(ring->node(ring->collision_losers().nodes[0]).address.written, "10.62.102.189:8080");
    EXPECT_EQ(ring->tie_break(), TieBreak::kIdOrder);
  }
  // The same ring in every order: same fingerprint.
  EXPECT_EQ(RingFingerprint(forward), RingFingerprint(backward));
  EXPECT_EQ(RingFingerprint(forward), RingFingerprint(rotated));
}

TEST(RestyFlavor, IdsAreOpaqueBytes) {
  RingBuilder builder({.flavor = Flavor::kResty});
  EXPECT_TRUE(builder
                  .Add(std::string("10.0.0.1\0"
                                   "80",
                                   11),
                       1)
                  .ok());
  EXPECT_TRUE(builder.Add("any text at all, spaces and all", 2).ok());
  EXPECT_TRUE(builder.Add("\xff\xfe", 1).ok());
  EXPECT_EQ(builder.Add("", 1).code(), StatusCode::kBadAddress);
  EXPECT_EQ(builder.Add(std::string(4097, 'x'), 1).code(), StatusCode::kBadAddress);
  EXPECT_TRUE(builder.Add(std::string(4096, 'x'), 1).ok());
  EXPECT_EQ(builder.Add("\xff\xfe", 3).code(), StatusCode::kDuplicateNode);
  EXPECT_TRUE(builder.Add("drained", 0).ok());
  Result<Ring> ring = std::move(builder).Build();
  ASSERT_TRUE(ring.ok());
  EXPECT_EQ(ring.value().num_nodes(), 5u);
  EXPECT_EQ(ring.value().points_generated(), 5u * 160);
  EXPECT_EQ(ring.value().flavor(), Flavor::kResty);
}

TEST(RestyFlavor, PointMultipleIsConfigurable) {
  RingBuilder builder({.flavor = Flavor::kResty, .point_multiple = 16});
  ASSERT_TRUE(builder.Add("a", 3).ok());
  Result<Ring> ring = std::move(builder).Build();
  ASSERT_TRUE(ring.ok());
  EXPECT_EQ(ring.value().points_generated(), 48u);
  // The chain: crc32(ID || le32(prev)) from prev = 0.
  uint32_t prev = 0, smallest = UINT32_MAX;
  for (int i = 0; i < 48; ++i) {
    const uint8_t le[4] = {static_cast<uint8_t>(prev), static_cast<uint8_t>(prev >> 8),
                           static_cast<uint8_t>(prev >> 16), static_cast<uint8_t>(prev >> 24)};
    prev = Crc32Extend(Crc32("a"), le, 4);
    smallest = std::min(smallest, prev);
  }
  EXPECT_EQ(ring.value().Begin().hash(), smallest);
}

// APISIX names a node `host:port` with ':' replaced by NUL: for IPv4 nodes
// exactly the bytes nginx hashes for `server host:port`. So every nginx
// golden answer of the IPv4 sets is also the APISIX resty ring's answer.
TEST(RestyGolden, ApisixIdsRouteAsNginxHashConsistent) {
  for (const std::string name : {"a", "b", "c", "d", "g"}) {
    const std::vector<ServerEntry> servers = testing::LoadServers("nginx/" + name + ".servers");
    ASSERT_FALSE(servers.empty());
    RingBuilder builder({.flavor = Flavor::kResty});
    for (const ServerEntry& server : servers) {
      std::string id = server.address;
      std::replace(id.begin(), id.end(), ':', '\0');
      ASSERT_TRUE(builder.Add(id, server.weight).ok()) << server.address;
    }
    Result<Ring> ring = std::move(builder).Build();
    ASSERT_TRUE(ring.ok());
    const std::vector<std::string> keys = ReadLines(DataPath("nginx/" + name + ".keys"));
    std::vector<std::string> answers;
    for (const std::string& line : ReadLines(DataPath("nginx/" + name + ".csv"))) {
      if (!line.empty() && line[0] != '#') answers.push_back(line);
    }
    ASSERT_EQ(keys.size(), answers.size()) << name;
    const auto losers = ring.value().collision_losers().hashes;
    size_t agree = 0, on_collisions = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      std::string id = ring.value().node(ring.value().FindNode(keys[i])).address.written;
      std::replace(id.begin(), id.end(), '\0', ':');
      if (answers[i].substr(answers[i].rfind(',') + 1) == id) {
        ++agree;
      } else {
        // nginx's winner on a duplicated hash is the first server in its
        // config; chash's resty winner the smallest id. Only there may they
        // differ.
        const uint32_t point = ring.value().WalkFromHash(Crc32(keys[i])).hash();
        EXPECT_TRUE(std::binary_search(losers.begin(), losers.end(), point))
            << name << " key " << keys[i] << ": nginx " << answers[i] << ", resty " << id;
        ++on_collisions;
      }
    }
    EXPECT_EQ(agree + on_collisions, keys.size());
    EXPECT_GT(agree, keys.size() * 99 / 100) << name;
  }
}

// A resty ring's snapshot: flavor and tie-break bytes, ids with NUL bytes,
// the same fingerprint and answers after a round trip.
TEST(RestyFlavor, SnapshotRoundTrip) {
  Nodes nodes = ReadNodes("ra");
  nodes.emplace_back(std::string("10.9.9.9\0"
                                 "8080",
                                 13),
                     3);  // an APISIX id
  const Ring ring = Build(nodes);
  SnapshotWriteOptions options;
  options.config_version = 7;
  Result<std::string> bytes = SerializeSnapshot(ring, options);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  Result<std::shared_ptr<const RingSnapshot>> loaded = LoadSnapshotFromBytes(bytes.value());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const Ring& back = loaded.value()->ring();
  EXPECT_EQ(back.flavor(), Flavor::kResty);
  EXPECT_EQ(back.tie_break(), TieBreak::kIdOrder);
  EXPECT_EQ(loaded.value()->info().tie_break, TieBreak::kIdOrder);
  EXPECT_EQ(RingFingerprint(back), RingFingerprint(ring));
  EXPECT_EQ(back.node(static_cast<uint32_t>(nodes.size() - 1)).address.written, nodes.back().first);
  for (const Answer& answer : ReadAnswers("ra.csv")) {
    ASSERT_EQ(back.FindNode(answer.key), ring.FindNode(answer.key)) << answer.key;
  }
  // The flavor byte is checked: a resty header with pingora v1's multiple
  // rule would refuse multiple 16, resty takes it.
  RingBuilder sixteen({.flavor = Flavor::kResty, .point_multiple = 16});
  ASSERT_TRUE(sixteen.Add("a", 1).ok());
  Result<Ring> small = std::move(sixteen).Build();
  ASSERT_TRUE(small.ok());
  Result<std::string> small_bytes = SerializeSnapshot(small.value(), {});
  ASSERT_TRUE(small_bytes.ok());
  Result<std::shared_ptr<const RingSnapshot>> small_back =
      LoadSnapshotFromBytes(small_bytes.value());
  ASSERT_TRUE(small_back.ok()) << small_back.status().message();
  EXPECT_EQ(small_back.value()->ring().point_multiple(), 16u);
}

// The C API: CHASH_FLAVOR_RESTY = 3 (appended), NUL bytes in ids, positions
// and the collision losers resty.chash's positions are computed from.
TEST(RestyCapi, FlavorPositionsAndLosers) {
  chash_builder* builder = nullptr;
  EXPECT_EQ(chash_builder_new(testing::FirstUnknownFlavor(), 0, &builder), CHASH_E_BAD_ARGUMENT);
  ASSERT_EQ(chash_builder_new(CHASH_FLAVOR_RESTY, 0, &builder), CHASH_OK);
  const Nodes nodes = ReadNodes("ra");
  for (const auto& [id, weight] : nodes) {
    ASSERT_EQ(chash_builder_add(builder, id.data(), id.size(), weight), CHASH_OK);
  }
  const std::string apisix(
      "10.9.9.9\0"
      "8080",
      13);
  // Weight 0: the id is stored, the ring's points (and positions) are ra's.
  ASSERT_EQ(chash_builder_add(builder, apisix.data(), apisix.size(), 0), CHASH_OK);
  EXPECT_EQ(chash_builder_add(builder, "", 0, 1), CHASH_E_BAD_ADDRESS);
  chash_ring* ring = nullptr;
  ASSERT_EQ(chash_builder_build(builder, &ring), CHASH_OK);
  EXPECT_EQ(chash_ring_flavor(ring), CHASH_FLAVOR_RESTY);
  size_t len = 0;
  const char* text = chash_ring_node_address(ring, static_cast<uint32_t>(nodes.size()), &len);
  EXPECT_EQ(std::string(text, len), apisix);

  const uint32_t** no_hashes = nullptr;
  const uint32_t* hashes = nullptr;
  const uint16_t* loser_nodes = nullptr;
  uint64_t count = 0;
  EXPECT_EQ(chash_ring_collision_losers(ring, no_hashes, &loser_nodes, &count),
            CHASH_E_NULL_ARGUMENT);
  ASSERT_EQ(chash_ring_collision_losers(ring, &hashes, &loser_nodes, &count), CHASH_OK);
  ASSERT_EQ(count, 1u);  // ra's one duplicated hash
  const uint32_t winner = chash_ring_find_hash(ring, hashes[0]);
  text = chash_ring_node_address(ring, winner, &len);
  EXPECT_EQ(std::string(text, len), "10.133.0.124:34755");  // the smaller id
  text = chash_ring_node_address(ring, loser_nodes[0], &len);
  EXPECT_EQ(std::string(text, len), "10.62.102.189:8080");
  const uint64_t points = chash_ring_num_points(ring);
  uint32_t hash = 1;
  EXPECT_EQ(chash_ring_point_at(ring, points, &hash), CHASH_NO_NODE);
  EXPECT_EQ(hash, 0u);
  for (const Answer& answer : ReadAnswers("ra.csv")) {
    const uint32_t key_hash = Crc32(answer.key);
    const uint32_t position = chash_ring_find_position(ring, key_hash);
    ASSERT_LT(position, points);
    const uint32_t node = chash_ring_point_at(ring, position, &hash);
    ASSERT_EQ(node, chash_ring_find_hash(ring, key_hash)) << answer.key;
    // The first point at or after the key's hash, else (wrap) the first.
    ASSERT_TRUE(hash >= key_hash || position == 0) << answer.key;
    // resty.chash's index: the position plus the losers at smaller hashes.
    ASSERT_EQ(position + (hash > hashes[0] ? 1u : 0u), answer.position) << answer.key;
  }
  EXPECT_EQ(chash_ring_find_position(nullptr, 5), CHASH_NO_POSITION);
  chash_ring_free(ring);
}

}  // namespace
}  // namespace chash
