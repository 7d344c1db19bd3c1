// The exact ring diff, checked three ways: against a plain recomputation on
// the reference rings (every interval between the points of both, its
// answers evaluated with lower_bound), against uniform sampling of key
// hashes (within 5 sigma), and on cases whose answer is known in closed form.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "reference/reference_ring.h"
#include "test_util.h"

namespace chash {
namespace {

using reference::ReferenceRing;
using testing::LoadServers;

ReferenceRing MustBuildReference(const std::vector<ServerEntry>& servers, Flavor flavor,
                                 uint32_t multiple) {
  std::vector<reference::Server> list;
  for (const ServerEntry& s : servers) list.push_back({s.address, s.weight});
  Result<ReferenceRing> ring = ReferenceRing::Build(flavor, multiple, list);
  EXPECT_TRUE(ring.ok());
  return ring.ok() ? std::move(ring).value() : ReferenceRing();
}

const NodeDiff* Find(const RingDiff& diff, const std::string& backend) {
  for (const NodeDiff& node : diff.nodes) {
    if (node.backend == backend) return &node;
  }
  return nullptr;
}

struct Side {
  std::vector<ServerEntry> servers;
  RingOptions options;
};

// The recomputation: all boundaries of both reference rings, sorted; each
// interval (b[i-1], b[i]] answered at b[i]; the wrap-around interval
// (b[last], 2^32-1] + [0, b[0]] answered at 0. Backends compared by the
// socket text the test derives itself.
std::map<std::string, uint64_t> ReferenceMovedOut(const Side& a, const Side& b, uint64_t* moved) {
  const ReferenceRing ra =
      MustBuildReference(a.servers, a.options.flavor, a.options.point_multiple);
  const ReferenceRing rb =
      MustBuildReference(b.servers, b.options.flavor, b.options.point_multiple);
  auto name = [](const std::vector<ServerEntry>& servers, uint32_t node) {
    // Every address in these cases is IPv4:port, written canonically.
    return servers[node].address;
  };
  std::vector<uint64_t> bounds;
  for (const auto& p : ra.points()) bounds.push_back(p.hash);
  for (const auto& p : rb.points()) bounds.push_back(p.hash);
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  std::map<std::string, uint64_t> out;
  *moved = 0;
  auto account = [&](uint32_t at, uint64_t length) {
    const std::string from = name(a.servers, ra.FindNodeByHash(at));
    const std::string to = name(b.servers, rb.FindNodeByHash(at));
    if (from != to) {
      *moved += length;
      out[from] += length;
    }
  };
  for (size_t i = 1; i < bounds.size(); ++i) {
    account(static_cast<uint32_t>(bounds[i]), bounds[i] - bounds[i - 1]);
  }
  account(0, (kKeySpace - 1 - bounds.back()) + bounds.front() + 1);
  return out;
}

TEST(DiffRingsTest, EqualsReferenceRecomputation) {
  const std::vector<ServerEntry> nine = LoadServers("pingora/servers_nginx9.txt");
  const std::vector<ServerEntry> five = LoadServers("pingora/servers_5.txt");
  std::vector<ServerEntry> five_plus = five;
  five_plus.push_back({"10.9.9.9:80", 2, 0});
  std::vector<ServerEntry> five_minus(five.begin() + 1, five.end());
  std::vector<ServerEntry> reweighted = five;
  reweighted[2].weight = 7;
  const Side cases[][2] = {
      {{five, {.flavor = Flavor::kPingoraV1}},
       {five, {.flavor = Flavor::kPingoraV2, .point_multiple = 16}}},
      {{five, {.flavor = Flavor::kNginx}}, {five_plus, {.flavor = Flavor::kNginx}}},
      {{five, {.flavor = Flavor::kNginx}}, {five_minus, {.flavor = Flavor::kNginx}}},
      {{five, {.flavor = Flavor::kPingoraV2, .point_multiple = 3}},
       {reweighted, {.flavor = Flavor::kPingoraV2, .point_multiple = 40}}},
      {{nine, {.flavor = Flavor::kNginx}},
       {nine, {.flavor = Flavor::kPingoraV2, .point_multiple = 16}}},
  };
  for (const auto& c : cases) {
    const Ring a = testing::MustBuild(c[0].servers, c[0].options);
    const Ring b = testing::MustBuild(c[1].servers, c[1].options);
    const RingDiff diff = DiffRings(a, b).value();
    uint64_t moved = 0;
    const std::map<std::string, uint64_t> moved_out = ReferenceMovedOut(c[0], c[1], &moved);
    EXPECT_EQ(diff.moved_hashes, moved);
    EXPECT_GT(moved, 0u);
    for (const NodeDiff& node : diff.nodes) {
      const auto it = moved_out.find(node.backend);
      EXPECT_EQ(node.moved_out, it == moved_out.end() ? 0 : it->second) << node.backend;
    }
    // Conservation: every hash is owned once on each ring.
    uint64_t old_total = 0, new_total = 0, out_total = 0, in_total = 0;
    for (const NodeDiff& node : diff.nodes) {
      old_total += node.old_hashes;
      new_total += node.new_hashes;
      out_total += node.moved_out;
      in_total += node.moved_in;
      EXPECT_EQ(node.old_hashes - node.moved_out, node.new_hashes - node.moved_in)
          << "kept hashes are kept on both sides: " << node.backend;
    }
    EXPECT_EQ(old_total, kKeySpace);
    EXPECT_EQ(new_total, kKeySpace);
    EXPECT_EQ(out_total, diff.moved_hashes);
    EXPECT_EQ(in_total, diff.moved_hashes);
  }
}

// Sampling agrees within 5 sigma, overall and per node (1M uniform hashes).
TEST(DiffRingsTest, AgreesWithSampling) {
  const std::vector<ServerEntry> servers = LoadServers("pingora/servers_50.txt");
  const Ring v1 = testing::MustBuild(servers, {.flavor = Flavor::kPingoraV1});
  const Ring v2 = testing::MustBuild(servers, {.flavor = Flavor::kPingoraV2, .point_multiple = 16});
  const RingDiff diff = DiffRings(v1, v2).value();
  std::mt19937 rng(77);
  const size_t kSamples = testing::Scaled(1000000, 200000);
  uint64_t moved = 0;
  std::vector<uint64_t> moved_out(v1.num_nodes(), 0);
  for (size_t i = 0; i < kSamples; ++i) {
    const uint32_t hash = static_cast<uint32_t>(rng());
    const uint32_t from = v1.FindNodeByHash(hash), to = v2.FindNodeByHash(hash);
    // Same file, same ids: ids match backends here.
    if (from != to) {
      ++moved;
      ++moved_out[from];
    }
  }
  auto within = [&](double exact, uint64_t hits, const std::string& what) {
    const double sampled = static_cast<double>(hits) / static_cast<double>(kSamples);
    const double sigma =
        std::sqrt(std::max(exact * (1 - exact), 1e-9) / static_cast<double>(kSamples));
    EXPECT_NEAR(sampled, exact, 5 * sigma + 1e-6) << what;
  };
  EXPECT_GT(diff.moved_fraction(), 0.5);  // v1 at 160 vs v2 at 16: most keys move
  within(diff.moved_fraction(), moved, "overall");
  for (uint32_t id = 0; id < v1.num_nodes(); ++id) {
    within(static_cast<double>(diff.nodes[id].moved_out) / kKeySpace, moved_out[id],
           diff.nodes[id].backend);
    EXPECT_EQ(diff.nodes[id].old_node, id);
    EXPECT_EQ(diff.nodes[id].new_node, id);
  }
}

TEST(DiffRingsTest, ClosedFormCases) {
  const std::vector<ServerEntry> nine = LoadServers("pingora/servers_nginx9.txt");
  // nginx and pingora v1 hash the same bytes for IPv4:port and break ties
  // the same way: nothing moves.
  const Ring nginx = testing::MustBuild(nine, {.flavor = Flavor::kNginx});
  const Ring v1 = testing::MustBuild(nine, {.flavor = Flavor::kPingoraV1});
  EXPECT_EQ(DiffRings(nginx, v1).value().moved_hashes, 0u);
  EXPECT_EQ(DiffRings(nginx, nginx).value().moved_hashes, 0u);

  // v1 vs v2 at the same multiple differ only at the collided hash of
  // servers_50: exactly the arc that point owns, if the winners differ.
  const std::vector<ServerEntry> fifty = LoadServers("pingora/servers_50.txt");
  const Ring f1 = testing::MustBuild(fifty, {.flavor = Flavor::kPingoraV1});
  const Ring f2 = testing::MustBuild(fifty, {.flavor = Flavor::kPingoraV2, .point_multiple = 160});
  ASSERT_EQ(f1.collision_losers().hashes.size(), 1u);
  const uint32_t collided = f1.collision_losers().hashes[0];
  uint32_t previous = 0;
  bool has_previous = false;
  for (PointCursor c = f1.Begin(); c.hash() != collided; c.Advance()) {
    previous = c.hash();
    has_previous = true;
  }
  ASSERT_TRUE(has_previous);
  const bool winners_differ = f1.FindNodeByHash(collided) != f2.FindNodeByHash(collided);
  EXPECT_EQ(DiffRings(f1, f2).value().moved_hashes, winners_differ ? collided - previous : 0u);

  // Adding a server moves exactly its new share, all of it onto it.
  std::vector<ServerEntry> ten = nine;
  ten.push_back({"10.0.0.10:443", 100, 0});
  const Ring bigger = testing::MustBuild(ten, {});
  const RingDiff added = DiffRings(nginx, bigger).value();
  const NodeDiff* newcomer = Find(added, "10.0.0.10:443");
  ASSERT_NE(newcomer, nullptr);
  EXPECT_EQ(newcomer->old_node, Ring::kNoNode);
  EXPECT_EQ(newcomer->new_node, 9u);
  EXPECT_EQ(newcomer->moved_in, added.moved_hashes);
  EXPECT_EQ(newcomer->new_hashes, added.moved_hashes);
  EXPECT_EQ(added.moved_hashes, NodeHashShares(bigger)[9]);
  // Removing it (the other direction) moves the same hashes back.
  EXPECT_EQ(DiffRings(bigger, nginx).value().moved_hashes, added.moved_hashes);

  // Empty rings.
  EXPECT_EQ(DiffRings(Ring(), Ring()).value().moved_hashes, 0u);
  const RingDiff from_empty = DiffRings(Ring(), nginx).value();
  EXPECT_EQ(from_empty.moved_hashes, kKeySpace);
  EXPECT_DOUBLE_EQ(from_empty.moved_fraction(), 1.0);
  EXPECT_DOUBLE_EQ(from_empty.moved_fraction_at(0.25), 0.25);
}

// Nodes are matched by backend, not by id or spelling: the same servers in
// another order, spelled differently, move nothing under address order.
TEST(DiffRingsTest, MatchesBackendsNotIds) {
  const std::vector<ServerEntry> five = LoadServers("pingora/servers_5.txt");
  std::vector<ServerEntry> reversed(five.rbegin(), five.rend());
  const RingOptions v2{.flavor = Flavor::kPingoraV2, .point_multiple = 16};
  const RingDiff diff = DiffRings(testing::MustBuild(five, v2), testing::MustBuild(reversed, v2)).value();
  EXPECT_EQ(diff.moved_hashes, 0u);
  ASSERT_EQ(diff.nodes.size(), 5u);
  EXPECT_EQ(diff.nodes[0].old_node, 0u);
  EXPECT_EQ(diff.nodes[0].new_node, 4u);
  // nginx "[0::1]:07777" and pingora "[::1]:7777" are one backend.
  Result<std::vector<ServerEntry>> a = ParseServersText("[0::1]:07777\n", "a");
  Result<std::vector<ServerEntry>> b = ParseServersText("[::1]:7777\n", "b");
  ASSERT_TRUE(a.ok() && b.ok());
  const RingDiff spelled =
      DiffRings(testing::MustBuild(a.value(), {}), testing::MustBuild(b.value(), v2)).value();
  EXPECT_EQ(spelled.moved_hashes, 0u);  // one backend owns everything on both
  EXPECT_EQ(spelled.nodes.size(), 1u);
}

}  // namespace
}  // namespace chash
