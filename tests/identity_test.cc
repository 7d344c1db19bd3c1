// Ring identity. The expected values are NOT computed by the code under
// test: they come from tests/data/identity/expected_fingerprints.py, an
// independent implementation of the serializations in chash/identity.h
// (Python hashlib + zlib), and SHA-256 is checked on the FIPS 180-2
// examples. The same constants must come out on every SIMD target, every
// compiler and every architecture (the arm64 build runs this under qemu).
#include <algorithm>
#include <random>

#include "identity/sha256.h"
#include "test_util.h"

namespace chash {
namespace {

using testing::LoadServers;

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (const unsigned char c : bytes) {
    hex.push_back(kDigits[c >> 4]);
    hex.push_back(kDigits[c & 0xF]);
  }
  return hex;
}

std::vector<ServerEntry> Inline(std::string_view text) {
  Result<std::vector<ServerEntry>> servers = ParseServersText(text, "inline");
  EXPECT_TRUE(servers.ok());
  return servers.ok() ? servers.value() : std::vector<ServerEntry>{};
}

constexpr std::string_view kInlineServers =
    "10.0.0.1:443 3\n[::1]:7777 1\n127.0.0.2 2\nunix:/run/app.sock 1\n10.0.0.9:80 0\n";

// FIPS 180-2 appendix B examples, and a long message across many blocks.
TEST(Sha256Test, StandardExamples) {
  EXPECT_EQ(Sha256("abc").Hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256("").Hex(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq").Hex(),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256(std::string(1000000, 'a')).Hex(),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Streaming in pieces of every size gives the one-shot digest (block and
// padding boundaries: 55, 56, 63, 64, 65 bytes...).
TEST(Sha256Test, StreamingMatchesOneShot) {
  std::mt19937 rng(1);
  for (size_t len = 0; len < 300; ++len) {
    std::string message(len, '\0');
    for (char& c : message) c = static_cast<char>(rng());
    for (size_t piece = 1; piece <= 70; piece += 23) {
      internal::Sha256Hasher hasher;
      for (size_t at = 0; at < len; at += piece) {
        hasher.Update(message.data() + at, std::min(piece, len - at));
      }
      ASSERT_EQ(hasher.Finish(), Sha256(message).bytes) << len << " in pieces of " << piece;
    }
  }
}

TEST(RingIdentity, SerializationByteForByte) {
  const Ring ring = testing::MustBuild(Inline(kInlineServers), {.flavor = Flavor::kNginx});
  EXPECT_EQ(Hex(RingIdentityBytes(ring)),
            "63686173682d72696e670100010000a000000004000000030000000c00000031302e302e302e310034"
            "3433010000000a0000005b3a3a315d0037373737020000000a0000003132372e302e302e3200010000"
            "000e0000002f72756e2f6170702e736f636b00");
}

TEST(RingIdentity, MatchesTheIndependentSpecOnEveryTarget) {
  testing::ForEachTarget([](const std::string&) {
    const Ring inline_ring = testing::MustBuild(Inline(kInlineServers), {.flavor = Flavor::kNginx});
    EXPECT_EQ(RingFingerprint(inline_ring).Hex(),
              "6acfdb7239fdb774bcd2a5c4f26bce8fe8622572f7c32f2f64ad6b8eb385401e");
    EXPECT_EQ(PointsDigest(inline_ring).Hex(),
              "f7e3212eb42b195b5922d985eebfb56e7c8d6c87236181019f69a8b0a98b45d7");
    EXPECT_EQ(BackendFingerprint(inline_ring).Hex(),
              "b64ecb313729ba296de1ddef91a432e4d99d418a5829d8443759e79960cf9aa1");

    // nginx a: 144,000 points, 4 collisions (their losers are digested).
    const Ring a = testing::MustBuild(LoadServers("nginx/a.servers"), {});
    EXPECT_EQ(a.collision_losers().hashes.size(), 4u);
    EXPECT_EQ(RingFingerprint(a).Hex(),
              "7e7742929309bdce1a3ea066e95231c52fde9cbb109bbe78fe3513e5fff6dff2");
    EXPECT_EQ(PointsDigest(a).Hex(),
              "888d99672476751518b76d32570f81e83422833dc310982180a0ccc93b654eec");

    // pingora-v2 at multiple 160 over 50 IPv4/IPv6 servers: address order.
    const Ring v2 = testing::MustBuild(LoadServers("pingora/servers_50.txt"),
                                       {.flavor = Flavor::kPingoraV2, .point_multiple = 160});
    EXPECT_EQ(RingFingerprint(v2).Hex(),
              "c033439cc81358bbb101409d5e11854eae92e557a726b286c0673cab799fc286");
    EXPECT_EQ(PointsDigest(v2).Hex(),
              "e57bda238b8179864ab82865c214a5a723b49b9c2a20bb3f98ce3a247b6d6594");

    const RawPoint points[] = {{100, 2}, {100, 0}, {300, 0}, {100, 1}, {200, 3}, {300, 0}};
    const uint32_t rank[] = {2, 0, 1, 3};
    Result<Ring> raw = BuildRingFromPoints(4, points, rank);
    ASSERT_TRUE(raw.ok());
    EXPECT_EQ(RingFingerprint(raw.value()).Hex(),
              "d81c3f6c42e13f44a7b5b57956eba8e9e9a357aaf1351342f1410fa1c9af78a5");
  });
}

// The fingerprint follows routing: what cannot change an answer does not
// change it, and what can, does.
TEST(RingIdentity, FollowsRoutingNotSpelling) {
  std::vector<ServerEntry> servers = LoadServers("pingora/servers_50.txt");
  const RingOptions v2{.flavor = Flavor::kPingoraV2, .point_multiple = 16};
  const Ring base = testing::MustBuild(servers, v2);
  std::vector<ServerEntry> shuffled = servers;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(4));
  const Ring reordered = testing::MustBuild(shuffled, v2);
  // Address order: the file's order does not matter.
  EXPECT_EQ(RingFingerprint(reordered), RingFingerprint(base));
  EXPECT_EQ(PointsDigest(reordered), PointsDigest(base));
  // Config order (nginx, v1): it does (it decides collisions).
  const std::vector<ServerEntry> a = LoadServers("nginx/a.servers");
  std::vector<ServerEntry> a_reversed(a.rbegin(), a.rend());
  EXPECT_NE(RingFingerprint(testing::MustBuild(a, {})),
            RingFingerprint(testing::MustBuild(a_reversed, {})));
  // Draining a node = deleting its line.
  std::vector<ServerEntry> drained = servers, removed;
  drained[7].weight = 0;
  for (size_t i = 0; i < servers.size(); ++i) {
    if (i != 7) removed.push_back(servers[i]);
  }
  EXPECT_EQ(RingFingerprint(testing::MustBuild(drained, v2)),
            RingFingerprint(testing::MustBuild(removed, v2)));
  EXPECT_EQ(PointsDigest(testing::MustBuild(drained, v2)),
            PointsDigest(testing::MustBuild(removed, v2)));
  EXPECT_NE(RingFingerprint(testing::MustBuild(drained, v2)), RingFingerprint(base));
  // Another multiple, flavor or weight is another ring.
  EXPECT_NE(RingFingerprint(
                testing::MustBuild(servers, {.flavor = Flavor::kPingoraV2, .point_multiple = 17})),
            RingFingerprint(base));
  EXPECT_NE(RingFingerprint(testing::MustBuild(servers, {.flavor = Flavor::kPingoraV1})),
            RingFingerprint(testing::MustBuild(
                servers, {.flavor = Flavor::kPingoraV2, .point_multiple = 160})));
  std::vector<ServerEntry> heavier = servers;
  heavier[3].weight += 1;
  EXPECT_NE(RingFingerprint(testing::MustBuild(heavier, v2)), RingFingerprint(base));
  // The empty ring has a fingerprint too.
  EXPECT_EQ(RingFingerprint(Ring()).Hex().size(), 64u);
}

// One backend snapshot, rings of every flavor and multiple: one backend
// fingerprint. A changed weight or server is another snapshot.
TEST(BackendIdentityTest, SameSnapshotAcrossFlavors) {
  const std::vector<ServerEntry> five = LoadServers("pingora/servers_5.txt");
  const Fingerprint expected = BackendFingerprint(testing::MustBuild(five, {}));
  EXPECT_EQ(expected.Hex(), "6ad94c211635d4c6a992edba735c5557295742b99d65ef80318b372fcd666573");
  EXPECT_EQ(BackendFingerprint(testing::MustBuild(five, {.flavor = Flavor::kPingoraV1})), expected);
  EXPECT_EQ(BackendFingerprint(
                testing::MustBuild(five, {.flavor = Flavor::kPingoraV2, .point_multiple = 16})),
            expected);
  std::vector<ServerEntry> reweighted = five;
  reweighted[0].weight = 9;
  EXPECT_NE(BackendFingerprint(testing::MustBuild(reweighted, {})), expected);
}

TEST(BackendIdentityTest, CanonicalNames) {
  const Ring nginx = testing::MustBuild(
      Inline("[0::1]:07777\n10.0.0.1:443\n127.0.0.2\nunix:/run/a.sock\ncache-1:8080\n"), {});
  EXPECT_EQ(BackendIdentity(nginx.node(0), 0), "[::1]:7777");
  EXPECT_EQ(BackendIdentity(nginx.node(1), 1), "10.0.0.1:443");
  EXPECT_EQ(BackendIdentity(nginx.node(2), 2), "127.0.0.2");
  EXPECT_EQ(BackendIdentity(nginx.node(3), 3), "unix:/run/a.sock");
  EXPECT_EQ(BackendIdentity(nginx.node(4), 4), "cache-1:8080");
  const Ring v2 = testing::MustBuild(Inline("[::ffff:10.1.2.3]:443\n"),
                                     {.flavor = Flavor::kPingoraV2, .point_multiple = 1});
  EXPECT_EQ(BackendIdentity(v2.node(0), 0), "[::ffff:10.1.2.3]:443");
  const RawPoint points[] = {{5, 1}};
  Result<Ring> raw = BuildRingFromPoints(2, points);
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(BackendIdentity(raw.value().node(1), 1), "#1");
}

}  // namespace
}  // namespace chash
