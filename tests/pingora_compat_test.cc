// pingora-ketama's own expectations (pingora-ketama/src/lib.rs tests,
// v0.8.0), ported: the answers are pingora's, not chash's.
#include "test_util.h"

namespace chash {
namespace {

Ring PingoraRing(const std::vector<std::string>& addresses, uint32_t weight = 1) {
  RingBuilder builder({.flavor = Flavor::kPingoraV1});
  for (const std::string& address : addresses) {
    EXPECT_TRUE(builder.Add(address, weight).ok()) << address;
  }
  return std::move(builder).Build().value();
}

std::string Node(const Ring& ring, std::string_view key) {
  const uint32_t node = ring.FindNode(key);
  return node == Ring::kNoNode ? "none" : ring.node(node).address.written;
}

TEST(PingoraCompat, ConsistencyAfterAddingHost) {
  for (const int hosts : {10, 11}) {
    std::vector<std::string> addresses;
    for (int u = 1; u <= hosts; ++u) addresses.push_back("127.0.0." + std::to_string(u) + ":6443");
    const Ring ring = PingoraRing(addresses);
    EXPECT_EQ(Node(ring, "a"), "127.0.0.10:6443") << hosts;
    EXPECT_EQ(Node(ring, "b"), "127.0.0.5:6443") << hosts;
  }
}

TEST(PingoraCompat, MatchesNginxSample) {
  const Ring ring = PingoraRing({"127.0.0.1:7777", "127.0.0.1:7778"});
  EXPECT_EQ(Node(ring, "/some/path"), "127.0.0.1:7778");
  EXPECT_EQ(Node(ring, "/some/longer/path"), "127.0.0.1:7777");
  EXPECT_EQ(Node(ring, "/sad/zaidoon"), "127.0.0.1:7778");
  EXPECT_EQ(Node(ring, "/g"), "127.0.0.1:7777");
  EXPECT_EQ(Node(ring, "/pingora/team/is/cool/and/this/is/a/long/uri"), "127.0.0.1:7778");
  EXPECT_EQ(Node(ring, "/i/am/not/confident/in/this/code"), "127.0.0.1:7777");
}

std::vector<std::string> Walk(const Ring& ring, std::string_view key, int steps) {
  std::vector<std::string> nodes;
  PointCursor walk = ring.Walk(key);
  for (int i = 0; i < steps; ++i) nodes.push_back(ring.node(walk.Next()).address.written);
  return nodes;
}

TEST(PingoraCompat, NodeIter) {
  const Ring three = PingoraRing({"127.0.0.1:7777", "127.0.0.1:7778", "127.0.0.1:7779"});
  EXPECT_EQ(Walk(three, "doghash", 8),
            (std::vector<std::string>{"127.0.0.1:7778", "127.0.0.1:7779", "127.0.0.1:7779",
                                      "127.0.0.1:7777", "127.0.0.1:7777", "127.0.0.1:7778",
                                      "127.0.0.1:7778", "127.0.0.1:7779"}));
  const Ring two = PingoraRing({"127.0.0.1:7777", "127.0.0.1:7779"});
  EXPECT_EQ(Walk(two, "doghash", 5),
            (std::vector<std::string>{"127.0.0.1:7779", "127.0.0.1:7779", "127.0.0.1:7777",
                                      "127.0.0.1:7777", "127.0.0.1:7779"}));
  const Ring one = PingoraRing({"127.0.0.1:7777"});
  const PointCursor start = one.Walk("doghash");
  PointCursor walk = start;
  for (uint64_t i = 0; i < one.num_points(); ++i) EXPECT_NE(walk.Next(), Ring::kNoNode);
  EXPECT_TRUE(walk == start);  // wrapped around
}

TEST(PingoraCompat, EmptyRing) {
  const Ring ring = PingoraRing({});
  EXPECT_EQ(ring.FindNode("doghash"), Ring::kNoNode);
  PointCursor walk = ring.Walk("doghash");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(walk.Next(), Ring::kNoNode);
}

TEST(PingoraCompat, Ipv6Ring) {
  const Ring ring = PingoraRing({"[::1]:7777", "[::1]:7778", "[::1]:7779"});
  EXPECT_EQ(Walk(ring, "doghash", 7),
            (std::vector<std::string>{"[::1]:7777", "[::1]:7778", "[::1]:7777", "[::1]:7778",
                                      "[::1]:7778", "[::1]:7777", "[::1]:7779"}));
}

}  // namespace
}  // namespace chash
