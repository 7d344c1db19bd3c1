// The unhappy paths of a snapshot a control plane pushes to a fleet: what an
// operator's tools and a bad push do to the file after, or instead of, a
// clean rename. Each case names the fault; the property under test is that
// nothing crashes, nothing serves a ring other than one that passed every
// check, and a refusal costs no more than the file's header.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "builder/parallel.h"
#include "snapshot/format.h"
#include "cli_run.h"
#include "reload_util.h"
#include "snapshot_util.h"
#include "test_util.h"

namespace chash {
namespace {

using testing::CheckOf;
using testing::ExpectAnswersOf;
using testing::Publish;
using testing::ReloadFiles;
using testing::SectionOffset;
using testing::StateDir;
using testing::StatusOfChild;
using testing::TempPath;
using testing::Versioned;
namespace fmt = internal::snapshot;

Ring Fleet(uint32_t nodes, uint32_t first, uint32_t multiple = 16) {
  return testing::PingoraFleet("10.4.", ":8080", nodes, first, multiple);
}

void WriteInPlace(const std::string& path, uint64_t offset, const std::string& bytes) {
  const int fd = open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)),
            static_cast<ssize_t>(bytes.size()));
  close(fd);
}

// The file of `ring` as `version` with the byte at 1/`part` of it XORed with
// `flip`: damage only the checksum sees.
std::string Damaged(const Ring& ring, uint64_t version, uint8_t flip, size_t part = 2) {
  std::string bytes = SerializeSnapshot(ring, Versioned(version)).value();
  bytes[bytes.size() / part] ^= flip;
  return bytes;
}

// A record of `reloader` in its state directory: BASE.kind, where the
// report names BASE.good.
std::string RecordOf(const SnapshotReloader& reloader, const std::string& kind) {
  std::string good = reloader.report().state_file;
  EXPECT_GT(good.size(), 5u) << "no state directory";
  if (good.size() <= 5) return good;
  return good.substr(0, good.size() - 4) + kind;
}

// A child's wait status: exited with 0.
::testing::AssertionResult ExitedWithZero(int wstatus) {
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "exit " << WEXITSTATUS(wstatus);
}

// ---- A served ring is immune to its file ----------------------------------

// `cp new old`, `rsync --inplace`, `cat >`: the served file written through,
// then truncated, then extended. A default (sealed) load keeps answering
// exactly as the ring it loaded, and no access faults.
TEST(SnapshotFaults, SealedRingIsImmuneToWritesInPlace) {
  const Ring ring = Fleet(60, 0);
  const Ring other = Fleet(60, 100);
  const std::string path = TempPath("in_place.chash");
  ASSERT_TRUE(WriteSnapshotFile(ring, Versioned(1), path).ok());
  Result<std::shared_ptr<const RingSnapshot>> loaded = LoadSnapshot(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded.value()->mode(), SnapshotLoadMode::kSealed);
  const Ring& served = loaded.value()->ring();

  const std::string replacement = SerializeSnapshot(other, Versioned(2)).value();
  WriteInPlace(path, 0, replacement);
  ExpectAnswersOf(ring, served, "after another file was written over it");
  std::string noise(std::filesystem::file_size(path), '\0');
  std::mt19937 rng(3);
  for (char& c : noise) c = static_cast<char>(rng());
  WriteInPlace(path, 0, noise);
  ExpectAnswersOf(ring, served, "after random bytes were written over it");
  ASSERT_EQ(truncate(path.c_str(), 100), 0);
  ExpectAnswersOf(ring, served, "after it was truncated to 100 bytes");
  ASSERT_EQ(truncate(path.c_str(), 0), 0);
  ExpectAnswersOf(ring, served, "after it was truncated to nothing");
  ASSERT_EQ(truncate(path.c_str(), int64_t{1} << 30), 0);
  ExpectAnswersOf(ring, served, "after it was extended by a hole");
  std::remove(path.c_str());
}

// The lookups of a ring whose mapped file (kMap, the zero-copy mode for
// files nothing rewrites) is rewritten with random bytes stay inside the
// ring's arrays: the slot table and index levels are clamped. Under ASan
// (tools/dev/test-asan) any read outside them fails the test.
TEST(SnapshotFaults, MappedRingLookupsStayInBoundsOnAnyBytes) {
  const Ring ring = Fleet(200, 0, 160);  // 64K points: a stored index with levels
  const std::string path = TempPath("mapped_noise.chash");
  ASSERT_TRUE(WriteSnapshotFile(ring, Versioned(1), path).ok());
  SnapshotLoadOptions map;
  map.mode = SnapshotLoadMode::kMap;
  Result<std::shared_ptr<const RingSnapshot>> loaded = LoadSnapshot(path, map);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const Ring& served = loaded.value()->ring();
  const std::string bytes = testing::ReadAll(path);
  const uint64_t index = SectionOffset(bytes, fmt::kSearchIndex);
  const uint64_t index_bytes =
      testing::LoadAt<uint64_t>(bytes, fmt::kOffSections + 16 * fmt::kSearchIndex + 8);
  const uint64_t hashes = SectionOffset(bytes, fmt::kHashColumn);
  const uint64_t hash_bytes =
      testing::LoadAt<uint64_t>(bytes, fmt::kOffSections + 16 * fmt::kHashColumn + 8);
  ASSERT_GT(index_bytes, 0u);
  std::mt19937 rng(11);
  for (int round = 0; round < 4; ++round) {
    // The slot table and levels to all-ones or random words, the hash
    // column shuffled: every position a lookup reads from them is garbage.
    std::string garbage(index_bytes - fmt::kIndexHeaderBytes, '\xff');
    if (round % 2 == 1) {
      for (char& c : garbage) c = static_cast<char>(rng());
    }
    WriteInPlace(path, index + fmt::kIndexHeaderBytes, garbage);
    std::string column(hash_bytes, '\0');
    for (char& c : column) c = static_cast<char>(rng());
    if (round >= 2) WriteInPlace(path, hashes, column);
    testing::ForEachTarget([&](const std::string& target) {
      for (int i = 0; i < 20000; ++i) {
        const uint32_t hash = static_cast<uint32_t>(rng());
        const uint32_t node = served.FindNodeByHash(hash);
        ASSERT_LT(node, kMaxNodes) << target;
      }
      std::vector<uint32_t> batch(512), out(512);
      for (uint32_t& h : batch) h = static_cast<uint32_t>(rng());
      served.FindNodesByHash(batch, out);
      for (const uint32_t node : out) ASSERT_LT(node, kMaxNodes) << target;
      PointCursor cursor = served.WalkFromHash(static_cast<uint32_t>(rng()));
      for (int step = 0; step < 64; ++step) (void)cursor.Next();
    });
  }
  std::remove(path.c_str());
}

// ---- Refused before a byte of the body is read ------------------------------

// A FIFO at the path: refused as not_regular at once. Run in a child with
// an alarm: the code before this fix blocked in open() forever.
TEST(SnapshotFaults, FifoIsRefusedWithoutBlocking) {
  const std::string path = TempPath("fifo.chash");
  std::remove(path.c_str());
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  const int wstatus = StatusOfChild([&] {
    alarm(10);
    Result<std::shared_ptr<const RingSnapshot>> loaded = LoadSnapshot(path);
    return !loaded.ok() && CheckOf(loaded.status()) == "not_regular" ? 0 : 3;
  });
  EXPECT_FALSE(WIFSIGNALED(wstatus)) << "the load blocked (killed by signal "
                                     << WTERMSIG(wstatus) << ")";
  EXPECT_TRUE(ExitedWithZero(wstatus));
  Result<std::shared_ptr<const RingSnapshot>> directory = LoadSnapshot(StateDir("a_directory"));
  EXPECT_EQ(CheckOf(directory.status()), "not_regular") << directory.status().ToString();
  std::remove(path.c_str());
}

// A valid file followed by a 4 GiB hole, and a file whose header claims
// 4 GiB with nothing but holes behind it: refused for their size or their
// holes from the header alone (no body read, no memory taken: the process
// stays far below the claimed size, checked with RLIMIT_AS in a child).
TEST(SnapshotFaults, SparseAndOversizedFilesAreRefusedFromTheHeader) {
  const Ring ring = Fleet(30, 0);
  const std::string path = TempPath("sparse.chash");
  ASSERT_TRUE(WriteSnapshotFile(ring, Versioned(1), path).ok());
  ASSERT_EQ(truncate(path.c_str(), int64_t{4} << 30), 0);
  const int wstatus = StatusOfChild([&] {
    // 1 GiB of address space more than the process has now: a load that
    // read or mapped the 4 GiB would fail for memory, not for the check.
    struct rlimit limit {};
    std::ifstream statm("/proc/self/statm");
    uint64_t pages = 0;
    statm >> pages;
    limit.rlim_cur = limit.rlim_max = pages * 4096 + (uint64_t{1} << 30);
    setrlimit(RLIMIT_AS, &limit);
    Result<std::shared_ptr<const RingSnapshot>> capped = LoadSnapshot(path);
    if (capped.ok() || CheckOf(capped.status()) != "max_size") return 3;
    SnapshotLoadOptions big;
    big.max_file_bytes = uint64_t{8} << 30;
    Result<std::shared_ptr<const RingSnapshot>> holes = LoadSnapshot(path, big);
    if (holes.ok() || CheckOf(holes.status()) != "sparse") return 4;
    return 0;
  });
  EXPECT_TRUE(ExitedWithZero(wstatus)) << "3 = not refused for its size, 4 = not for its holes";
  std::remove(path.c_str());
}

TEST(SnapshotFaults, UntrustedOrOldFilesAreRefusedBeforeTheBody) {
  const Ring ring = Fleet(30, 0);
  Result<SecretKey> key = GenerateSecretKey();
  ASSERT_TRUE(key.ok());
  const std::string path = TempPath("unsigned_sparse.chash");
  // An unsigned file with a hole where its columns should be: with trusted
  // keys it is refused for its signature before the hole is looked at.
  ASSERT_TRUE(WriteSnapshotFile(ring, Versioned(5), path).ok());
  std::string bytes = testing::ReadAll(path);
  SnapshotLoadOptions trust;
  trust.trusted_keys = {key.value().public_key()};
  trust.max_file_bytes = uint64_t{8} << 30;
  {
    const int fd = open(path.c_str(), O_WRONLY | O_TRUNC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(pwrite(fd, bytes.data(), fmt::kHeaderBytes, 0),
              static_cast<ssize_t>(fmt::kHeaderBytes));
    close(fd);
  }
  EXPECT_EQ(CheckOf(LoadSnapshot(path, trust).status()), "size")
      << "a file shorter than its header says is refused for its size";
  std::remove(path.c_str());
  ASSERT_TRUE(WriteSnapshotFile(ring, Versioned(5), path).ok());
  EXPECT_EQ(CheckOf(LoadSnapshot(path, trust).status()), "signature");
  SnapshotLoadOptions newer;
  newer.min_config_version = 6;
  EXPECT_EQ(CheckOf(LoadSnapshot(path, newer).status()), "min_version");
  std::remove(path.c_str());
}

// ---- Expiry ------------------------------------------------------------------

TEST(SnapshotFaults, ExpiredFilesAreRefused) {
  const Ring ring = Fleet(30, 0);
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  SnapshotWriteOptions stale = Versioned(3);
  stale.expires_unix_seconds = now - 60;
  Result<std::string> bytes = SerializeSnapshot(ring, stale);
  ASSERT_TRUE(bytes.ok());
  Result<std::shared_ptr<const RingSnapshot>> refused = LoadSnapshotFromBytes(bytes.value());
  EXPECT_EQ(CheckOf(refused.status()), "expired") << refused.status().ToString();
  EXPECT_EQ(refused.status().code(), StatusCode::kUntrusted);

  SnapshotWriteOptions fresh = Versioned(3);
  fresh.expires_unix_seconds = now + 3600;
  Result<std::string> good = SerializeSnapshot(ring, fresh);
  ASSERT_TRUE(good.ok());
  Result<std::shared_ptr<const RingSnapshot>> loaded = LoadSnapshotFromBytes(good.value());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded.value()->info().expires_unix_seconds, now + 3600);
  EXPECT_EQ(loaded.value()->info().minor_version, 3);

  // The expiry is signed: moving it forward breaks the signature.
  Result<SecretKey> key = GenerateSecretKey();
  ASSERT_TRUE(key.ok());
  SnapshotWriteOptions signed_stale = stale;
  signed_stale.signing_key = key.value();
  std::string forged = SerializeSnapshot(ring, signed_stale).value();
  fmt::StoreU64(reinterpret_cast<uint8_t*>(forged.data()) + fmt::kOffExpires,
                static_cast<uint64_t>(now + 3600));
  const std::array<uint8_t, 16> sum =
      fmt::Checksum(reinterpret_cast<const uint8_t*>(forged.data()), forged.size() - 16);
  std::memcpy(forged.data() + forged.size() - 16, sum.data(), 16);
  SnapshotLoadOptions trust;
  trust.trusted_keys = {key.value().public_key()};
  EXPECT_EQ(CheckOf(LoadSnapshotFromBytes(forged, trust).status()), "signature");

  SnapshotWriteOptions negative = Versioned(3);
  negative.expires_unix_seconds = -5;
  EXPECT_EQ(SerializeSnapshot(ring, negative).status().code(), StatusCode::kBadArgument);
}

// ---- Versions never go back, across restarts ---------------------------------

TEST(SnapshotFaults, VersionsNeverGoBackAcrossRestarts) {
  const Ring v1 = Fleet(40, 0);
  const Ring v2 = Fleet(40, 50);
  const ReloadFiles files("versions", "cache");
  {
    Result<std::unique_ptr<SnapshotReloader>> first = files.Start(v1, 1);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    ASSERT_TRUE(WriteSnapshotFile(v2, Versioned(2), files.path).ok());
    ASSERT_TRUE(first.value()->Poll().ok());
    EXPECT_EQ(first.value()->current()->info().config_version, 2u);
    EXPECT_EQ(first.value()->report().highest_version, 2u);
  }
  // A restart with the older signed file renamed back: refused as a
  // rollback, and the last good file (version 2) served instead.
  ASSERT_TRUE(WriteSnapshotFile(v1, Versioned(1), files.path).ok());
  Result<std::unique_ptr<SnapshotReloader>> restarted = files.Create();
  ASSERT_TRUE(restarted.ok()) << restarted.status().ToString();
  EXPECT_EQ(restarted.value()->current()->info().config_version, 2u);
  ExpectAnswersOf(v2, *restarted.value()->ring(), "served from the last good file");
  const ReloadReport report = restarted.value()->report();
  EXPECT_TRUE(report.serving_last_good);
  EXPECT_EQ(report.last_check, SnapshotCheck::kRollback) << report.last_message;
  // A rollback done right: the old servers as a new, higher version.
  ASSERT_TRUE(WriteSnapshotFile(v1, Versioned(3), files.path).ok());
  EXPECT_TRUE(restarted.value()->Poll().ok());
  EXPECT_EQ(restarted.value()->current()->info().config_version, 3u);
  EXPECT_FALSE(restarted.value()->report().serving_last_good);
  // Version 3 with another ring: same_version.
  ASSERT_TRUE(WriteSnapshotFile(v2, Versioned(3), files.path).ok());
  EXPECT_EQ(CheckOf(restarted.value()->Poll()), "same_version");
  // The floor is the last good file, proven by its own checks: a restart
  // without it has no floor (whoever may delete it in the state directory
  // could as well have let the file at the path through), and one whose
  // last good file fails its checks sets it aside and serves the path's.
  ASSERT_TRUE(restarted.value()->Check().outcome == ReloadOutcome::kUnchanged);  // writes it
  const std::string good = RecordOf(*restarted.value(), "good");
  ASSERT_TRUE(std::filesystem::exists(good));
  ASSERT_TRUE(WriteSnapshotFile(v2, Versioned(2), files.path).ok());
  restarted.value().reset();
  Result<std::unique_ptr<SnapshotReloader>> floored = files.Create();
  ASSERT_TRUE(floored.ok()) << floored.status().ToString();
  EXPECT_EQ(floored.value()->current()->info().config_version, 3u) << "the last good file";
  floored.value().reset();
  std::ofstream(good, std::ios::binary | std::ios::trunc) << Damaged(v1, 3, 0x20);
  Result<std::unique_ptr<SnapshotReloader>> set_aside = files.Create();
  ASSERT_TRUE(set_aside.ok()) << set_aside.status().ToString();
  EXPECT_EQ(set_aside.value()->current()->info().config_version, 2u);
  EXPECT_EQ(set_aside.value()->report().last_check, SnapshotCheck::kChecksum)
      << set_aside.value()->report().last_message;
  set_aside.value().reset();
  std::filesystem::remove(good);
  Result<std::unique_ptr<SnapshotReloader>> no_floor = files.Create();
  ASSERT_TRUE(no_floor.ok()) << no_floor.status().ToString();
  EXPECT_EQ(no_floor.value()->current()->info().config_version, 2u);
}

// A damaged file at start: the last good one is served, and the refusal is
// reported, not hidden.
TEST(SnapshotFaults, LastGoodServesWhenTheFileIsDamagedAtStart) {
  const Ring v4 = Fleet(40, 0);
  const ReloadFiles files("last_good");
  ASSERT_TRUE(files.Start(v4, 4).ok());
  std::ofstream(files.path, std::ios::binary | std::ios::trunc) << Damaged(Fleet(40, 7), 5, 0x10);
  Result<std::unique_ptr<SnapshotReloader>> restarted = files.Create();
  ASSERT_TRUE(restarted.ok()) << restarted.status().ToString();
  EXPECT_EQ(restarted.value()->current()->info().config_version, 4u);
  EXPECT_TRUE(restarted.value()->report().serving_last_good);
  EXPECT_EQ(restarted.value()->report().last_check, SnapshotCheck::kChecksum);
}

// A configuration test (write_state = false) sees the persisted versions
// but leaves the state directory as it was.
TEST(SnapshotFaults, AReadOnlyReloaderWritesNothing) {
  const ReloadFiles files("read_only", "ro");
  ASSERT_TRUE(files.Start(Fleet(20, 0), 5).ok());
  const auto listing = [&] {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(files.dir)) {
      names.push_back(entry.path().filename().string() + ":" +
                      std::to_string(std::filesystem::last_write_time(entry).time_since_epoch().count()));
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  const std::vector<std::string> before = listing();
  ReloadOptions test = files.options;
  test.write_state = false;
  ASSERT_TRUE(WriteSnapshotFile(Fleet(20, 1), Versioned(4), files.path).ok());
  Result<std::unique_ptr<SnapshotReloader>> refused = SnapshotReloader::Create(files.path, test);
  ASSERT_TRUE(refused.ok()) << "the last good file is served";
  EXPECT_TRUE(refused.value()->report().serving_last_good);
  ASSERT_TRUE(WriteSnapshotFile(Fleet(20, 2), Versioned(6), files.path).ok());
  Result<std::unique_ptr<SnapshotReloader>> newer = SnapshotReloader::Create(files.path, test);
  ASSERT_TRUE(newer.ok());
  EXPECT_EQ(newer.value()->current()->info().config_version, 6u);
  EXPECT_EQ(listing(), before) << "a read-only reloader wrote to the state directory";
}

// A deferred reloader touches no file until its first Check, which finds
// the first ring as Create would; nothing is served before it is accepted.
TEST(SnapshotFaults, ADeferredReloaderLoadsAtItsFirstCheck) {
  const std::string path = TempPath("deferred.chash");
  ReloadOptions broken;
  broken.state_dir = TempPath("no_such_state_dir");
  broken.defer_first_load = true;
  std::filesystem::remove_all(broken.state_dir);
  Result<std::unique_ptr<SnapshotReloader>> early = SnapshotReloader::Create(path, broken);
  ASSERT_TRUE(early.ok()) << "Create looked at the file system: " << early.status().ToString();
  EXPECT_EQ(early.value()->current(), nullptr);
  const ReloadCandidate unusable = early.value()->Check();
  EXPECT_EQ(unusable.outcome, ReloadOutcome::kRefused);
  EXPECT_NE(unusable.status.message().find("no_such_state_dir"), std::string::npos)
      << unusable.status.ToString();

  ReloadOptions options;
  options.defer_first_load = true;
  Result<std::unique_ptr<SnapshotReloader>> created = SnapshotReloader::Create(path, options);
  ASSERT_TRUE(created.ok());
  SnapshotReloader& reloader = *created.value();
  std::remove(path.c_str());
  EXPECT_EQ(reloader.Check().outcome, ReloadOutcome::kRefused) << "no file yet";
  const Ring v1 = Fleet(30, 0);
  ASSERT_TRUE(WriteSnapshotFile(v1, Versioned(1), path).ok());
  ReloadCandidate first = reloader.Check();
  ASSERT_EQ(first.outcome, ReloadOutcome::kNew) << first.status.ToString();
  EXPECT_EQ(reloader.current(), nullptr) << "served before it was accepted";
  ASSERT_TRUE(reloader.Accept(first).ok());
  ExpectAnswersOf(v1, *reloader.ring(), "the first ring");
  EXPECT_EQ(reloader.report().accepted, 0u) << "the first ring is not a reload";
  EXPECT_EQ(reloader.Check().outcome, ReloadOutcome::kUnchanged);
  std::remove(path.c_str());
}

// A copy of the ring served under a new identity is verified like any
// file: a good copy is the same ring (no swap), a damaged one is refused,
// never taken for the ring served because its header says so.
TEST(SnapshotFaults, ACopyOfTheServedRingIsVerifiedToo) {
  const Ring ring = Fleet(30, 0);
  const std::string path = TempPath("same_ring.chash");
  ASSERT_TRUE(WriteSnapshotFile(ring, Versioned(4), path).ok());
  Result<std::unique_ptr<SnapshotReloader>> created = SnapshotReloader::Create(path, {});
  ASSERT_TRUE(created.ok());
  SnapshotReloader& reloader = *created.value();
  const std::shared_ptr<const RingSnapshot> served = reloader.current();
  ASSERT_TRUE(WriteSnapshotFile(ring, Versioned(4), path).ok());  // a new inode, the same ring
  EXPECT_EQ(reloader.Check().outcome, ReloadOutcome::kSameRing);
  EXPECT_EQ(reloader.current(), served) << "the same ring is not swapped";
  ASSERT_NO_FATAL_FAILURE(Publish(Damaged(ring, 4, 4), path));
  const ReloadCandidate refused = reloader.Check();
  EXPECT_EQ(refused.outcome, ReloadOutcome::kRefused);
  EXPECT_EQ(refused.check, SnapshotCheck::kChecksum) << refused.status.ToString();
  EXPECT_EQ(reloader.current(), served);
  std::remove(path.c_str());
}

// ---- One verification a host -----------------------------------------------

// Two reloaders with one state directory: the second adopts the sealed copy
// the first verified (the same pages: no second copy, no second verify).
TEST(SnapshotFaults, ASecondReloaderAdoptsTheVerifiedCopy) {
  const Ring v1 = Fleet(40, 0);
  const Ring v2 = Fleet(45, 10);
  const ReloadFiles files("share", "shared");
  Result<std::unique_ptr<SnapshotReloader>> a = files.Start(v1, 1);
  Result<std::unique_ptr<SnapshotReloader>> b = files.Create();
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(WriteSnapshotFile(v2, Versioned(2), files.path).ok());
  ReloadCandidate first = a.value()->Check();
  ASSERT_EQ(first.outcome, ReloadOutcome::kNew) << first.status.ToString();
  EXPECT_FALSE(first.adopted);
  ASSERT_TRUE(a.value()->Accept(first).ok());
  ReloadCandidate second = b.value()->Check();
  ASSERT_EQ(second.outcome, ReloadOutcome::kNew) << second.status.ToString();
  EXPECT_TRUE(second.adopted) << "the second reloader verified the file again";
  ASSERT_TRUE(b.value()->Accept(second).ok());
  EXPECT_EQ(b.value()->report().adopted, 1u);
  ExpectAnswersOf(v2, *b.value()->ring(), "adopted");

  // A refusal is shared too: the second reloader refuses the identity the
  // first refused, with its check.
  ASSERT_NO_FATAL_FAILURE(Publish(Damaged(Fleet(45, 20), 3, 1, 3), files.path));
  EXPECT_EQ(CheckOf(a.value()->Poll()), "checksum");
  ReloadCandidate shared_refusal = b.value()->Check();
  EXPECT_EQ(shared_refusal.outcome, ReloadOutcome::kRefused);
  EXPECT_EQ(shared_refusal.check, SnapshotCheck::kChecksum);
  EXPECT_EQ(b.value()->current()->info().config_version, 2u);

  // A process started later (a respawned worker) catches up without the
  // path: AdoptShared takes the newest verified copy.
  ASSERT_TRUE(WriteSnapshotFile(Fleet(45, 30), Versioned(4), files.path).ok());
  ASSERT_TRUE(a.value()->Poll().ok());
  ReloadCandidate caught_up = b.value()->AdoptShared();
  ASSERT_EQ(caught_up.outcome, ReloadOutcome::kNew);
  EXPECT_TRUE(caught_up.adopted);
  ASSERT_TRUE(b.value()->Accept(caught_up).ok());
  EXPECT_EQ(b.value()->current()->info().config_version, 4u);
  EXPECT_EQ(b.value()->Check().outcome, ReloadOutcome::kUnchanged)
      << "the path's file is the one adopted";
}

// Across processes: a child with the same state directory adopts what the
// parent verified.
TEST(SnapshotFaults, AnotherProcessAdoptsTheVerifiedCopy) {
  const ReloadFiles files("share_process");
  Result<std::unique_ptr<SnapshotReloader>> parent = files.Start(Fleet(40, 0), 7);
  ASSERT_TRUE(parent.ok());
  const int wstatus = StatusOfChild([&] {
    alarm(20);
    // A fresh reloader in the child: its Create adopts the parent's copy.
    if (!WriteSnapshotFile(Fleet(40, 0), Versioned(7), files.path + ".unused").ok()) return 2;
    Result<std::unique_ptr<SnapshotReloader>> mine = files.Create();
    if (!mine.ok()) return 3;
    ReloadCandidate none = mine.value()->Check();
    return none.outcome == ReloadOutcome::kUnchanged &&
                   mine.value()->current()->info().config_version == 7
               ? 0
               : 4;
  });
  EXPECT_TRUE(ExitedWithZero(wstatus));
  std::remove((files.path + ".unused").c_str());
}

// A record naming a descriptor that is not the sealed copy (the holder
// closed it and reused the number) is not adopted: the file is verified.
TEST(SnapshotFaults, AStaleShareRecordIsNotTrusted) {
  const ReloadFiles files("stale_share", "stale");
  Result<std::unique_ptr<SnapshotReloader>> a = files.Start(Fleet(40, 0), 1);
  ASSERT_TRUE(a.ok());
  // The record now names a descriptor of this process that is a plain file.
  const std::string share = RecordOf(*a.value(), "share");
  std::string record = testing::ReadAll(share);
  const int other = open(files.path.c_str(), O_RDONLY);
  ASSERT_GE(other, 0);
  const size_t at = record.find("\nfd ");
  ASSERT_NE(at, std::string::npos);
  const size_t end = record.find('\n', at + 1);
  record.replace(at, end - at, "\nfd " + std::to_string(other));
  std::ofstream(share, std::ios::trunc) << record;
  ASSERT_TRUE(WriteSnapshotFile(Fleet(40, 5), Versioned(2), files.path).ok());
  Result<std::unique_ptr<SnapshotReloader>> b = files.Create();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b.value()->current()->info().config_version, 2u);
  close(other);
}

// The process that verified the host's newest ring has exited (a worker
// killed right after its swap), and the path now holds a refused file: a
// process that still serves an older ring (a respawned worker, forked from
// the master's configuration-time state) catches up with the last good file
// instead of the copy it can no longer adopt.
TEST(SnapshotFaults, AdoptSharedFallsBackToLastGoodWhenTheVerifierIsGone) {
  const Ring v1 = Fleet(40, 0);
  const Ring v2 = Fleet(42, 3);
  const ReloadFiles files("gone", "gone");
  Result<std::unique_ptr<SnapshotReloader>> master = files.Start(v1, 1);
  ASSERT_TRUE(master.ok());
  ASSERT_TRUE(WriteSnapshotFile(v2, Versioned(2), files.path).ok());
  // The verifier: a process that verifies version 2, then exits.
  ASSERT_TRUE(ExitedWithZero(StatusOfChild([&] {
    alarm(20);
    Result<std::unique_ptr<SnapshotReloader>> mine = files.Create();
    return mine.ok() && mine.value()->current()->info().config_version == 2 ? 0 : 3;
  })));
  ASSERT_NO_FATAL_FAILURE(Publish(Damaged(Fleet(42, 9), 3, 1), files.path));

  ReloadCandidate caught_up = master.value()->AdoptShared();
  ASSERT_EQ(caught_up.outcome, ReloadOutcome::kNew) << "still serving version 1";
  EXPECT_FALSE(caught_up.adopted);
  ASSERT_TRUE(master.value()->Accept(caught_up).ok());
  EXPECT_EQ(master.value()->current()->info().config_version, 2u);
  ExpectAnswersOf(v2, *master.value()->ring(), "the last good file");
  EXPECT_EQ(master.value()->AdoptShared().outcome, ReloadOutcome::kUnchanged);
  EXPECT_EQ(master.value()->Check().outcome, ReloadOutcome::kRefused);
  EXPECT_EQ(master.value()->current()->info().config_version, 2u);
}

// ---- A full disk -------------------------------------------------------------

// The state directory's file system fills up (a tmpfs in a private mount
// namespace, filled by another file): the new ring is served all the same,
// the failure to write BASE.good (at the Check after the swap) is reported,
// and the write is tried again once there is room.
TEST(SnapshotFaults, AFullDiskDoesNotStopAReload) {
  const ReloadFiles files("full_disk", "disk");
  ASSERT_TRUE(WriteSnapshotFile(Fleet(20, 0), Versioned(1), files.path).ok());
  constexpr int kNoNamespace = 77;
  const int wstatus = StatusOfChild([&] {
    alarm(20);
    if (!testing::MountSmallTmpfsInChild(files.dir, "256k")) return kNoNamespace;
    Result<std::unique_ptr<SnapshotReloader>> reloader = files.Create();
    if (!reloader.ok() || !reloader.value()->report().state_error.ok()) return 3;
    const std::string filler = files.dir + "/filler";
    {
      std::ofstream fill(filler, std::ios::binary);
      const std::string block(4096, 'x');
      for (int i = 0; i < 128 && fill.good(); ++i) fill << block;
    }
    if (!WriteSnapshotFile(Fleet(20, 3), Versioned(2), files.path).ok()) return 4;
    if (!reloader.value()->Poll().ok()) return 5;  // served; BASE.good is written next
    if (reloader.value()->current()->info().config_version != 2) return 6;
    (void)reloader.value()->Check();  // nothing new: writes BASE.good, on a full disk
    if (reloader.value()->report().state_error.ok()) return 7;
    std::remove(filler.c_str());
    (void)reloader.value()->Check();  // nothing new: tries again
    if (!reloader.value()->report().state_error.ok()) return 8;
    // A restart on the older file serves version 2, the floor BASE.good keeps.
    if (!WriteSnapshotFile(Fleet(20, 0), Versioned(1), files.path).ok()) return 4;
    Result<std::unique_ptr<SnapshotReloader>> restarted = files.Create();
    if (!restarted.ok() || restarted.value()->current()->info().config_version != 2) return 9;
    return 0;
  });
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == kNoNamespace) {
    GTEST_SKIP() << "no user and mount namespace (or tmpfs) for this process";
  }
  ASSERT_TRUE(WIFEXITED(wstatus)) << "signal " << WTERMSIG(wstatus);
  EXPECT_EQ(WEXITSTATUS(wstatus), 0)
      << "5 = the swap failed, 6 = the new ring was not served, 7 = not reported, "
         "8 = not written once there was room, 9 = a restart did not see it";
}

// ---- Threads -----------------------------------------------------------------

TEST(SnapshotFaults, DefaultThreadsFollowTheAffinityMask) {
  EXPECT_TRUE(ExitedWithZero(StatusOfChild([] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) return 3;
    return internal::UsableCpus() == 1 ? 0 : 4;
  })));
  EXPECT_GE(internal::UsableCpus(), 1u);
  EXPECT_LE(internal::UsableCpus(), internal::kMaxDefaultThreads);
  // One thread or many: the same signed load.
  const Ring ring = Fleet(80, 0, 160);
  Result<SecretKey> key = GenerateSecretKey();
  ASSERT_TRUE(key.ok());
  SnapshotWriteOptions write = Versioned(1);
  write.signing_key = key.value();
  const std::string bytes = SerializeSnapshot(ring, write).value();
  for (const uint32_t threads : {1u, 3u, 300u}) {
    SnapshotLoadOptions load;
    load.trusted_keys = {key.value().public_key()};
    load.threads = threads;
    Result<std::shared_ptr<const RingSnapshot>> loaded = LoadSnapshotFromBytes(bytes, load);
    ASSERT_TRUE(loaded.ok()) << threads << ": " << loaded.status().ToString();
  }
}

TEST(SnapshotFaults, EveryCheckHasItsName) {
  for (uint8_t i = 0; i < kSnapshotCheckCount; ++i) {
    const std::string_view name = SnapshotCheckName(static_cast<SnapshotCheck>(i));
    EXPECT_NE(name, "unknown") << int{i};
    if (i > 0) {
      EXPECT_EQ(FailedSnapshotCheck(Status(StatusCode::kBadSnapshot, std::string(name) + ": x")),
                static_cast<SnapshotCheck>(i));
    }
  }
  EXPECT_EQ(SnapshotCheckName(static_cast<SnapshotCheck>(kSnapshotCheckCount)), "unknown");
  // A path that merely contains a check's name is not that check.
  EXPECT_EQ(FailedSnapshotCheck(Status(StatusCode::kUntrusted,
                                       "signature: /etc/min_version/ring.chash is not signed")),
            SnapshotCheck::kSignature);
}

// The codes as snapshot.h documents them, check by check.
TEST(SnapshotFaults, EveryCheckCarriesItsDocumentedCode) {
  EXPECT_EQ(CodeOfSnapshotCheck(SnapshotCheck::kNone), StatusCode::kOk);
  for (const SnapshotCheck io : {SnapshotCheck::kIo, SnapshotCheck::kNotRegular}) {
    EXPECT_EQ(CodeOfSnapshotCheck(io), StatusCode::kIoError) << SnapshotCheckName(io);
  }
  for (const SnapshotCheck trust :
       {SnapshotCheck::kMinVersion, SnapshotCheck::kExpired, SnapshotCheck::kSignature,
        SnapshotCheck::kRollback, SnapshotCheck::kSameVersion}) {
    EXPECT_EQ(CodeOfSnapshotCheck(trust), StatusCode::kUntrusted) << SnapshotCheckName(trust);
  }
  EXPECT_EQ(CodeOfSnapshotCheck(SnapshotCheck::kOutOfMemory), StatusCode::kOutOfMemory);
  for (const SnapshotCheck bad :
       {SnapshotCheck::kMaxSize, SnapshotCheck::kMagic, SnapshotCheck::kChecksum,
        SnapshotCheck::kFlavor, SnapshotCheck::kEmbedder, SnapshotCheck::kLowColumn,
        static_cast<SnapshotCheck>(kSnapshotCheckCount)}) {
    EXPECT_EQ(CodeOfSnapshotCheck(bad), StatusCode::kBadSnapshot) << SnapshotCheckName(bad);
  }
}

}  // namespace
}  // namespace chash
