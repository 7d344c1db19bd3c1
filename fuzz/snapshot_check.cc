#include "snapshot_check.h"

#include <sodium/crypto_sign_ed25519.h>

#include <cstring>
#include <initializer_list>
#include <vector>

#include "chash/failover.h"
#include "chash/snapshot.h"
#include "fuzz_support.h"
#include "lookup_diff.h"
#include "reference/reference_ring.h"
#include "snapshot/format.h"

namespace chash::fuzz {
namespace {

namespace fmt = internal::snapshot;

void FixChecksum(std::string& bytes) {
  if (bytes.size() < fmt::kHeaderBytes + fmt::kTrailerBytes) return;
  const std::array<uint8_t, 16> sum =
      fmt::Checksum(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size() - 16);
  std::memcpy(bytes.data() + bytes.size() - 16, sum.data(), 16);
}

// A refusal must be well formed and name one of the documented checks.
std::string CheckRefusal(const Status& status, const std::string& description) {
  CheckErrorFormat(status, description);
  const std::string check(SnapshotCheckName(FailedSnapshotCheck(status)));
  static const char* const kChecks[] = {
      "size",        "magic",      "version",     "header",      "sections",
      "checksum",    "min_version", "expired",    "signature",   "label",
      "node_table",  "hash_column", "node_column", "collisions", "subsets",
      "index",       "fingerprint", "points_digest", "options",   "low_column"};
  for (const char* known : kChecks) {
    if (check == known) return "refused " + check;
  }
  if (status.code() == StatusCode::kOutOfMemory) return "refused out_of_memory";
  Fail("a refusal names no known check: " + status.ToString(), description);
}

// Probes where answers change: for each of the ring's first 4,096 points,
// its hash (hash(), or hash64() for 64-bit probes) plus each of `deltas`;
// for a table (Maglev), its first 4,096 entries.
template <typename Hash>
void AddPointProbes(const Ring& ring, std::initializer_list<Hash> deltas,
                    std::vector<Hash>& probes) {
  if (ring.lookup_rule() == LookupRule::kTable) {
    for (uint64_t i = 0; i < ring.num_points() && i < 4096; ++i) {
      probes.push_back(static_cast<Hash>(i));
    }
    return;
  }
  PointCursor cursor = ring.Begin();
  for (uint64_t i = 0; i < ring.num_points() && i < 4096; ++i, cursor.Advance()) {
    const Hash hash = sizeof(Hash) == 8 ? static_cast<Hash>(cursor.hash64()) : cursor.hash();
    for (const Hash delta : deltas) probes.push_back(hash + delta);
  }
}

// Answers in bounds on a ring of the other programs' flavors (1.4): their
// 64-bit lookups, walks and retries.
void CheckProgramInBounds(const Ring& ring, const std::string& description) {
  std::vector<uint64_t> probes = {0, 1, UINT32_MAX, uint64_t{UINT32_MAX} + 1, UINT64_MAX};
  AddPointProbes<uint64_t>(ring, {0, 1}, probes);
  std::vector<uint32_t> batch(probes.size());
  ring.FindNodesByHash64(probes, batch);
  const auto in_bounds = [&](uint32_t node) {
    return node == Ring::kNoNode || node < ring.num_nodes();
  };
  for (size_t i = 0; i < probes.size(); ++i) {
    const uint32_t node = ring.FindNodeByHash64(probes[i]);
    if (node != batch[i]) Fail("single and batch 64-bit lookups differ", description);
    if (!in_bounds(node) || !in_bounds(ring.FindNodeForAttempt(probes[i], 3))) {
      Fail("a lookup answered node " + std::to_string(node) + " of " +
               std::to_string(ring.num_nodes()),
           description);
    }
    PointCursor walk = ring.WalkFromHash64(probes[i]);
    for (int step = 0; step < 3; ++step) {
      if (!in_bounds(walk.Next())) Fail("a walk left the node table", description);
    }
  }
  for (const char* key : {"", "a", "{t}key"}) {
    if (!in_bounds(ring.FindNode(key))) Fail("a key lookup left the node table", description);
  }
}

// An accepted file of the other programs' flavors: its ring answers as the
// ring RingBuilder builds from its own node table, options, server ids and
// labels (the builder is held to the programs by program_diff).
void CompareWithRebuilt(const Ring& ring, const std::string& description) {
  RingOptions options = ring.options();
  options.max_points = kHardMaxPoints;
  RingBuilder builder(options);
  const bool twemproxy = options.flavor == Flavor::kKetamaMd5 &&
                         options.ketama.variant == KetamaVariant::kTwemproxy;
  for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
    const NodeInfo& node = ring.node(id);
    NodeOptions extra;
    extra.server_id = node.server_id;
    if (twemproxy) extra.name = node.address.host;
    const Status added = builder.Add(node.address.written, node.weight, extra);
    if (!added.ok()) Fail("an accepted snapshot's node does not add: " + added.ToString(), description);
  }
  Result<Ring> rebuilt = std::move(builder).Build();
  if (!rebuilt.ok()) {
    Fail("an accepted snapshot's nodes do not build: " + rebuilt.status().ToString(), description);
  }
  const Ring& want = rebuilt.value();
  if (want.num_points() != ring.num_points()) Fail("point counts differ from the rebuilt ring", description);
  std::vector<uint64_t> probes = {0, UINT32_MAX, UINT64_MAX};
  AddPointProbes<uint64_t>(want, {0, UINT64_MAX /* -1 */, 1}, probes);
  for (const uint64_t probe : probes) {
    if (want.FindNodeByHash64(probe) != ring.FindNodeByHash64(probe) ||
        want.FindNodeForAttempt(probe, 2) != ring.FindNodeForAttempt(probe, 2)) {
      Fail("a loaded ring differs from its rebuilt ring at " + std::to_string(probe), description);
    }
  }
  for (const char* key : {"", "a", "key", "{t}key", "/index.html"}) {
    if (want.KeyHash(key) != ring.KeyHash(key) || want.FindNode(key) != ring.FindNode(key)) {
      Fail(std::string("a loaded ring hashes or routes key '") + key + "' otherwise", description);
    }
  }
}

// Answers in bounds: for a ring the digest did not vouch for.
void CheckInBounds(const Ring& ring, const std::string& description) {
  if (ring.flavor() > Flavor::kResty) {
    CheckProgramInBounds(ring, description);
    return;
  }
  std::vector<uint32_t> probes = {0, 1, UINT32_MAX - 1, UINT32_MAX};
  AddPointProbes<uint32_t>(ring, {0, 1}, probes);
  std::vector<uint32_t> batch(probes.size());
  ring.FindNodesByHash(probes, batch);
  for (size_t i = 0; i < probes.size(); ++i) {
    const uint32_t node = ring.FindNodeByHash(probes[i]);
    if (node != batch[i]) Fail("single and batch lookups differ", description);
    if (ring.empty() ? node != Ring::kNoNode : node >= ring.num_nodes()) {
      Fail("a lookup answered node " + std::to_string(node) + " of " +
               std::to_string(ring.num_nodes()),
           description);
    }
  }
}

// A fixed test key (seed 1, 2, 3, ...): the seed files stay byte-stable,
// and the check verifies signatures by it.
SecretKey FuzzSigningKey() {
  SecretKey key;
  std::array<uint8_t, 32> seed;
  for (size_t i = 0; i < seed.size(); ++i) seed[i] = static_cast<uint8_t>(i + 1);
  std::array<uint8_t, 32> pub;
  crypto_sign_ed25519_seed_keypair(pub.data(), key.bytes.data(), seed.data());
  return key;
}

}  // namespace

std::string RunSnapshotCheck(const uint8_t* data, size_t size) {
  ReachTheSingleLookupWindow();
  if (size == 0) return "refused size";
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) FixChecksum(bytes);
  const std::string description = "snapshot of " + std::to_string(bytes.size()) + " bytes";

  SnapshotLoadOptions unverified;
  unverified.verify_checksum = false;
  Result<std::shared_ptr<const RingSnapshot>> loose = LoadSnapshotFromBytes(bytes, unverified);
  if (loose.ok()) {
    CheckInBounds(loose.value()->ring(), description);
  } else {
    CheckRefusal(loose.status(), description);
  }
  Result<std::shared_ptr<const RingSnapshot>> plain = LoadSnapshotFromBytes(bytes);
  if (!plain.ok()) CheckRefusal(plain.status(), description);
  // The signature path (its chunks hashed while the other checks run): a
  // file it accepts, the plain load accepts too, but for the checksum, which
  // a verified signature stands in for (a wrong checksum field outside the
  // signed bytes): then the unverified load accepts it.
  static const PublicKey trusted = FuzzSigningKey().public_key();
  SnapshotLoadOptions signature;
  signature.trusted_keys = {trusted};
  Result<std::shared_ptr<const RingSnapshot>> signed_load = LoadSnapshotFromBytes(bytes, signature);
  if (!signed_load.ok()) {
    CheckRefusal(signed_load.status(), description);
  } else if (!plain.ok() &&
             (FailedSnapshotCheck(plain.status()) != SnapshotCheck::kChecksum || !loose.ok())) {
    Fail("a signature-checked load accepted what the plain load refused beyond the checksum",
         description);
  }

  SnapshotLoadOptions deep;
  deep.verify_points_digest = true;
  Result<std::shared_ptr<const RingSnapshot>> loaded = LoadSnapshotFromBytes(bytes, deep);
  if (!loaded.ok()) return CheckRefusal(loaded.status(), description);
  if (!plain.ok() || !loose.ok()) {
    Fail("a deeper load accepted what a shallower one refused", description);
  }
  const RingSnapshot& snapshot = *loaded.value();
  const Ring& ring = snapshot.ring();
  if (ring.flavor() > Flavor::kResty) {
    CheckProgramInBounds(ring, description);
    CompareWithRebuilt(ring, description);
    return "accepted";
  }

  // The reference ring of the snapshot's own server list.
  std::vector<reference::Server> servers;
  for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
    servers.push_back({ring.node(id).address.written, ring.node(id).weight});
  }
  const SnapshotInfo& info = snapshot.info();
  Result<reference::ReferenceRing> ref =
      reference::ReferenceRing::Build(info.flavor, info.point_multiple, servers, kHardMaxPoints);
  if (!ref.ok()) {
    Fail("an accepted snapshot's servers do not build: " + ref.status().ToString(), description);
  }
  CompareRingWithReference(ring, ref.value(), {"", "a", "key"}, {}, description);

  // Each stored subset answers as the reference ring of its servers alone.
  for (const NamedSubset& subset : snapshot.subsets()) {
    std::vector<reference::Server> part(servers.size());
    for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
      part[id] = {servers[id].address, subset.mask.available(id) ? servers[id].weight : 0};
    }
    Result<reference::ReferenceRing> sub =
        reference::ReferenceRing::Build(info.flavor, info.point_multiple, part, kHardMaxPoints);
    if (!sub.ok()) Fail("a subset's servers do not build", description);
    std::vector<uint32_t> probes = {0, UINT32_MAX};
    for (const reference::Point& point : ref.value().points()) {
      probes.push_back(point.hash);
      probes.push_back(point.hash + 1);
      if (probes.size() > 2048) break;
    }
    for (const uint32_t probe : probes) {
      const uint32_t want = sub.value().points().empty() ? Ring::kNoNode
                                                         : sub.value().FindNodeByHash(probe);
      if (FindAvailableNodeByHash(ring, subset.mask, probe) != want) {
        Fail("subset '" + subset.name + "' differs from its reference ring at " + Hex32(probe),
             description);
      }
    }
  }
  return "accepted";
}

namespace {

// The seeds' write options: config version 42, `label`, a fixed creation
// time, signed with FuzzSigningKey() when `sign`.
SnapshotWriteOptions SeedWriteOptions(const char* label, bool sign) {
  SnapshotWriteOptions options;
  options.config_version = 42;
  options.label = label;
  options.created_unix_seconds = 1700000000;
  if (sign) options.signing_key = FuzzSigningKey();
  return options;
}

// The file of `ring` ("" if it was not built or cannot be written).
std::string SeedFile(const Result<Ring>& ring, const SnapshotWriteOptions& options) {
  if (!ring.ok()) return {};
  Result<std::string> bytes = SerializeSnapshot(ring.value(), options);
  return bytes.ok() ? bytes.value() : std::string();
}

}  // namespace

std::string SnapshotSeedBytes(int flavor, uint32_t multiple, uint32_t nodes, int subsets,
                              bool sign, bool store_index) {
  const Flavor flavors[] = {Flavor::kNginx, Flavor::kPingoraV1, Flavor::kPingoraV2};
  RingBuilder builder({.flavor = flavors[flavor], .point_multiple = multiple});
  for (uint32_t i = 0; i < nodes; ++i) {
    const std::string address = "10.3." + std::to_string(i / 200) + "." +
                                std::to_string(i % 200 + 1) + ":" + std::to_string(8000 + i);
    (void)builder.Add(address, i % 5 == 4 ? 0 : 1 + i % 3);
  }
  Result<Ring> ring = std::move(builder).Build();
  if (!ring.ok()) return {};
  SnapshotWriteOptions options = SeedWriteOptions("fuzz seed", sign);
  for (int s = 0; s < subsets; ++s) {
    NodeMask mask(ring.value().num_nodes(), false);
    for (uint32_t id = static_cast<uint32_t>(s); id < nodes; id += 2 + s) mask.Set(id, true);
    options.subsets.push_back({"subset-" + std::to_string(s), mask});
  }
  options.store_search_index = store_index;
  return SeedFile(ring, options);
}

std::string ProgramSnapshotSeedBytes(int which, bool sign) {
  RingOptions options;
  switch (which) {
    case 0:
      options = {.flavor = Flavor::kHaproxy,
                 .haproxy = {.hash_function = HaproxyHash::kDjb2, .avalanche = true}};
      break;
    case 1:
      options = {.flavor = Flavor::kKetamaMd5,
                 .ketama = {.variant = KetamaVariant::kTwemproxy, .hash_tag = {'{', '}'}}};
      break;
    case 2:
      options = {.flavor = Flavor::kVarnishShard, .varnish = {.replicas = 3}};
      break;
    case 3:
      options = {.flavor = Flavor::kEnvoyRing,
                 .envoy_ring = {.minimum_ring_size = 64, .maximum_ring_size = 96}};
      break;
    default:
      options = {.flavor = Flavor::kEnvoyMaglev, .maglev = {.table_size = 67}};
      break;
  }
  RingBuilder builder(options);
  for (uint32_t i = 0; i < 6; ++i) {
    NodeOptions extra;
    if (which == 0 && i % 2 == 0) extra.server_id = 10 + i;
    const std::string name = "cache-" + std::to_string(i);
    if (which == 1 && i % 2 == 1) extra.name = name;
    (void)builder.Add("10.4.0." + std::to_string(i + 1) + ":11211", i == 4 ? 0 : 1 + i % 3, extra);
  }
  Result<Ring> ring = std::move(builder).Build();
  if (!ring.ok()) return {};
  SnapshotWriteOptions write = SeedWriteOptions("fuzz seed 1.4", sign);
  NodeMask mask(ring.value().num_nodes(), false);
  mask.Set(1, true);
  // The writer refuses subsets where masks are inexact (weighted ketama,
  // Envoy); the reader still takes the files 1.0.0 wrote with them.
  if (MasksExactly(ring.value())) write.subsets.push_back({"one", mask});
  return SeedFile(ring, write);
}

}  // namespace chash::fuzz
