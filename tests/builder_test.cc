// RingBuilder validation: every StatusCode reachable, each error naming the
// offending node, the reference refusing with the same code, and a failed
// Add leaving the builder unchanged.
#include "reference/reference_ring.h"
#include "test_util.h"

namespace chash {
namespace {

using reference::ReferenceRing;
using reference::Server;

// Adds `servers` in order, returns the first failure (or OK), and checks the
// reference ring refuses or accepts the same input with the same code.
Status AddAll(const RingOptions& options, const std::vector<Server>& servers) {
  RingBuilder builder(options);
  Status first;
  for (const Server& server : servers) {
    first = builder.Add(server.address, server.weight);
    if (!first.ok()) break;
  }
  if (first.ok()) first = std::move(builder).Build().status();
  const Status reference =
      ReferenceRing::Build(options.flavor, options.point_multiple, servers, options.max_points)
          .status();
  EXPECT_EQ(reference.code(), first.code()) << first.ToString() << " vs " << reference.ToString();
  return first;
}

void ExpectError(const Status& status, StatusCode code, const std::string& fragment) {
  EXPECT_EQ(status.code(), code) << status.ToString();
  EXPECT_NE(status.message().find(fragment), std::string::npos)
      << "'" << status.message() << "' should contain '" << fragment << "'";
}

TEST(Builder, BadAddressNamesTheNode) {
  ExpectError(AddAll({}, {{"10.0.0.1:80", 1}, {"10.0.0.2:99999", 1}}), StatusCode::kBadAddress,
              "node 1: address '10.0.0.2:99999'");
  ExpectError(AddAll({.flavor = Flavor::kPingoraV1}, {{"localhost:80", 1}}),
              StatusCode::kBadAddress, "node 0: address 'localhost:80'");
}

TEST(Builder, DuplicateIdentityIsRefused) {
  ExpectError(AddAll({}, {{"10.0.0.1:80", 1}, {"10.0.0.2:80", 1}, {"10.0.0.1:80", 3}}),
              StatusCode::kDuplicateNode, "node 2 '10.0.0.1:80': same identity as node 0");
  // nginx hashes "127.0.0.2" and "127.0.0.2:"... the latter is refused as a
  // bad port; but pingora texts that differ and print the same collide:
  ExpectError(AddAll({.flavor = Flavor::kPingoraV1},
                     {{"[2001:DB8::1]:80", 1}, {"[2001:db8:0:0:0:0:0:1]:80", 1}}),
              StatusCode::kDuplicateNode, "same identity as node 0");
  // The same IP in IPv4 and IPv4-mapped IPv6 form is two socket addresses.
  EXPECT_TRUE(AddAll({.flavor = Flavor::kPingoraV1},
                     {{"1.2.3.4:80", 1}, {"[::ffff:1.2.3.4]:80", 1}})
                  .ok());
}

TEST(Builder, MultipleIsValidated) {
  ExpectError(AddAll({.flavor = Flavor::kPingoraV2, .point_multiple = 0}, {{"1.2.3.4:80", 1}}),
              StatusCode::kBadMultiple, "at least 1");
  ExpectError(AddAll({.flavor = Flavor::kNginx, .point_multiple = 16}, {{"1.2.3.4:80", 1}}),
              StatusCode::kBadMultiple, "only pingora-v2");
  ExpectError(AddAll({.flavor = Flavor::kPingoraV1, .point_multiple = 100}, {}),
              StatusCode::kBadMultiple, "only pingora-v2");
  // Add and Build report what ValidateRingOptions reports, message and all.
  const RingOptions bad = {.flavor = Flavor::kNginx, .point_multiple = 16};
  const Status checked = ValidateRingOptions(bad);
  EXPECT_EQ(checked.code(), StatusCode::kBadMultiple);
  EXPECT_EQ(checked.message(), RingBuilder(bad).Add("1.2.3.4:80", 1).message());
  EXPECT_TRUE(ValidateRingOptions({.flavor = Flavor::kResty, .point_multiple = 7}).ok());
  EXPECT_EQ(ValidateRingOptions({.max_points = 0}).code(), StatusCode::kBadArgument);
  EXPECT_TRUE(FlavorTakesPointMultiple(Flavor::kPingoraV2));
  EXPECT_FALSE(FlavorTakesPointMultiple(Flavor::kPingoraV1));
  // The flavors that take one, named from the table.
  EXPECT_EQ(ValidateRingOptions({.flavor = Flavor::kNginx, .point_multiple = 16}).message(),
            "nginx uses 160 points per weight unit; only pingora-v2 and resty take a point "
            "multiple (got 16)");
}

TEST(Builder, WeightTimesMultipleOverflowing32BitsIsRefused) {
  ExpectError(AddAll({.flavor = Flavor::kPingoraV2, .point_multiple = 3000000000u},
                     {{"1.2.3.4:80", 0}, {"1.2.3.5:80", 2}}),
              StatusCode::kTooManyPoints, "node 1 '1.2.3.5:80': weight 2 x multiple 3000000000");
  ExpectError(AddAll({}, {{"1.2.3.4:80", 0xFFFFFFFFu}}), StatusCode::kTooManyPoints,
              "overflows 32 bits");
}

TEST(Builder, TotalPointsOverTheCapIsRefused) {
  ExpectError(AddAll({.max_points = 1000}, {{"1.2.3.4:80", 6}, {"1.2.3.5:80", 1}}),
              StatusCode::kTooManyPoints, "node 1 '1.2.3.5:80': ring would have 1120 points");
  // The default cap: 2^30 points.
  ExpectError(AddAll({.flavor = Flavor::kPingoraV2, .point_multiple = 1u << 29},
                     {{"1.2.3.4:80", 1}, {"1.2.3.5:80", 1}, {"1.2.3.6:80", 1}}),
              StatusCode::kTooManyPoints, "over the cap of 1073741824");
  ExpectError(AddAll({.max_points = kHardMaxPoints + 1}, {}), StatusCode::kBadArgument,
              "max_points");
}

TEST(Builder, MoreThan65536NodesIsRefusedNotWrapped) {
  // Weight 0 keeps this cheap: drained nodes own no points but take ids.
  RingBuilder builder({.flavor = Flavor::kPingoraV2, .point_multiple = 1});
  std::vector<Server> servers;
  for (uint32_t i = 0; i <= kMaxNodes; ++i) {
    servers.push_back({"10." + std::to_string(i >> 16) + "." + std::to_string((i >> 8) & 255) +
                           "." + std::to_string(i & 255) + ":80",
                       i % 1000 == 0 ? 1u : 0u});
  }
  for (uint32_t i = 0; i < kMaxNodes; ++i) {
    ASSERT_TRUE(builder.Add(servers[i].address, servers[i].weight).ok()) << i;
  }
  ExpectError(builder.Add(servers[kMaxNodes].address, 1), StatusCode::kTooManyNodes,
              "node 65536 '10.1.0.0:80': more than 65,536 nodes");
  EXPECT_EQ(builder.size(), kMaxNodes);  // the failed Add changed nothing
  Result<Ring> ring = std::move(builder).Build();
  ASSERT_TRUE(ring.ok());
  EXPECT_EQ(ring.value().num_nodes(), kMaxNodes);
  EXPECT_EQ(ring.value().num_points(), 66u);
  // Node 65000 (weight 1) answers at its own point: no u16 wrap.
  const uint32_t node = 65000;
  const NodeInfo& info = ring.value().node(node);
  EXPECT_EQ(info.weight, 1u);
  const uint32_t point = Crc32Extend(Crc32(info.address.HashedBytes()), "\0\0\0\0", 4);
  EXPECT_EQ(ring.value().FindNodeByHash(point), node);
  EXPECT_EQ(ReferenceRing::Build(Flavor::kPingoraV2, 1, servers).status().code(),
            StatusCode::kTooManyNodes);
}

TEST(Builder, ZeroWeightIsADrainedNode) {
  RingBuilder builder({.flavor = Flavor::kPingoraV1});
  ASSERT_TRUE(builder.Add("10.0.0.1:80", 1).ok());
  ASSERT_TRUE(builder.Add("10.0.0.2:80", 0).ok());
  ASSERT_TRUE(builder.Add("10.0.0.3:80", 2).ok());
  Result<Ring> ring = std::move(builder).Build();
  ASSERT_TRUE(ring.ok());
  EXPECT_EQ(ring.value().num_nodes(), 3u);
  EXPECT_EQ(ring.value().points_generated(), 480u);
  EXPECT_EQ(ring.value().nodes_with_points(), 2u);
  EXPECT_EQ(ring.value().node(1).address.written, "10.0.0.2:80");
  for (PointCursor c = ring.value().Begin();;) {
    EXPECT_NE(c.node(), 1u);
    c.Advance();
    if (c == ring.value().Begin()) break;
  }
  // Same answers as the ring without the drained node, ids aside.
  RingBuilder without({.flavor = Flavor::kPingoraV1});
  ASSERT_TRUE(without.Add("10.0.0.1:80", 1).ok());
  ASSERT_TRUE(without.Add("10.0.0.3:80", 2).ok());
  Result<Ring> expected = std::move(without).Build();
  for (uint32_t h = 0; h < 2000; ++h) {
    const uint32_t hash = h * 2147483u;
    const uint32_t a = ring.value().FindNodeByHash(hash);
    const uint32_t b = expected.value().FindNodeByHash(hash);
    EXPECT_EQ(ring.value().node(a).address.written, expected.value().node(b).address.written);
  }
}

TEST(Builder, EmptyBuilderGivesTheEmptyRing) {
  Result<Ring> ring = RingBuilder().Build();
  ASSERT_TRUE(ring.ok());
  EXPECT_TRUE(ring.value().empty());
  EXPECT_EQ(ring.value().FindNode("a"), Ring::kNoNode);
}

TEST(Builder, StatusCodesHaveStableNames) {
  EXPECT_EQ(StatusCodeName(StatusCode::kTooManyNodes), "too_many_nodes");
  EXPECT_EQ(Status(StatusCode::kBadAddress, "x").ToString(), "bad_address: x");
  EXPECT_EQ(Status().ToString(), "ok");
}

}  // namespace
}  // namespace chash
