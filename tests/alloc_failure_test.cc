// Out of memory, allocation by allocation. This binary replaces the global
// operator new/delete, and hooks the engine's column blocks (aligned_alloc
// or mmap, engine/layout/aligned_array.h), so that a scenario can be run
// with its Nth allocation failing, and every allocation after it (memory
// that runs out stays out), then again with the Nth failing alone (memory
// comes back). Each scenario runs with N = 0, 1, 2, ... until it completes
// without reaching an injected failure; every run must
// - return OK with the right answer, or report kOutOfMemory (a call that
//   returns a value rather than a Status returns its documented sentinel),
//   never throw, never crash;
// - leak nothing: allocations live before == after (and LSan, under
//   tools/dev/test-asan);
// - leave its objects usable: with memory back, the same builder, mask or
//   migration finishes the job and gives the answer of a run that never
//   failed.
// Calls documented to throw std::bad_alloc (text helpers such as
// Status::ToString) must throw nothing else and leak nothing.
// Descriptors and mappings are counted too (/proc/self), and a file a
// failed write was replacing must be untouched, with no temporary left.
// Not reachable from here: the scratch buffer hwy::Sorter (Highway 1.0.3)
// mallocs for its sort, which it does not report failing, and libsodium's
// own mallocs.
#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <new>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "layout/aligned_array.h"
#include "test_util.h"

namespace {

std::atomic<int64_t> fail_from{-1};   // fail allocations numbered >= this; -1: none
std::atomic<int64_t> allocations{0};  // numbered since the scenario was armed
std::atomic<bool> injected{false};    // a failure was injected in this run
std::atomic<int64_t> live{0};         // operator new blocks not yet deleted
std::atomic<bool> fail_only_one{false};  // fail allocation fail_from alone
int64_t total_points = 0;  // allocation points walked, all scenarios
int64_t total_runs = 0;    // scenario runs, both walks
int scenarios = 0;

bool InjectFailure() noexcept {
  const int64_t from = fail_from.load(std::memory_order_relaxed);
  if (from < 0) return false;
  const int64_t index = allocations.fetch_add(1, std::memory_order_relaxed);
  if (index < from) return false;
  if (index > from && fail_only_one.load(std::memory_order_relaxed)) return false;
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

// One walk of WalkAllocations (below): allocation n failing alone, or with
// every later one. Returns the number of allocation points.
template <typename Scenario>
int64_t WalkOneMode(const char* name, Scenario& scenario, bool only_one) {
  const char* mode = only_one ? "alone" : "and every later one";
  for (int64_t n = 0;; ++n) {
    const int64_t live_before = live.load();
    allocations.store(0);
    injected.store(false);
    fail_only_one.store(only_one);
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
      ADD_FAILURE() << name << ": std::bad_alloc escaped with allocation " << n << " failing "
                    << mode;
      return n;
    }
    const bool failed_here = injected.load();
    if (!status.ok()) {
      EXPECT_TRUE(failed_here) << name << ": an error without an injected failure: "
                               << status.ToString();
      EXPECT_EQ(status.code(), StatusCode::kOutOfMemory)
          << name << ", allocation " << n << " failing " << mode << ": " << status.ToString();
      EXPECT_FALSE(status.message().empty());
    }
    const bool completed = status.ok();
    { Status gone = std::move(status); }  // its message may hold an allocation (failing alone)
    EXPECT_EQ(live.load(), live_before)
        << name << ": leaked with allocation " << n << " failing " << mode;
    if (!failed_here) {
      EXPECT_TRUE(completed) << name;
      std::printf("%s: %lld allocation points, each failed in turn %s\n", name,
                  static_cast<long long>(n), mode);
      return n;
    }
    if (::testing::Test::HasFailure() || n > 100000) return n;
  }
}

// Runs `scenario(expect_oom)` with allocation n failing, for n = 0, 1, ...
// until a run completes without an injected failure, twice: with every
// allocation after n failing too (memory that runs out stays out), and
// with allocation n failing alone (memory comes back: a failure a call
// swallowed, e.g. a sentinel used as a value, then shows up as a wrong
// answer instead of being masked by the next allocation's failure). The
// scenario returns its Status and checks its own answers and sentinels;
// `expect_oom` tells it whether this run may see failures. Returns the
// number of allocation points.
template <typename Scenario>
int64_t WalkAllocations(const char* name, Scenario scenario) {
  // A first run initializes what is allocated once per process.
  EXPECT_TRUE(scenario(false).ok()) << name << ": without failures";
  const int64_t points = WalkOneMode(name, scenario, false);
  if (::testing::Test::HasFailure()) return points;
  const int64_t alone = WalkOneMode(name, scenario, true);
  EXPECT_EQ(alone, points) << name << ": the two walks saw different allocation counts";
  total_points += points;
  total_runs += points + alone + 2;
  ++scenarios;
  return points;
}

// A value-returning call answered its out-of-memory sentinel ("sentinel":
// held inline, no allocation).
Status SentinelSeen() { return Status(StatusCode::kOutOfMemory, "sentinel"); }

// Allocations succeed while one lives (checks, setup inside a scenario);
// the injection resumes where it was when it goes.
class Disarmed {
 public:
  Disarmed() noexcept : armed_(fail_from.exchange(-1)) {}
  ~Disarmed() { fail_from.store(armed_); }
  Disarmed(const Disarmed&) = delete;
  Disarmed& operator=(const Disarmed&) = delete;

 private:
  int64_t armed_;
};

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

TEST(AllocFailureTest, BuildEveryFlavor) {
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
      if (retried.ok()) {
        EXPECT_EQ(PointsDigest(retried.value()), expected_points);
      }
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

// ---- Snapshots, keys, reloads, text ---------------------------------------------

std::string ScratchPath(const std::string& name) {
  return ::testing::TempDir() + "chash_alloc_" + std::to_string(getpid()) + "_" + name;
}

// Entries of a /proc/self directory or lines of a /proc/self file (libc's
// malloc, not operator new: invisible to the injection).
int CountEntries(const char* directory) {
  int count = 0;
  if (DIR* dir = opendir(directory)) {
    while (readdir(dir) != nullptr) ++count;
    closedir(dir);
  }
  return count;
}
int OpenDescriptors() { return CountEntries("/proc/self/fd"); }
// Mappings of files whose path starts with `prefix` (a snapshot and the
// temporary files beside it). Only those: the allocator's own mappings
// (ASan maps a region per size class on first use) are not leaks.
int MappingsOf(const std::string& prefix) {
  int count = 0;
  if (FILE* file = std::fopen("/proc/self/maps", "r")) {
    char line[8192];
    while (std::fgets(line, sizeof line, file) != nullptr) {
      count += std::strstr(line, prefix.c_str()) != nullptr;
    }
    std::fclose(file);
  }
  return count;
}

// Temporary files WriteSnapshotFile left beside `path` ("PATH.tmp.XXXXXX").
int LeftoverTemps(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = path.substr(0, slash);
  const std::string prefix = path.substr(slash + 1) + ".tmp.";
  int count = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* entry = readdir(d)) {
      count += std::string_view(entry->d_name).substr(0, prefix.size()) == prefix;
    }
    closedir(d);
  }
  return count;
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

SnapshotWriteOptions WriteOptionsFor(const Ring& ring, const SecretKey& key) {
  SnapshotWriteOptions write;
  write.config_version = 7;
  write.label = "allocation failure test, a label longer than fifteen bytes";
  write.created_unix_seconds = 1700000000;
  NodeMask odd(ring.num_nodes(), false);
  for (uint32_t id = 1; id < ring.num_nodes(); id += 2) odd.Set(id, true);
  write.subsets.push_back({"odd-nodes", odd});
  write.signing_key = key;
  return write;
}

TEST(AllocFailureTest, Snapshots) {
  const Ring ring = BuildOrDie(Flavor::kPingoraV2, 16, 10);
  const SecretKey key = GenerateSecretKey().value();
  const SnapshotWriteOptions write = WriteOptionsFor(ring, key);
  const std::string expected_bytes = SerializeSnapshot(ring, write).value();
  const Fingerprint expected_ring = RingFingerprint(ring);
  const uint32_t expected_node = ring.FindNode("/key");
  SnapshotLoadOptions trusted;
  trusted.trusted_keys = {key.public_key()};

  WalkAllocations("snapshot serialize", [&](bool) -> Status {
    Result<std::string> bytes = SerializeSnapshot(ring, write);
    if (!bytes.ok()) return TakeError(bytes);
    EXPECT_TRUE(bytes.value() == expected_bytes) << "the bytes of a run without failures";
    return Status();
  });

  const std::string path = ScratchPath("ring.chash");
  const std::string old_bytes = "an older file, kept until a complete one replaces it";
  WalkAllocations("snapshot write file", [&](bool) -> Status {
    {
      Disarmed disarmed;
      std::ofstream(path, std::ios::binary | std::ios::trunc) << old_bytes;
    }
    const int descriptors = OpenDescriptors();
    const int mappings = MappingsOf(path);
    Status status = WriteSnapshotFile(ring, write, path);
    EXPECT_EQ(OpenDescriptors(), descriptors) << "a descriptor leaked";
    EXPECT_EQ(MappingsOf(path), mappings) << "a mapping of the file leaked";
    Disarmed disarmed;
    EXPECT_EQ(LeftoverTemps(path), 0) << "a temporary file was left";
    const std::string now = FileBytes(path);
    if (status.ok()) {
      EXPECT_TRUE(now == expected_bytes) << "the written file differs";
    } else {
      EXPECT_EQ(now, old_bytes) << "a failed write changed the destination";
    }
    return status;
  });

  {
    ASSERT_TRUE(WriteSnapshotFile(ring, write, path).ok());
  }
  for (const SnapshotLoadMode mode :
       {SnapshotLoadMode::kSealed, SnapshotLoadMode::kMap, SnapshotLoadMode::kCopy}) {
    SnapshotLoadOptions load = trusted;
    load.mode = mode;
    load.verify_points_digest = true;
    const char* scenario = mode == SnapshotLoadMode::kMap    ? "snapshot load (map)"
                           : mode == SnapshotLoadMode::kCopy ? "snapshot load (copy)"
                                                             : "snapshot load (sealed)";
    WalkAllocations(scenario, [&](bool) -> Status {
      const int descriptors = OpenDescriptors();
      const int mappings = MappingsOf(path);
      Status failure;
      {
        Result<std::shared_ptr<const RingSnapshot>> loaded = LoadSnapshot(path, load);
        if (!loaded.ok()) {
          failure = TakeError(loaded);
        } else {
          const RingSnapshot& snapshot = *loaded.value();
          EXPECT_EQ(snapshot.ring().FindNode("/key"), expected_node);
          EXPECT_EQ(snapshot.info().config_version, 7u);
          const NodeMask* odd = snapshot.FindSubset("odd-nodes");
          EXPECT_TRUE(odd != nullptr && odd->size() == 10 && odd->count_available() == 5);
          EXPECT_EQ(snapshot.mode(), mode);
          Disarmed disarmed;
          EXPECT_EQ(RingFingerprint(snapshot.ring()), expected_ring);
        }
      }
      EXPECT_EQ(OpenDescriptors(), descriptors) << "a descriptor leaked";
      EXPECT_EQ(MappingsOf(path), mappings) << "a mapping of the file leaked";
      return failure;
    });
  }

  WalkAllocations("snapshot load from bytes", [&](bool) -> Status {
    Result<std::shared_ptr<const RingSnapshot>> loaded =
        LoadSnapshotFromBytes(expected_bytes, trusted);
    if (!loaded.ok()) return TakeError(loaded);
    EXPECT_EQ(loaded.value()->ring().FindNode("/key"), expected_node);
    const std::span<const NamedSubset> subsets = loaded.value()->subsets();
    EXPECT_TRUE(subsets.size() == 1 && subsets[0].mask.count_available() == 5);
    return Status();
  });

  WalkAllocations("snapshot load ring", [&](bool) -> Status {
    SnapshotInfo info;
    info.config_version = 99;  // unchanged by a failed load
    std::vector<NamedSubset> subsets;
    Result<Ring> loaded = LoadSnapshotRing(path, trusted, &info, &subsets);
    if (!loaded.ok()) {
      EXPECT_EQ(info.config_version, 99u) << "a failed load changed *info";
      EXPECT_TRUE(info.label.empty());
      EXPECT_TRUE(subsets.empty()) << "a failed load changed *subsets";
      return TakeError(loaded);
    }
    EXPECT_EQ(info.config_version, 7u);
    EXPECT_TRUE(info.label == write.label);
    EXPECT_TRUE(subsets.size() == 1 && subsets[0].mask.count_available() == 5);
    EXPECT_EQ(loaded.value().FindNode("/key"), expected_node);
    return Status();
  });

  WalkAllocations("snapshot info", [&](bool) -> Status {
    const int descriptors = OpenDescriptors();
    const int mappings = MappingsOf(path);
    Status failure;
    {
      Result<SnapshotInfo> info = ReadSnapshotInfo(path);
      if (!info.ok()) {
        failure = TakeError(info);
      } else {
        EXPECT_TRUE(info.value().label == write.label);
        EXPECT_TRUE(info.value().is_signed);
        EXPECT_EQ(info.value().key_id, key.public_key().KeyId());
        EXPECT_EQ(info.value().subset_names.size(), 1u);
      }
    }
    EXPECT_EQ(OpenDescriptors(), descriptors) << "a descriptor leaked";
    EXPECT_EQ(MappingsOf(path), mappings) << "a mapping of the file leaked";
    return failure;
  });
  std::remove(path.c_str());
}

TEST(AllocFailureTest, KeysAndKeyFiles) {
  int run = 0;
  WalkAllocations("keys and key files", [&](bool) -> Status {
    std::string base, public_path;
    {
      Disarmed disarmed;
      base = ScratchPath("key" + std::to_string(run++));
      public_path = base + ".pub";
    }
    struct Remove {
      const std::string& a;
      const std::string& b;
      ~Remove() {
        std::remove(a.c_str());
        std::remove(b.c_str());
      }
    } remove{base, public_path};
    Result<SecretKey> key = GenerateSecretKey();
    if (!key.ok()) return TakeError(key);
    Status written = WriteKeyFiles(key.value(), base);
    if (!written.ok()) {
      EXPECT_FALSE(Exists(base)) << "a failed WriteKeyFiles left the secret key";
      EXPECT_FALSE(Exists(public_path)) << "a failed WriteKeyFiles left the public key";
      // With memory back, the same call succeeds: nothing blocks a retry.
      Disarmed disarmed;
      EXPECT_TRUE(WriteKeyFiles(key.value(), base).ok());
      return written;
    }
    EXPECT_TRUE(Exists(base) && Exists(public_path));
    Result<SecretKey> secret = ReadSecretKeyFile(base);
    if (!secret.ok()) return TakeError(secret);
    EXPECT_EQ(secret.value().bytes, key.value().bytes);
    Result<PublicKey> pub = ReadPublicKeyFile(public_path);
    if (!pub.ok()) return TakeError(pub);
    EXPECT_EQ(pub.value(), key.value().public_key());
    return Status();
  });
}

TEST(AllocFailureTest, SnapshotReloader) {
  const Ring a = BuildOrDie(Flavor::kPingoraV2, 16, 10);
  const Ring b = BuildOrDie(Flavor::kPingoraV2, 16, 12);
  const uint32_t expected_b = b.FindNode("/key");
  const std::string path = ScratchPath("reload.chash");
  auto publish = [&](const Ring& ring, uint64_t version) {
    Disarmed disarmed;
    SnapshotWriteOptions write;
    write.config_version = version;
    EXPECT_TRUE(WriteSnapshotFile(ring, write, path).ok());
  };
  WalkAllocations("snapshot reloader", [&](bool) -> Status {
    publish(a, 1);
    std::string argument;  // Create takes the path by value: copied here, not under test
    {
      Disarmed disarmed;
      argument = path;
    }
    Result<std::unique_ptr<SnapshotReloader>> created =
        SnapshotReloader::Create(std::move(argument), {});
    if (!created.ok()) return TakeError(created);
    SnapshotReloader& reloader = *created.value();
    // A watcher that never wakes before the destructor: starting it is the
    // allocation under test.
    Status watching = reloader.StartWatching(std::chrono::hours(1));
    if (!watching.ok()) {
      Disarmed disarmed;
      EXPECT_TRUE(reloader.StartWatching(std::chrono::hours(1)).ok());
      return watching;
    }
    publish(b, 2);
    Status polled = reloader.Poll();
    if (!polled.ok()) {
      EXPECT_EQ(reloader.current()->info().config_version, 1u)
          << "a failed reload replaced the current snapshot";
      EXPECT_EQ(reloader.reloads(), 0u);
      // Not refused for good: with memory back the next Poll loads the file.
      Disarmed disarmed;
      EXPECT_EQ(reloader.last_error().code(), StatusCode::kOutOfMemory);
      EXPECT_TRUE(reloader.Poll().ok());
      EXPECT_EQ(reloader.current()->info().config_version, 2u);
      return polled;
    }
    EXPECT_EQ(reloader.current()->info().config_version, 2u);
    EXPECT_EQ(reloader.reloads(), 1u);
    EXPECT_EQ(reloader.ring()->FindNode("/key"), expected_b);
    return Status();
  });
  std::remove(path.c_str());
}

TEST(AllocFailureTest, StatsJsonPlanMultiplesBoundedLoad) {
  const Ring ring = BuildOrDie(Flavor::kNginx, 160, 6);
  const RingStats stats = ComputeRingStats(ring);
  const std::string expected = RingStatsJson(stats).value();
  WalkAllocations("stats json", [&](bool) -> Status {
    Result<std::string> json = RingStatsJson(stats);
    if (!json.ok()) return TakeError(json);
    EXPECT_TRUE(json.value() == expected);
    // A view of a constant table: no allocation, so never a failure.
    const std::span<const uint32_t> multiples = DefaultPlanMultiples();
    EXPECT_EQ(multiples.size(), 13u);
    EXPECT_EQ(multiples.back(), 1024u);
    return Status();
  });
  const std::vector<uint64_t> loads(ring.num_nodes(), 1);
  WalkAllocations("bounded load", [&](bool) -> Status {
    Result<uint32_t> node = FindNodeBoundedLoad(ring, 12345, loads, 1.25);
    if (!node.ok()) return TakeError(node);
    EXPECT_LT(node.value(), ring.num_nodes());
    Result<uint32_t> bad = FindNodeBoundedLoad(ring, 12345, loads, 0.5);  // its message allocates
    Status error = TakeError(bad);
    if (error.code() == StatusCode::kOutOfMemory) return error;
    EXPECT_EQ(error.code(), StatusCode::kBadArgument);
    return Status();
  });
}

// The calls documented to throw std::bad_alloc (text for people): each
// gives its text or throws exactly that, leaking nothing.
TEST(AllocFailureTest, TextHelpersThrowOnlyBadAlloc) {
  const Status error(StatusCode::kTooManyNodes, "65,537 nodes; node ids are u16 (at most 65,536)");
  const NodeAddress address = ParsePingoraAddress("[2001:db8:1:2:3:4:5:6]:443").value();
  const std::array<uint8_t, 16> v6 = address.order.bytes;
  const PublicKey key = GenerateSecretKey().value().public_key();
  const std::string key_id = key.KeyIdHex();
  SnapshotInfo info;
  info.key_id = key.KeyId();
  WalkAllocations("text helpers", [&](bool) -> Status {
    try {
      EXPECT_EQ(error.ToString(),
                "too_many_nodes: 65,537 nodes; node ids are u16 (at most 65,536)");
      EXPECT_EQ(address.HashedBytes(), std::string_view("2001:db8:1:2:3:4:5:6\0" "443", 24));
      EXPECT_EQ(FormatIpv6(v6), "2001:db8:1:2:3:4:5:6");
      EXPECT_EQ(key.KeyIdHex(), key_id);
      EXPECT_EQ(info.KeyIdHex(), key_id);
    } catch (const std::bad_alloc&) {
      return SentinelSeen();
    }
    return Status();
  });
}

// The sum over the scenarios of this run (one test alone under ctest).
class TotalPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    std::printf(
        "allocation failure injection: %lld allocation points in %d scenarios, %lld runs\n",
        static_cast<long long>(total_points), scenarios, static_cast<long long>(total_runs));
  }
};
[[maybe_unused]] ::testing::Environment* const kTotalPrinter =
    ::testing::AddGlobalTestEnvironment(new TotalPrinter);

}  // namespace
}  // namespace chash
