// Every public call's precondition, checked in the build CI runs (Release,
// NDEBUG defined): a caller's mistake gets an error, a sentinel, or a checked
// contract that stops the process with a message, never undefined behaviour.
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "test_util.h"

#ifndef NDEBUG
// CI builds define NDEBUG; so must this suite, or it would not prove that the
// checks survive it. (tools/dev/test-asan builds RelWithDebInfo, which defines
// it too.)
#error "contracts_test must be built with NDEBUG (Release or RelWithDebInfo)"
#endif

namespace chash {
namespace {

Ring SmallRing() {
  RingBuilder builder({.flavor = Flavor::kPingoraV1});
  for (const char* address : {"10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"}) {
    EXPECT_TRUE(builder.Add(address, 1).ok());
  }
  Result<Ring> ring = std::move(builder).Build();
  EXPECT_TRUE(ring.ok()) << ring.status().ToString();
  return ring.ok() ? std::move(ring).value() : Ring();
}

// ---- Status and Result -------------------------------------------------------------

TEST(ContractsTest, ResultFromAnOkStatusIsAnError) {
  const Result<int> result{Status()};
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kBadArgument);
  EXPECT_FALSE(result.status().message().empty());
  const Result<int> from_ok{Status::Ok()};
  EXPECT_FALSE(from_ok.ok());
}

TEST(ContractsTest, ResultGetMovesTheErrorOutAndLeavesTheOutputAlone) {
  int out = 7;
  Result<int> result(Status(StatusCode::kBadWeight, "w"));
  const Status status = std::move(result).Get(out);
  EXPECT_EQ(status.code(), StatusCode::kBadWeight);
  EXPECT_EQ(out, 7);
  EXPECT_TRUE(Result<int>(5).Get(out).ok());
  EXPECT_EQ(out, 5);
}

using ContractsDeathTest = ::testing::Test;

TEST(ContractsDeathTest, ValueOfAnErrorStopsTheProcessWithTheError) {
  // "fast" (fork, no re-exec): the threadsafe style re-executes the test
  // binary, which fails under qemu-user without binfmt (tools/dev/test-arm). No
  // thread of chash is alive here: builds join theirs before returning.
  GTEST_FLAG_SET(death_test_style, "fast");
  Result<int> result(Status(StatusCode::kBadAddress, "node 3: no port"));
  EXPECT_DEATH((void)result.value(), "CONTRACT VIOLATED: Result::value\\(\\) called on an "
                                     "error \\(bad_address: node 3: no port\\)");
  const Result<std::string> constant(Status(StatusCode::kIoError, "x"));
  EXPECT_DEATH((void)constant.value(), "CONTRACT VIOLATED.*io_error");
  EXPECT_DEATH((void)std::move(result).value(), "CONTRACT VIOLATED.*bad_address");
}

// ---- Ring -----------------------------------------------------------------------------

TEST(ContractsTest, NodePastTheNodeCountIsAnEmptyNode) {
  const Ring ring = SmallRing();
  ASSERT_EQ(ring.num_nodes(), 3u);
  for (const uint32_t id : {3u, 65535u, 65536u, Ring::kNoNode}) {
    const NodeInfo& info = ring.node(id);
    EXPECT_TRUE(info.address.written.empty()) << id;
    EXPECT_TRUE(info.address.host.empty()) << id;
    EXPECT_EQ(info.weight, 0u) << id;
  }
  // The README's example: an empty ring answers kNoNode, then node() of it.
  const Ring empty;
  EXPECT_EQ(empty.FindNode("key"), Ring::kNoNode);
  EXPECT_TRUE(empty.node(empty.FindNode("key")).address.written.empty());
  EXPECT_TRUE(empty.node(0).address.written.empty());
  Ring moved = SmallRing();
  const Ring taken = std::move(moved);
  EXPECT_TRUE(moved.node(0).address.written.empty());  // NOLINT: moved-from is empty
  EXPECT_EQ(taken.node(0).address.written, "10.0.0.1:80");
}

TEST(ContractsTest, EmptyCursorAnswersTheSentinel) {
  const PointCursor cursor;
  EXPECT_TRUE(cursor.empty());
  EXPECT_EQ(cursor.node(), Ring::kNoNode);
  EXPECT_EQ(cursor.hash(), 0u);
  const Ring empty;
  EXPECT_EQ(empty.Walk("k").node(), Ring::kNoNode);
  EXPECT_EQ(empty.Begin().hash(), 0u);
  EXPECT_EQ(empty.WalkDistinct("k").Next(), Ring::kNoNode);
}

// Outputs shorter than the input: the first out.size() inputs are answered,
// the count is returned, nothing past `out` is written.
constexpr uint32_t kGuard = 0xDEADBEEFu;

TEST(ContractsTest, BatchWithAShortOutputAnswersWhatFits) {
  const Ring ring = SmallRing();
  const std::vector<uint32_t> hashes = {1, 2, 3, 0x80000000u, 0xFFFFFFFFu};
  const std::vector<std::string_view> keys = {"a", "b", "c", "d", "e"};
  for (const Ring* r : {&ring, static_cast<const Ring*>(nullptr)}) {
    const Ring empty;
    const Ring& subject = r != nullptr ? *r : empty;
    std::vector<uint32_t> out(5, kGuard);
    EXPECT_EQ(subject.FindNodesByHash(hashes, std::span<uint32_t>(out).first(2)), 2u);
    EXPECT_EQ(out[0], subject.FindNodeByHash(hashes[0]));
    EXPECT_EQ(out[1], subject.FindNodeByHash(hashes[1]));
    EXPECT_EQ(out[2], kGuard);
    EXPECT_EQ(subject.FindNodes(keys, std::span<uint32_t>(out).first(3)), 3u);
    EXPECT_EQ(out[2], subject.FindNode(keys[2]));
    EXPECT_EQ(out[3], kGuard);
    EXPECT_EQ(subject.FindNodes(keys, {}), 0u);
    EXPECT_EQ(subject.FindNodesByHash({}, out), 0u) << "an empty input answers nothing";
    EXPECT_EQ(out[4], kGuard);
    EXPECT_EQ(subject.FindNodes(keys, out), 5u);
  }
}

TEST(ContractsTest, MaskedBatchesWithShortOutputsAnswerWhatFits) {
  const Ring ring = SmallRing();
  NodeMask mask(ring.num_nodes());
  ASSERT_TRUE(mask.Set(0, false));
  const std::vector<uint32_t> hashes = {1, 2, 3, 4};
  const std::vector<std::string_view> keys = {"a", "b", "c", "d"};
  std::vector<uint32_t> out(4, kGuard);
  EXPECT_EQ(FindAvailableNodesByHash(ring, mask, hashes, std::span<uint32_t>(out).first(1)), 1u);
  EXPECT_EQ(out[0], FindAvailableNodeByHash(ring, mask, hashes[0]));
  EXPECT_EQ(out[1], kGuard);
  EXPECT_EQ(FindAvailableNodes(ring, mask, keys, std::span<uint32_t>(out).first(2)), 2u);
  EXPECT_EQ(out[1], FindAvailableNode(ring, mask, keys[1]));
  EXPECT_EQ(out[2], kGuard);

  AvailabilityMask health(ring.num_nodes());
  ASSERT_TRUE(health.Publish(mask).ok());
  EXPECT_EQ(health.FindNodes(ring, keys, std::span<uint32_t>(out).first(3)), 3u);
  EXPECT_EQ(out[2], health.FindNode(ring, keys[2]));
  EXPECT_EQ(out[3], kGuard);
}

TEST(ContractsTest, MigrationBatchWithShortOutputsAnswersWhatFits) {
  auto old_ring = std::make_shared<const Ring>(SmallRing());
  auto new_ring = std::make_shared<const Ring>(SmallRing());
  Result<std::unique_ptr<RingMigration>> migration = RingMigration::Create(old_ring, new_ring);
  ASSERT_TRUE(migration.ok()) << migration.status().ToString();
  RingMigration& m = *migration.value();
  m.SetInScope(true);
  m.SetRolloutPpm(kRolloutScale / 2);
  const std::vector<std::string_view> keys = {"a", "b", "c", "d"};
  std::vector<uint32_t> nodes(4, kGuard);
  std::vector<RingSide> sides(4, RingSide::kOld);
  EXPECT_EQ(m.FindNodes(keys, std::span<uint32_t>(nodes).first(3),
                        std::span<RingSide>(sides).first(2)),
            2u);
  EXPECT_EQ(nodes[1], m.ring(m.Choose(keys[1])).FindNode(keys[1]));
  EXPECT_EQ(nodes[2], kGuard);
  EXPECT_EQ(m.counters().old_ring + m.counters().new_ring, 2u) << "only answered keys count";
}

TEST(ContractsTest, MigrationControlsRefuseNonFractions) {
  auto ring = std::make_shared<const Ring>(SmallRing());
  Result<std::unique_ptr<RingMigration>> migration = RingMigration::Create(ring, ring);
  ASSERT_TRUE(migration.ok());
  RingMigration& m = *migration.value();
  m.SetRolloutPpm(123);
  for (const double bad : {-0.01, 1.01, std::nan(""), std::numeric_limits<double>::infinity()}) {
    EXPECT_EQ(m.SetRollout(bad).code(), StatusCode::kBadArgument) << bad;
    EXPECT_EQ(m.rollout_ppm(), 123u) << "a refused rollout changes nothing";
  }
  m.SetRolloutPpm(UINT32_MAX);
  EXPECT_EQ(m.rollout_ppm(), kRolloutScale);
  EXPECT_EQ(RingMigration::Create(nullptr, ring).status().code(), StatusCode::kBadArgument);
  EXPECT_EQ(RingMigration::Create(ring, nullptr).status().code(), StatusCode::kBadArgument);
}

// ---- RingBuilder ----------------------------------------------------------------------

TEST(ContractsTest, BuilderIsEmptyAfterBuildAndReusable) {
  RingBuilder builder({.flavor = Flavor::kNginx});
  ASSERT_TRUE(builder.Add("10.0.0.1:80", 2).ok());
  Result<Ring> first = std::move(builder).Build();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first.value().num_points(), 320u);
  // Used again: it is an empty builder with the same options.
  EXPECT_EQ(builder.size(), 0u);                 // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(builder.points_generated(), 0u);     // NOLINT(bugprone-use-after-move)
  Result<Ring> second = std::move(builder).Build();  // NOLINT(bugprone-use-after-move)
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second.value().empty());
  EXPECT_EQ(second.value().num_nodes(), 0u);
  ASSERT_TRUE(builder.Add("10.0.0.1:80", 1).ok()) << "the same node again: a new ring";
  Result<Ring> third = std::move(builder).Build();
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third.value().num_points(), 160u);
  EXPECT_EQ(third.value().flavor(), Flavor::kNginx);
}

TEST(ContractsTest, InvalidOptionsAreReportedByAddAndBuild) {
  const RingOptions bad_options[] = {
      {.flavor = static_cast<Flavor>(200)},  // past the enum
      {.flavor = Flavor::kPingoraV2, .point_multiple = 0},
      {.flavor = Flavor::kNginx, .point_multiple = 16},
      {.flavor = Flavor::kPingoraV2, .point_multiple = 16, .max_points = 0},
      {.flavor = Flavor::kPingoraV2, .point_multiple = 16, .max_points = kHardMaxPoints + 1},
  };
  for (const RingOptions& options : bad_options) {
    RingBuilder builder(options);
    const Status added = builder.Add("10.0.0.1:80", 1);
    EXPECT_FALSE(added.ok());
    EXPECT_EQ(builder.size(), 0u);
    const Result<Ring> ring = std::move(builder).Build();
    EXPECT_FALSE(ring.ok());
    EXPECT_EQ(ring.status().code(), added.code()) << added.ToString();
  }
  EXPECT_EQ(ParseNodeAddress(static_cast<Flavor>(testing::FirstUnknownFlavor()), "10.0.0.1:80")
                .status()
                .code(),
            StatusCode::kBadArgument);
}

// ---- Masks and bounded loads --------------------------------------------------------------

TEST(ContractsTest, MasksClampAndRefuseOutOfRangeIds) {
  NodeMask mask(kMaxNodes + 5);
  EXPECT_EQ(mask.size(), kMaxNodes);
  EXPECT_FALSE(mask.Set(kMaxNodes, false));
  EXPECT_FALSE(mask.available(Ring::kNoNode));
  EXPECT_EQ(mask.count_available(), kMaxNodes);
  const NodeMask none;
  const Ring ring = SmallRing();
  EXPECT_EQ(FindAvailableNode(ring, none, "k"), Ring::kNoNode);

  AvailabilityMask health(3);
  EXPECT_EQ(health.Publish(NodeMask(4)).code(), StatusCode::kBadArgument);
  EXPECT_EQ(health.version(), 0u) << "a refused mask is not published";

  const std::vector<uint64_t> short_loads = {0};
  EXPECT_EQ(FindNodeBoundedLoad(ring, 1, short_loads, 1.25).status().code(),
            StatusCode::kBadArgument);
  const std::vector<uint64_t> loads = {0, 0, 0};
  for (const double c : {1.0, 0.5, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    EXPECT_EQ(FindNodeBoundedLoad(ring, 1, loads, c).status().code(), StatusCode::kBadArgument)
        << c;
    EXPECT_EQ(BoundedLoadCapacity(10, 3, c), 0u) << c;
  }
  EXPECT_EQ(BoundedLoadCapacity(10, 0, 1.5), 0u);
  // Loads shorter than the node count: the nodes past them are skipped.
  EXPECT_EQ(FindNodeUnderCapacity(ring, 1, std::span<const uint64_t>(), 10), Ring::kNoNode);
}

}  // namespace
}  // namespace chash
