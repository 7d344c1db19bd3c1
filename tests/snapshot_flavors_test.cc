// Snapshot format 1.4: the other programs' rings (haproxy, ketama-md5,
// varnish-shard, envoy-ring, envoy-maglev) as files. A loaded ring must
// answer exactly as the ring it was written from (the built ring is the
// oracle: it is held to the real programs by the golden and differential
// tests); damaged 1.4 files are refused by a named check; files of the
// CRC-32 flavors are still 1.3, byte for byte what the 1.3 writer wrote.
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "chash/failover.h"
#include "cli_run.h"
#include "chash/identity.h"
#include "chash/snapshot.h"
#include "layout/columns.h"
#include "identity/sha256.h"
#include "snapshot/format.h"
#include "snapshot_util.h"
#include "test_util.h"

namespace chash {
namespace {

using testing::CheckOf;
using testing::ExpectSameShape;
using testing::FixChecksum;
using testing::LoadAt;
using testing::SectionOffset;
using testing::StoredAt;
using testing::TempPath;
namespace fmt = internal::snapshot;

struct Node {
  std::string address;
  uint32_t weight;
  NodeOptions options;
  std::string name;  // twemproxy's, kept alive for options.name
};

struct Case {
  std::string title;
  RingOptions options;
  std::vector<Node> nodes;
};

Ring BuildCase(const Case& c) {
  RingBuilder builder(c.options);
  for (const Node& node : c.nodes) {
    NodeOptions options = node.options;
    options.name = node.name;
    const Status added = builder.Add(node.address, node.weight, options);
    EXPECT_TRUE(added.ok()) << c.title << ": " << added.ToString();
  }
  Result<Ring> ring = std::move(builder).Build();
  EXPECT_TRUE(ring.ok()) << c.title << ": " << ring.status().ToString();
  return ring.ok() ? std::move(ring).value() : Ring();
}

// `count` servers "10.3.A.B:11211" with weights from `weight(i)`.
template <typename Weight>
std::vector<Node> Servers(uint32_t count, Weight weight) {
  std::vector<Node> nodes;
  for (uint32_t i = 0; i < count; ++i) {
    nodes.push_back({"10.3." + std::to_string(i / 200) + "." + std::to_string(i % 200 + 1) +
                         ":11211",
                     weight(i), {}, {}});
  }
  return nodes;
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  const auto some_drained = [](uint32_t i) { return i % 7 == 3 ? 0u : 1 + i % 5; };
  const auto ones = [](uint32_t i) { return i % 9 == 4 ? 0u : 1u; };
  // haproxy: each key hash, with and without avalanche, both server-key
  // formulas, ids given (some) and assigned.
  for (const HaproxyHash hash :
       {HaproxyHash::kSdbm, HaproxyHash::kDjb2, HaproxyHash::kWt6, HaproxyHash::kCrc32}) {
    for (const bool avalanche : {true, false}) {
      Case c{"haproxy " + std::to_string(static_cast<int>(hash)) + (avalanche ? " avalanche" : ""),
             {.flavor = Flavor::kHaproxy,
              .haproxy = {.hash_function = hash,
                          .avalanche = avalanche,
                          .server_key = avalanche ? HaproxyServerKey::kId
                                                  : HaproxyServerKey::kIdUnfixed30}},
             Servers(40, [](uint32_t i) { return i % 11 == 5 ? 0u : i % 256 + 1; })};
      for (uint32_t i = 0; i < c.nodes.size(); i += 3) c.nodes[i].options.server_id = 1000 + 7 * i;
      cases.push_back(std::move(c));
    }
  }
  // ketama-md5: every variant; key hashes; twemproxy's names and hash tag.
  const auto ketama = [](KetamaOptions options) {
    return RingOptions{.flavor = Flavor::kKetamaMd5, .ketama = options};
  };
  cases.push_back({"libmemcached weighted", ketama({}), Servers(30, some_drained)});
  cases.push_back({"libmemcached weighted crc32", ketama({.key_hash = KetamaKeyHash::kCrc32}),
                   Servers(30, some_drained)});
  cases.push_back({"libmemcached unweighted",
                   ketama({.variant = KetamaVariant::kLibmemcachedUnweighted}), Servers(25, ones)});
  cases.push_back({"libmemcached spy",
                   ketama({.variant = KetamaVariant::kLibmemcachedSpy,
                           .key_hash = KetamaKeyHash::kMurmur3}),
                   Servers(25, ones)});
  cases.push_back({"libmemcached spy weighted",
                   ketama({.variant = KetamaVariant::kLibmemcachedSpyWeighted}),
                   Servers(25, some_drained)});
  cases.push_back(
      {"libketama", ketama({.variant = KetamaVariant::kLibketama}), Servers(20, some_drained)});
  {
    Case c{"twemproxy names, tag, port",
           ketama({.variant = KetamaVariant::kTwemproxy,
                   .key_hash = KetamaKeyHash::kHsieh,
                   .default_port = 6379,
                   .hash_tag = {'{', '}'}}),
           Servers(24, some_drained)};
    for (uint32_t i = 0; i < c.nodes.size(); i += 2) c.nodes[i].name = "cache-" + std::to_string(i);
    cases.push_back(std::move(c));
  }
  cases.push_back({"twemproxy default", ketama({.variant = KetamaVariant::kTwemproxy}),
                   Servers(10, some_drained)});
  cases.push_back({"twemproxy one server (keys hash to 0)",
                   ketama({.variant = KetamaVariant::kTwemproxy}),
                   Servers(3, [](uint32_t i) { return i == 1 ? 2u : 0u; })});
  // varnish-shard: replicas; two points (Varnish's bisection case).
  const auto varnish = [](uint32_t replicas) {
    return RingOptions{.flavor = Flavor::kVarnishShard, .varnish = {.replicas = replicas}};
  };
  cases.push_back({"varnish 67", {.flavor = Flavor::kVarnishShard}, Servers(30, some_drained)});
  cases.push_back({"varnish 5", varnish(5), Servers(30, some_drained)});
  cases.push_back({"varnish two points", varnish(2), Servers(2, [](uint32_t i) { return i; })});
  // envoy-ring: sizes and both point hashes.
  cases.push_back({"envoy-ring default", {.flavor = Flavor::kEnvoyRing}, Servers(30, some_drained)});
  cases.push_back({"envoy-ring murmur small",
                   {.flavor = Flavor::kEnvoyRing,
                    .envoy_ring = {.minimum_ring_size = 64,
                                   .maximum_ring_size = 200,
                                   .hash_function = EnvoyHash::kMurmurHash2}},
                   Servers(9, some_drained)});
  // envoy-maglev: the default table, a small one, and every host drained.
  const RingOptions maglev_251 = {.flavor = Flavor::kEnvoyMaglev, .maglev = {.table_size = 251}};
  cases.push_back({"maglev default", {.flavor = Flavor::kEnvoyMaglev}, Servers(30, some_drained)});
  cases.push_back({"maglev 251", maglev_251, Servers(12, some_drained)});
  cases.push_back({"maglev drained", maglev_251, Servers(3, [](uint32_t) { return 0u; })});
  return cases;
}

std::vector<std::string> Keys() {
  std::vector<std::string> keys = {"", "a", "{user1}:cart", "x{y}z", "/"};
  std::mt19937 rng(11);
  for (int i = 0; i < 3000; ++i) {
    keys.push_back("/obj/" + std::to_string(rng()) + (i % 5 == 0 ? "{tag" + std::to_string(i % 13) + "}" : ""));
  }
  return keys;
}

void ExpectSameRing(const Ring& built, const Ring& loaded, const std::string& title) {
  SCOPED_TRACE(title);
  ASSERT_NO_FATAL_FAILURE(ExpectSameShape(built, loaded));
  EXPECT_EQ(built.lookup_rule(), loaded.lookup_rule());
  EXPECT_EQ(built.key_hash_bits(), loaded.key_hash_bits());
  const RingOptions& a = built.options();
  const RingOptions& b = loaded.options();
  EXPECT_EQ(a.flavor, b.flavor);
  EXPECT_EQ(a.point_multiple, b.point_multiple);
  EXPECT_TRUE(a.haproxy == b.haproxy);
  EXPECT_TRUE(a.ketama == b.ketama);
  EXPECT_TRUE(a.varnish == b.varnish);
  EXPECT_TRUE(a.envoy_ring == b.envoy_ring);
  EXPECT_TRUE(a.maglev == b.maglev);
  EXPECT_TRUE(FlavorMasksExactly(a) == FlavorMasksExactly(b));
  for (uint32_t id = 0; id < built.num_nodes(); ++id) {
    ASSERT_EQ(built.node(id).address.host, loaded.node(id).address.host) << id;
    ASSERT_EQ(built.node(id).address.port, loaded.node(id).address.port) << id;
    ASSERT_EQ(built.node(id).server_id, loaded.node(id).server_id) << id;
  }
  for (const std::string& key : Keys()) {
    const uint64_t hash = built.KeyHash(key);
    ASSERT_EQ(hash, loaded.KeyHash(key)) << key;
    ASSERT_EQ(built.FindNode(key), loaded.FindNode(key)) << key;
    ASSERT_EQ(built.FindNodeByHash64(hash), loaded.FindNodeByHash64(hash)) << key;
    for (uint32_t attempt = 0; attempt < 4; ++attempt) {
      ASSERT_EQ(built.FindNodeForAttempt(hash, attempt), loaded.FindNodeForAttempt(hash, attempt))
          << key << " attempt " << attempt;
    }
    PointCursor x = built.Walk(key), y = loaded.Walk(key);
    for (int step = 0; step < 6; ++step) ASSERT_EQ(x.Next(), y.Next()) << key;
    DistinctNodeWalk dx = built.WalkDistinct(key), dy = loaded.WalkDistinct(key);
    for (int step = 0; step < 4; ++step) ASSERT_EQ(dx.Next(), dy.Next()) << key;
  }
  // Every point's hash and its neighbours, and random hashes: where an
  // answer can change.
  std::vector<uint64_t> probes = {0, UINT32_MAX, uint64_t{UINT32_MAX} + 1, UINT64_MAX};
  if (built.lookup_rule() != LookupRule::kTable) {
    PointCursor cursor = built.Begin();
    for (uint64_t i = 0; i < built.num_points(); ++i, cursor.Advance()) {
      const uint64_t h = built.key_hash_bits() == 64 ? cursor.hash64() : cursor.hash();
      probes.insert(probes.end(), {h, h - 1, h + 1});
    }
  }
  std::mt19937_64 rng(5);
  for (int i = 0; i < 2000; ++i) {
    const uint64_t r = rng();
    probes.push_back(built.key_hash_bits() == 64 ? r : r >> 32);
  }
  std::vector<uint32_t> out_a(probes.size()), out_b(probes.size());
  built.FindNodesByHash64(probes, out_a);
  loaded.FindNodesByHash64(probes, out_b);
  for (size_t i = 0; i < probes.size(); ++i) {
    ASSERT_EQ(out_a[i], out_b[i]) << probes[i];
    ASSERT_EQ(built.FindNodeByHash(static_cast<uint32_t>(probes[i])),
              loaded.FindNodeByHash(static_cast<uint32_t>(probes[i])))
        << probes[i];
    if (i % 16 == 0) {
      PointCursor x = built.WalkFromHash64(probes[i]), y = loaded.WalkFromHash64(probes[i]);
      for (int step = 0; step < 5; ++step) ASSERT_EQ(x.Next(), y.Next()) << probes[i];
    }
  }
  EXPECT_EQ(RingFingerprint(built), RingFingerprint(loaded));
  EXPECT_EQ(PointsDigest(built), PointsDigest(loaded));
}

SnapshotWriteOptions Fixed() {
  SnapshotWriteOptions options;
  options.config_version = 9;
  options.created_unix_seconds = 1700000000;
  options.label = "1.4";
  return options;
}

TEST(SnapshotFlavors, EveryFlavorAndOptionSetRoundTripsInEveryMode) {
  for (const Case& c : Cases()) {
    const Ring built = BuildCase(c);
    ASSERT_EQ(built.flavor(), c.options.flavor) << c.title;
    SnapshotWriteOptions write = Fixed();
    NodeMask odd(built.num_nodes(), false);
    for (uint32_t id = 1; id < built.num_nodes(); id += 2) odd.Set(id, true);
    // Subsets only where a mask is exact (WritersRefuseSubsets... below).
    const bool takes_subsets = MasksExactly(built);
    if (takes_subsets) write.subsets.push_back({"odd", odd});
    Result<std::string> bytes = SerializeSnapshot(built, write);
    ASSERT_TRUE(bytes.ok()) << c.title << ": " << bytes.status().ToString();
    const auto* raw = reinterpret_cast<const uint8_t*>(bytes.value().data());
    EXPECT_EQ(fmt::LoadU16(raw + fmt::kOffMinor), 4) << c.title;
    EXPECT_EQ(raw[fmt::kOffFlavor], static_cast<uint8_t>(c.options.flavor)) << c.title;

    Result<std::shared_ptr<const RingSnapshot>> from_bytes = LoadSnapshotFromBytes(bytes.value());
    ASSERT_TRUE(from_bytes.ok()) << c.title << ": " << from_bytes.status().ToString();
    EXPECT_EQ(from_bytes.value()->info().minor_version, 4);
    EXPECT_EQ(from_bytes.value()->FindSubset("odd") != nullptr, takes_subsets) << c.title;
    ExpectSameRing(built, from_bytes.value()->ring(), c.title + " (bytes)");

    const std::string path = TempPath("flavor.chash");
    ASSERT_TRUE(WriteSnapshotFile(built, write, path).ok()) << c.title;
    for (const SnapshotLoadMode mode :
         {SnapshotLoadMode::kSealed, SnapshotLoadMode::kMap, SnapshotLoadMode::kCopy}) {
      SnapshotLoadOptions load;
      load.mode = mode;
      Result<std::shared_ptr<const RingSnapshot>> loaded = LoadSnapshot(path, load);
      ASSERT_TRUE(loaded.ok()) << c.title << ": " << loaded.status().ToString();
      ExpectSameRing(built, loaded.value()->ring(),
                     c.title + " (mode " + std::to_string(static_cast<int>(mode)) + ")");
    }
    unlink(path.c_str());
  }
}

TEST(SnapshotFlavors, WritersRefuseSubsetsOnRingsThatMaskInexactly) {
  size_t refused = 0;
  for (const Case& c : Cases()) {
    const Ring built = BuildCase(c);
    if (MasksExactly(built)) continue;
    SnapshotWriteOptions write = Fixed();
    NodeMask first(built.num_nodes(), false);
    first.Set(0, true);
    write.subsets.push_back({"first", first});
    const Result<std::string> bytes = SerializeSnapshot(built, write);
    ASSERT_FALSE(bytes.ok()) << c.title;
    EXPECT_EQ(bytes.status().code(), StatusCode::kBadArgument) << c.title;
    EXPECT_NE(bytes.status().message().find("cannot answer a subset exactly"), std::string::npos)
        << c.title << ": " << bytes.status().message();
    const std::string path = TempPath("refused-subsets.chash");
    EXPECT_EQ(WriteSnapshotFile(built, write, path).code(), StatusCode::kBadArgument) << c.title;
    EXPECT_NE(access(path.c_str(), F_OK), 0) << c.title << ": a refused write left a file";
    ++refused;
  }
  EXPECT_GE(refused, 3u);  // weighted ketama, envoy-ring, envoy-maglev at least

  // chash 1.0.0 wrote such files: they still load, and their subsets answer
  // kMaskRefused as masks on these rings do (tests/data/PROVENANCE.md).
  Result<std::shared_ptr<const RingSnapshot>> old =
      LoadSnapshot(testing::DataPath("snapshot/ketama-weighted-subsets-v1.4.chash"));
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  const NodeMask* subset = old.value()->FindSubset("a");
  ASSERT_NE(subset, nullptr);
  EXPECT_EQ(subset->count_available(), 2u);
  EXPECT_FALSE(MasksExactly(old.value()->ring()));
  EXPECT_EQ(FindAvailableNode(old.value()->ring(), *subset, "key"), kMaskRefused);
}

TEST(SnapshotFlavors, SignedAndIndexlessFilesLoad) {
  Result<SecretKey> key = GenerateSecretKey();
  ASSERT_TRUE(key.ok());
  for (const Case& c : Cases()) {
    const Ring built = BuildCase(c);
    SnapshotWriteOptions write = Fixed();
    write.signing_key = key.value();
    write.store_search_index = false;
    Result<std::string> bytes = SerializeSnapshot(built, write);
    ASSERT_TRUE(bytes.ok()) << c.title;
    SnapshotLoadOptions load;
    load.trusted_keys = {key.value().public_key()};
    Result<std::shared_ptr<const RingSnapshot>> loaded = LoadSnapshotFromBytes(bytes.value(), load);
    ASSERT_TRUE(loaded.ok()) << c.title << ": " << loaded.status().ToString();
    ExpectSameRing(built, loaded.value()->ring(), c.title + " (signed, no index)");
  }
}

// The CRC-32 flavors' files are what the 1.3 writer wrote: SHA-256 of the
// files of these rings as written by the library before format 1.4 (commit
// 971db02, the same program's output, recorded once).
TEST(SnapshotFlavors, CrcFlavorsAreStillWrittenAs13ByteForByte) {
  struct Golden {
    Flavor flavor;
    size_t size;
    const char* sha256;
  };
  const Golden goldens[] = {
      {Flavor::kNginx, 35848, "7805e2714533174a2ecfb5153a819b95539c502efc1c76355919c22d5c22ba29"},
      {Flavor::kPingoraV2, 9992, "bde17c60f7e25ce413f7e9cc8b1b7bef987173860ed46bccc637af661864e9a8"},
      {Flavor::kResty, 9992, "b8d7141fb16064c7fce0031255f789787a0dc82d00c714828d63d120b7933f90"},
  };
  for (const Golden& golden : goldens) {
    RingBuilder builder({.flavor = golden.flavor,
                         .point_multiple = golden.flavor == Flavor::kNginx ? 160u : 40u});
    for (uint32_t i = 0; i < 12; ++i) {
      ASSERT_TRUE(builder.Add("10.2.0." + std::to_string(i + 1) + ":8080", i % 4).ok());
    }
    const Ring ring = std::move(builder).Build().value();
    SnapshotWriteOptions write;
    write.config_version = 42;
    write.created_unix_seconds = 1700000000;
    write.label = "golden 1.3";
    write.expires_unix_seconds = 4000000000;
    Result<std::string> bytes = SerializeSnapshot(ring, write);
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(bytes.value().size(), golden.size);
    EXPECT_EQ(Sha256(bytes.value()).Hex(), golden.sha256) << static_cast<int>(golden.flavor);
    EXPECT_EQ(fmt::LoadU16(reinterpret_cast<const uint8_t*>(bytes.value().data()) + fmt::kOffMinor),
              3);
  }
}

// ---- Damaged 1.4 files ---------------------------------------------------------

// Refused by `check` with the checksum fixed, and by "checksum" without.
void ExpectRefused(std::string bytes, std::string_view check, const std::string& what) {
  Result<std::shared_ptr<const RingSnapshot>> unfixed = LoadSnapshotFromBytes(bytes);
  ASSERT_FALSE(unfixed.ok()) << what;
  FixChecksum(bytes);
  Result<std::shared_ptr<const RingSnapshot>> loaded = LoadSnapshotFromBytes(bytes);
  ASSERT_FALSE(loaded.ok()) << what << ": accepted; expected '" << check << "'";
  EXPECT_EQ(CheckOf(loaded.status()), check) << what << ": " << loaded.status().ToString();
}

std::string Bytes(const Case& c) {
  Result<std::string> bytes = SerializeSnapshot(BuildCase(c), Fixed());
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? bytes.value() : std::string(1024, '\0');
}

Case Named(std::string_view title) {
  for (Case& c : Cases()) {
    if (c.title == title) return c;
  }
  ADD_FAILURE() << "no case " << title;
  return {};
}

TEST(SnapshotFlavors, LowColumnOutOfOrderIsRefused) {
  const std::string good = Bytes(Named("envoy-ring murmur small"));
  const size_t hash = SectionOffset(good, fmt::kHashColumn);
  const size_t low = SectionOffset(good, fmt::kLowColumn);
  ASSERT_GT(low, hash);
  // Points 0 and 1 made one high half with the low halves descending: the
  // hash column alone stays in order.
  std::string bad = StoredAt(good, hash + 4, LoadAt<uint32_t>(good, hash));
  bad = StoredAt(StoredAt<uint32_t>(bad, low + 0, 10), low + 4, uint32_t{9});
  ExpectRefused(bad, "low_column", "descending low halves");
  // A low sentinel slot.
  const uint64_t n = LoadAt<uint32_t>(good, fmt::kOffPoints);
  ExpectRefused(StoredAt<uint32_t>(good, low + 4 * n, 7), "low_column", "low sentinel");
}

TEST(SnapshotFlavors, MaglevEntryPastTheNodeTableIsRefused) {
  const std::string good = Bytes(Named("maglev 251"));
  const uint32_t nodes = LoadAt<uint32_t>(good, fmt::kOffNodes);
  const size_t table = SectionOffset(good, fmt::kNodeColumn);
  ASSERT_EQ(LoadAt<uint64_t>(good, fmt::kOffSections + 16 * fmt::kNodeColumn + 8), 2 * 251u);
  ASSERT_EQ(LoadAt<uint64_t>(good, fmt::kOffSections + 16 * fmt::kHashColumn + 8), 0u);
  for (const uint16_t id : {static_cast<uint16_t>(nodes), uint16_t{65535}}) {
    ExpectRefused(StoredAt(good, table + 2 * 250, id), "node_column",
                  "entry " + std::to_string(id));
  }
  // A drained node (weight 0) named by an entry.
  const Case c = Named("maglev 251");
  uint32_t drained = 0;
  while (c.nodes[drained].weight != 0) ++drained;
  ExpectRefused(StoredAt(good, table, static_cast<uint16_t>(drained)), "node_column",
                "a drained node's entry");
}

// The 64-byte options head of each program flavor, byte for byte as
// FORMAT.md's table writes it (values little-endian, unlisted bytes 0),
// from options other than the defaults.
TEST(SnapshotFlavors, OptionsHeadsAreWhatFormatMdSays) {
  struct Expected {
    std::string_view title;
    std::vector<std::pair<size_t, std::vector<uint8_t>>> fields;  // offset, bytes
  };
  const std::vector<Expected> expected = {
      // hash function 1 (djb2), avalanche 0, server key 1 (unfixed)
      {"haproxy 1", {{0, {1, 0, 1}}}},
      {"haproxy 3 avalanche", {{0, {3, 1, 0}}}},
      // variant 2 (twemproxy), key hash 10 (hsieh), tag "{}", port 6379
      {"twemproxy names, tag, port", {{0, {2, 10, '{', '}'}}, {4, {0xEB, 0x18, 0, 0}}}},
      // variant 4 (spy), key hash 13 (murmur3), no tag, port 11211
      {"libmemcached spy", {{0, {4, 13, 0, 0}}, {4, {0xCB, 0x2B, 0, 0}}}},
      {"varnish 5", {{0, {5, 0, 0, 0}}}},
      // minimum 64, maximum 200 (u64 each), point hash 1 (MurmurHash2)
      {"envoy-ring murmur small", {{0, {64, 0, 0, 0, 0, 0, 0, 0}}, {8, {200}}, {16, {1}}}},
      {"maglev 251", {{0, {251, 0, 0, 0, 0, 0, 0, 0}}}},
  };
  for (const Expected& e : expected) {
    SCOPED_TRACE(e.title);
    std::vector<uint8_t> head(fmt::kOptionsHeadBytes, 0);
    for (const auto& [offset, bytes] : e.fields) {
      std::copy(bytes.begin(), bytes.end(), head.begin() + static_cast<ptrdiff_t>(offset));
    }
    const std::string file = Bytes(Named(e.title));
    const size_t at = SectionOffset(file, fmt::kFlavorOptions);
    ASSERT_LE(at + head.size(), file.size());
    EXPECT_EQ(std::vector<uint8_t>(file.begin() + static_cast<ptrdiff_t>(at),
                                   file.begin() + static_cast<ptrdiff_t>(at + head.size())),
              head);
  }
}

TEST(SnapshotFlavors, BadOptionsSectionsAreRefused) {
  const std::string haproxy = Bytes(Named("haproxy 0 avalanche"));
  const size_t h = SectionOffset(haproxy, fmt::kFlavorOptions);
  ExpectRefused(StoredAt<uint8_t>(haproxy, h + 0, 9), "options", "haproxy hash function 9");
  ExpectRefused(StoredAt<uint8_t>(haproxy, h + 1, 2), "options", "avalanche 2");
  ExpectRefused(StoredAt<uint8_t>(haproxy, h + 2, 7), "options", "server key 7");
  ExpectRefused(StoredAt<uint8_t>(haproxy, h + 40, 1), "options", "unused head byte");
  {
    // Node 1's server id made node 0's.
    std::string bad = haproxy;
    std::memcpy(bad.data() + h + 64 + 4, bad.data() + h + 64, 4);
    ExpectRefused(bad, "options", "a server id twice");
    bad = haproxy;
    std::memset(bad.data() + h + 64 + 8, 0, 4);
    ExpectRefused(bad, "options", "server id 0");
  }
  const std::string ketama = Bytes(Named("libmemcached weighted"));
  const size_t k = SectionOffset(ketama, fmt::kFlavorOptions);
  ExpectRefused(StoredAt<uint8_t>(ketama, k + 0, 6), "options", "ketama variant 6");
  ExpectRefused(StoredAt<uint8_t>(ketama, k + 1, 14), "options", "ketama key hash 14");
  ExpectRefused(StoredAt<uint8_t>(ketama, k + 2, '{'), "options", "a hash tag on libmemcached");
  const std::string twemproxy = Bytes(Named("twemproxy names, tag, port"));
  const size_t t = SectionOffset(twemproxy, fmt::kFlavorOptions);
  ExpectRefused(StoredAt<uint32_t>(twemproxy, t + 64, 5000), "options", "a label of 5000 bytes");
  const std::string varnish = Bytes(Named("varnish 5"));
  const size_t v = SectionOffset(varnish, fmt::kFlavorOptions);
  ExpectRefused(StoredAt<uint8_t>(varnish, v, 0), "options", "replicas 0");
  ExpectRefused(StoredAt<uint8_t>(varnish, v, 6), "options", "replicas not the header's multiple");
  const std::string envoy = Bytes(Named("envoy-ring murmur small"));
  const size_t e = SectionOffset(envoy, fmt::kFlavorOptions);
  ExpectRefused(StoredAt<uint8_t>(envoy, e + 8, 1), "options", "maximum below minimum");
  ExpectRefused(StoredAt<uint8_t>(envoy, e + 16, 2), "options", "envoy hash function 2");
  const std::string maglev = Bytes(Named("maglev 251"));
  const size_t m = SectionOffset(maglev, fmt::kFlavorOptions);
  ExpectRefused(StoredAt<uint8_t>(maglev, m, 250), "options", "table size 250 (not prime)");
  ExpectRefused(StoredAt<uint8_t>(maglev, m, 241), "options", "table size 241, the table 251");
}

TEST(SnapshotFlavors, HeaderRulesOfThe14Flavors) {
  const std::string good = Bytes(Named("varnish 67"));
  const auto edit = [&](size_t at, uint8_t value) { return StoredAt(good, at, value); };
  ExpectRefused(edit(fmt::kOffMinor, 3), "header", "a varnish ring in a 1.3 file");
  ExpectRefused(edit(fmt::kOffHashFunction, 1), "header", "the CRC-32 chain on a varnish ring");
  ExpectRefused(edit(fmt::kOffSectionCount, 8), "header", "8 sections");
  const auto unknown = static_cast<uint8_t>(testing::FirstUnknownFlavor());
  ExpectRefused(edit(fmt::kOffFlavor, unknown), "header", "flavor " + std::to_string(unknown));
  ExpectRefused(edit(fmt::kOffReserved14 + 3, 1), "header", "reserved byte after section 9");
  ExpectRefused(edit(fmt::kOffPointsGenerated + 3, 1), "header", "points dropped");
  const std::string nginx =
      SerializeSnapshot(BuildCase({"nginx", {}, {{"10.0.0.1:80", 1, {}, {}}}}), Fixed()).value();
  ExpectRefused(StoredAt<uint8_t>(nginx, fmt::kOffHashFunction, 2), "header",
                "the flavor options hash on an nginx ring");
  ExpectRefused(StoredAt<uint8_t>(nginx, fmt::kOffSectionsMore + 1, 1), "header",
                "section 8 listed in an nginx file");
}

TEST(SnapshotFlavors, VarnishTailAndHashOrder) {
  const std::string good = Bytes(Named("varnish 5"));
  const uint64_t n = LoadAt<uint32_t>(good, fmt::kOffPoints);
  const size_t node = SectionOffset(good, fmt::kNodeColumn);
  const size_t hash = SectionOffset(good, fmt::kHashColumn);
  // The tail is the last point's node (no wrap): the first point's is wrong
  // unless both are one node.
  const uint16_t last = LoadAt<uint16_t>(good, node + 2 * (n - 1));
  ASSERT_EQ(LoadAt<uint16_t>(good, node + 2 * n), last);
  ExpectRefused(StoredAt(good, node + 2 * n, static_cast<uint16_t>(last ^ 1)), "node_column",
                "a varnish tail slot");
  ExpectRefused(StoredAt<uint32_t>(StoredAt<uint32_t>(good, hash + 4, 0), hash + 0, 1),
                "hash_column", "descending hashes");
}

}  // namespace
}  // namespace chash
