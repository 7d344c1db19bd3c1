// Out of memory, allocation by allocation. This binary replaces the global
// operator new/delete, and hooks the engine's column blocks (aligned_alloc
// or mmap, engine/layout/aligned_array.h), so that a scenario can be run
// with its Nth allocation failing, and every allocation after it: memory
// that runs out stays out. Each scenario runs with N = 0, 1, 2, ... until it
// completes without reaching an injected failure; every run must
// - return OK with the right answer, or report kOutOfMemory (a call that
//   returns a value rather than a Status returns its documented sentinel),
//   never throw, never crash;
// - leak nothing: allocations live before == after (and LSan, under
//   tools/test-asan);
// - leave its objects usable: with memory back, the same builder, mask or
//   migration finishes the job and gives the answer of a run that never
//   failed.
// Not reachable from here: the scratch buffer hwy::Sorter (Highway 1.0.3)
// mallocs for its sort, which it does not report failing.
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "layout/aligned_array.h"
#include "test_util.h"

namespace {

std::atomic<int64_t> fail_from{-1};   // fail allocations numbered >= this; -1: none
std::atomic<int64_t> allocations{0};  // numbered since the scenario was armed
std::atomic<bool> injected{false};    // a failure was injected in this run
std::atomic<int64_t> live{0};         // operator new blocks not yet deleted

bool InjectFailure() noexcept {
  const int64_t from = fail_from.load(std::memory_order_relaxed);
  if (from < 0) return false;
  if (allocations.fetch_add(1, std::memory_order_relaxed) < from) return false;
  injected.store(true, std::memory_order_relaxed);
  return true;
}

void* Allocate(std::size_t size, std::size_t alignment, bool nothrow) {
  if (InjectFailure()) {
    if (nothrow) return nullptr;
    throw std::bad_alloc();
  }
  if (size == 0) size = 1;
  void* p = alignment > alignof(std::max_align_t)
                ? std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment)
                : std::malloc(size);
  if (p == nullptr) {
    if (nothrow) return nullptr;
    throw std::bad_alloc();
  }
  live.fetch_add(1, std::memory_order_relaxed);
  return p;
}

void Free(void* p) noexcept {
  if (p == nullptr) return;
  live.fetch_sub(1, std::memory_order_relaxed);
  std::free(p);
}

}  // namespace

void* operator new(std::size_t size) { return Allocate(size, 0, false); }
void* operator new[](std::size_t size) { return Allocate(size, 0, false); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return Allocate(size, 0, true);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return Allocate(size, 0, true);
}
void* operator new(std::size_t size, std::align_val_t al) {
  return Allocate(size, static_cast<std::size_t>(al), false);
}
void* operator new[](std::size_t size, std::align_val_t al) {
  return Allocate(size, static_cast<std::size_t>(al), false);
}
void* operator new(std::size_t size, std::align_val_t al, const std::nothrow_t&) noexcept {
  return Allocate(size, static_cast<std::size_t>(al), true);
}
void* operator new[](std::size_t size, std::align_val_t al, const std::nothrow_t&) noexcept {
  return Allocate(size, static_cast<std::size_t>(al), true);
}
void operator delete(void* p) noexcept { Free(p); }
void operator delete[](void* p) noexcept { Free(p); }
void operator delete(void* p, std::size_t) noexcept { Free(p); }
void operator delete[](void* p, std::size_t) noexcept { Free(p); }
void operator delete(void* p, std::align_val_t) noexcept { Free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { Free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { Free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { Free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { Free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { Free(p); }

namespace chash {
namespace {

using testing::Scaled;

// What one run of a scenario saw.
enum class Outcome { kCompleted, kReportedOutOfMemory };

// Runs `scenario(expect_oom)` with allocation n and later ones failing, for
// n = 0, 1, ... until a run completes without an injected failure. The
// scenario returns its Status and checks its own answers and sentinels;
// `expect_oom` tells it whether this run may see failures. Returns the
// number of allocation points walked through.
template <typename Scenario>
int64_t WalkAllocations(const char* name, Scenario scenario) {
  // A first run initializes what is allocated once per process.
  EXPECT_TRUE(scenario(false).ok()) << name << ": without failures";
  for (int64_t n = 0;; ++n) {
    const int64_t live_before = live.load();
    allocations.store(0);
    injected.store(false);
    internal::SetBlockAllocationFailureHook([]() noexcept { return InjectFailure(); });
    fail_from.store(n);
    Status status;
    bool threw = false;
    try {
      status = scenario(true);
    } catch (const std::bad_alloc&) {
      threw = true;
    }
    fail_from.store(-1);
    internal::SetBlockAllocationFailureHook(nullptr);
    if (threw) {
      ADD_FAILURE() << name << ": std::bad_alloc escaped with allocation " << n << " failing";
      return n;
    }
    const bool failed_here = injected.load();
    EXPECT_EQ(live.load(), live_before) << name << ": leaked with allocation " << n << " failing";
    if (!status.ok()) {
      EXPECT_TRUE(failed_here) << name << ": an error without an injected failure: "
                               << status.ToString();
      EXPECT_EQ(status.code(), StatusCode::kOutOfMemory)
          << name << ", allocation " << n << ": " << status.ToString();
      EXPECT_FALSE(status.message().empty());
    }
    if (!failed_here) {
      EXPECT_TRUE(status.ok()) << name;
      std::printf("%s: %lld allocation points, each failed in turn\n", name,
                  static_cast<long long>(n));
      return n;
    }
    if (::testing::Test::HasFailure() || n > 100000) return n;
  }
}

// A value-returning call answered its out-of-memory sentinel ("sentinel":
// held inline, no allocation).
Status SentinelSeen() { return Status(StatusCode::kOutOfMemory, "sentinel"); }

// The error of a Result, moved out: copying a Status copies its message,
// which may not be possible now.
template <typename T>
Status TakeError(Result<T>& result) {
  T unused{};
  return std::move(result).Get(unused);
}

// Why a step failed, as a Status for WalkAllocations: the first error.
#define CHASH_RETURN_IF_ERROR(expr)          \
  do {                                       \
    Status chash_status_ = (expr);           \
    if (!chash_status_.ok()) return chash_status_; \
  } while (false)

std::vector<std::string> Addresses(Flavor flavor, uint32_t count) {
  std::vector<std::string> out;
  for (uint32_t i = 0; i < count; ++i) {
    out.push_back(flavor == Flavor::kNginx && i % 3 == 1
                      ? "cache-" + std::to_string(i) + ".example:8080"
                      : "[2001:db8::" + std::to_string(i + 1) + "]:443");
    if (flavor != Flavor::kNginx && i % 2 == 0) out.back() = "10.1.0." + std::to_string(i + 1) + ":80";
  }
  return out;
}

Ring BuildOrDie(Flavor flavor, uint32_t multiple, uint32_t count) {
  RingBuilder builder({.flavor = flavor, .point_multiple = multiple});
  for (const std::string& address : Addresses(flavor, count)) {
    EXPECT_TRUE(builder.Add(address, 2).ok());
  }
  Result<Ring> ring = std::move(builder).Build();
  EXPECT_TRUE(ring.ok());
  return ring.ok() ? std::move(ring).value() : Ring();
}

TEST(AllocFailureTest, BuildEveryFlavour) {
  struct Case {
    const char* name;
    Flavor flavor;
    uint32_t multiple;
  };
  for (const Case& c : {Case{"build nginx", Flavor::kNginx, 160},
                        Case{"build pingora-v1", Flavor::kPingoraV1, 160},
                        Case{"build pingora-v2", Flavor::kPingoraV2, 16}}) {
    const uint32_t count = 12;
    const Ring expected = BuildOrDie(c.flavor, c.multiple, count);
    const Fingerprint expected_points = PointsDigest(expected);
    const std::vector<std::string> addresses = Addresses(c.flavor, count);
    WalkAllocations(c.name, [&](bool) -> Status {
      RingBuilder builder({.flavor = c.flavor, .point_multiple = c.multiple});
      Status failure;
      size_t added = 0;
      for (; added < addresses.size(); ++added) {
        const size_t before = builder.size();
        failure = builder.Add(addresses[added], 2);
        if (!failure.ok()) {
          EXPECT_EQ(builder.size(), before) << "a failed Add changed the builder";
          break;
        }
      }
      Result<Ring> ring(Status(StatusCode::kOutOfMemory, "not built"));
      if (failure.ok()) {
        ring = std::move(builder).Build();
        if (!ring.ok()) {
          failure = TakeError(ring);
          EXPECT_EQ(builder.size(), count) << "a failed Build gave up the nodes";
        }
      }
      if (failure.ok()) {
        const int64_t armed = fail_from.exchange(-1);  // the check allocates
        EXPECT_EQ(PointsDigest(ring.value()), expected_points);
        fail_from.store(armed);
        return Status();
      }
      // With memory back, the same builder finishes the ring.
      const int64_t armed = fail_from.exchange(-1);
      internal::SetBlockAllocationFailureHook(nullptr);
      for (; added < addresses.size(); ++added) EXPECT_TRUE(builder.Add(addresses[added], 2).ok());
      Result<Ring> retried = std::move(builder).Build();
      EXPECT_TRUE(retried.ok());
      if (retried.ok()) EXPECT_EQ(PointsDigest(retried.value()), expected_points);
      fail_from.store(armed);
      return failure;
    });
  }
}

TEST(AllocFailureTest, RawPoints) {
  std::vector<RawPoint> points;
  for (uint32_t i = 0; i < 500; ++i) points.push_back({i * 2654435761u, i % 7});
  points.push_back({points[3].hash, 5});  // a collision
  const std::vector<uint32_t> rank = {6, 5, 4, 3, 2, 1, 0};
  Result<Ring> expected = BuildRingFromPoints(7, points, rank);
  ASSERT_TRUE(expected.ok());
  const Fingerprint expected_points = PointsDigest(expected.value());
  WalkAllocations("raw points", [&](bool) -> Status {
    Result<Ring> ring = BuildRingFromPoints(7, points, rank);
    if (!ring.ok()) return TakeError(ring);
    EXPECT_EQ(ring.value().collision_losers().hashes.size(), 1u);
    const int64_t armed = fail_from.exchange(-1);  // the check allocates
    EXPECT_EQ(PointsDigest(ring.value()), expected_points);
    fail_from.store(armed);
    return Status();
  });
}

TEST(AllocFailureTest, ServersFileAndAddresses) {
  const std::string text = "# fleet\n10.0.0.1:80 3\n[::1]:7777 2\nunix:/run/a.sock\n";
  WalkAllocations("servers file and addresses", [&](bool) -> Status {
    Result<std::vector<ServerEntry>> servers = ParseServersText(text, "fleet.txt");
    if (!servers.ok()) return TakeError(servers);
    EXPECT_EQ(servers.value().size(), 3u);
    Result<NodeAddress> nginx = ParseNginxAddress("[::1]:7777");
    if (!nginx.ok()) return TakeError(nginx);
    EXPECT_EQ(nginx.value().host, "[::1]");
    Result<NodeAddress> pingora = ParsePingoraAddress("[2001:db8:0:0:0:0:0:abcd]:80");
    if (!pingora.ok()) return TakeError(pingora);
    EXPECT_EQ(pingora.value().host, "2001:db8::abcd");
    Result<NodeAddress> refused = ParsePingoraAddress("10.0.0.1");
    const Status bad = TakeError(refused);
    if (bad.code() == StatusCode::kOutOfMemory) return bad;
    EXPECT_EQ(bad.code(), StatusCode::kBadAddress);
    Result<Ring> ring = BuildRingFromServers(servers.value(), {}, "fleet.txt");
    if (!ring.ok()) return TakeError(ring);
    EXPECT_EQ(ring.value().num_nodes(), 3u);
    return Status();
  });
}

TEST(AllocFailureTest, MasksAndAvailability) {
  const Ring ring = BuildOrDie(Flavor::kPingoraV1, 160, 10);
  NodeMask half(ring.num_nodes());
  for (uint32_t node = 0; node < ring.num_nodes(); node += 2) half.Set(node, false);
  const uint32_t expected = FindAvailableNode(ring, half, "/key");
  WalkAllocations("masks", [&](bool) -> Status {
    Result<NodeMask> mask = NodeMask::Create(ring.num_nodes());
    if (!mask.ok()) return TakeError(mask);
    for (uint32_t node = 0; node < ring.num_nodes(); node += 2) mask.value().Set(node, false);
    EXPECT_EQ(FindAvailableNode(ring, mask.value(), "/key"), expected);
    const NodeMask copy = mask.value();  // fails closed: covers no node
    if (copy.size() == 0) return SentinelSeen();
    EXPECT_TRUE(copy == mask.value());
    return Status();
  });
  WalkAllocations("availability mask", [&](bool) -> Status {
    Result<std::unique_ptr<AvailabilityMask>> health = AvailabilityMask::Create(ring.num_nodes());
    if (!health.ok()) return TakeError(health);
    AvailabilityMask& h = *health.value();
    CHASH_RETURN_IF_ERROR(h.Publish(half));
    EXPECT_EQ(h.FindNode(ring, "/key"), expected);
    uint64_t version = 0;
    const NodeMask seen = h.Snapshot(&version);
    if (seen.size() == 0) return SentinelSeen();
    EXPECT_TRUE(seen == half);
    EXPECT_EQ(version, 1u);
    const Status wrong = h.Publish(NodeMask(3));
    if (wrong.code() == StatusCode::kOutOfMemory) return wrong;
    EXPECT_EQ(wrong.code(), StatusCode::kBadArgument);
    return Status();
  });
}

TEST(AllocFailureTest, MigrationDiffPlanFingerprintsStats) {
  const auto old_ring = std::make_shared<const Ring>(BuildOrDie(Flavor::kPingoraV1, 160, 10));
  const auto new_ring = std::make_shared<const Ring>(BuildOrDie(Flavor::kPingoraV2, 32, 10));
  const double expected_moved = DiffRings(*old_ring, *new_ring).value().moved_fraction();
  const Fingerprint expected_ring = RingFingerprint(*old_ring);
  const Fingerprint expected_backends = BackendFingerprint(*old_ring);
  const RingStats expected_stats = ComputeRingStats(*old_ring);
  WalkAllocations("migration", [&](bool) -> Status {
    Result<std::unique_ptr<RingMigration>> migration = RingMigration::Create(old_ring, new_ring);
    if (!migration.ok()) return TakeError(migration);
    RingMigration& m = *migration.value();
    const Status bad = m.SetRollout(2.0);  // its message may not fit: then an inline one
    EXPECT_EQ(bad.code(), StatusCode::kBadArgument);
    EXPECT_FALSE(bad.message().empty());
    CHASH_RETURN_IF_ERROR(m.SetRollout(0.5));
    m.SetInScope(true);
    const MigrationAnswer answer = m.Find("/key");
    EXPECT_EQ(answer.node, m.ring(answer.side).FindNode("/key"));
    EXPECT_EQ(m.fingerprint(RingSide::kOld), expected_ring);
    return Status();
  });
  WalkAllocations("diff", [&](bool) -> Status {
    Result<RingDiff> diff = DiffRings(*old_ring, *new_ring);
    if (!diff.ok()) return TakeError(diff);
    EXPECT_EQ(diff.value().moved_fraction(), expected_moved);
    return Status();
  });
  std::vector<ServerEntry> servers;
  for (const std::string& address : Addresses(Flavor::kPingoraV1, 6)) {
    servers.push_back({address, 2, servers.size() + 1});
  }
  const PlanOptions plan_options = {.multiples = {16, 160}, .cv_target = 0.5};
  WalkAllocations("plan", [&](bool) -> Status {
    Result<Plan> plan = PlanPointMultiples(servers, {.flavor = Flavor::kPingoraV1}, plan_options);
    if (!plan.ok()) return TakeError(plan);
    EXPECT_EQ(plan.value().rows.size(), 2u);
    EXPECT_EQ(plan.value().rows[1].moved_fraction, 0.0) << "v2 x160 extends the v1 chain";
    return Status();
  });
  // Value-returning calls: the right value, or their sentinel.
  WalkAllocations("fingerprints", [&](bool) -> Status {
    bool sentinel = false;
    const Fingerprint ring_id = RingFingerprint(*old_ring);
    if (ring_id == Fingerprint{}) sentinel = true; else EXPECT_EQ(ring_id, expected_ring);
    const Fingerprint backends = BackendFingerprint(*old_ring);
    if (backends == Fingerprint{}) sentinel = true; else EXPECT_EQ(backends, expected_backends);
    const Fingerprint points = PointsDigest(*old_ring);
    if (points == Fingerprint{}) sentinel = true;
    const std::string hex = expected_ring.Hex();
    if (hex.empty()) sentinel = true; else EXPECT_EQ(hex.size(), 64u);
    return sentinel ? SentinelSeen() : Status();
  });
  WalkAllocations("stats", [&](bool) -> Status {
    const RingStats stats = ComputeRingStats(*old_ring);
    EXPECT_EQ(stats.points, expected_stats.points);
    if (std::isnan(stats.cv_measured)) return SentinelSeen();
    EXPECT_EQ(stats.cv_measured, expected_stats.cv_measured);
    const std::vector<uint64_t> shares = NodeHashShares(*old_ring);
    if (shares.size() != old_ring->num_nodes()) return SentinelSeen();
    return Status();
  });
}

}  // namespace
}  // namespace chash
