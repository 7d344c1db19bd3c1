// The state directory under attack (SECURITY.md): what another process of
// the worker user, or whoever writes the watched file, can put there, and
// that no process then writes outside it, serves a ring that failed a
// check, hangs, crashes, or fails a later start. Each case is one of the
// faults the state-directory issue reproduced against 1.0.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "snapshot/format.h"
#include "cli_run.h"
#include "snapshot/host_state.h"
#include "reload_util.h"
#include "snapshot_util.h"
#include "test_util.h"

namespace chash {
namespace {

using testing::CheckOf;
using testing::ExpectAnswersOf;
using testing::Publish;
using testing::ReadAll;
using testing::StatusOfChild;
using testing::TempPath;
using testing::Versioned;
namespace fmt = internal::snapshot;

Ring Fleet(uint32_t nodes, uint32_t first) {
  return testing::PingoraFleet("10.9.", ":80", nodes, first, 16);
}

constexpr testing::Probes kProbes{.count = 2048, .seed = 11};

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A watched file and a state directory (mode 0700, as nginx makes it),
// removed at the end.
struct StateFiles : testing::ReloadFiles {
  explicit StateFiles(const std::string& test_case, const std::string& name = "up")
      : ReloadFiles(test_case, name) {
    chmod(dir.c_str(), 0700);
  }
  // `write` signed with a new key, which this reloader trusts.
  void SignWithATrustedKey(SnapshotWriteOptions& write) {
    Result<SecretKey> key = GenerateSecretKey();
    ASSERT_TRUE(key.ok());
    options.load.trusted_keys = {key.value().public_key()};
    write.signing_key = key.value();
  }
  // DIR/BASE.kind, BASE as the reloader names its records.
  std::string Record(const std::string& kind) const {
    const Fingerprint digest = Sha256(path);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string base = options.name + ".p";
    for (int i = 0; i < 4; ++i) {
      base += kHex[digest.bytes[i] >> 4];
      base += kHex[digest.bytes[i] & 15];
    }
    return dir + "/" + base + "." + kind;
  }
  std::vector<std::string> Listing() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }
};

// Runs `body` in a child with an alarm: a hang fails instead of blocking
// the suite. 0 if it returned 0.
int InChild(int seconds, const std::function<int()>& body) {
  const int wstatus = StatusOfChild([&] {
    alarm(static_cast<unsigned>(seconds));
    return body();
  });
  if (WIFSIGNALED(wstatus)) return 1000 + WTERMSIG(wstatus);
  return WEXITSTATUS(wstatus);
}

// ---- Root never follows a link in the state directory ------------------------

// 1.0 wrote NAME.X.tmp.PID.THREADHASH with O_CREAT | O_TRUNC and renamed
// it: a link planted at that name (or at the records) made the root master
// truncate and write whatever the link pointed at. Here links are planted
// at every name 1.0 would have used and at the records; the file they
// point at (standing for /etc/ld.so.preload) stays as it was, and the
// records become files of their own.
TEST(SnapshotState, LinksPlantedAtTheRecordsAndTemporaryNamesAreNeverFollowed) {
  const StateFiles s("state_links");
  const std::string target = TempPath("state_links_target");
  WriteAll(target, "precious\n");
  const std::string thread_hash =
      std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  for (const std::string kind : {"good", "share", "state"}) {
    ASSERT_EQ(symlink(target.c_str(), s.Record(kind).c_str()), 0);
    const std::string legacy_temp =
        s.Record(kind) + ".tmp." + std::to_string(getpid()) + "." + thread_hash;
    ASSERT_EQ(symlink(target.c_str(), legacy_temp.c_str()), 0);
  }
  ASSERT_TRUE(WriteSnapshotFile(Fleet(20, 0), Versioned(1), s.path).ok());
  Result<std::unique_ptr<SnapshotReloader>> reloader = s.Create();
  ASSERT_TRUE(reloader.ok()) << reloader.status().ToString();
  ASSERT_TRUE(WriteSnapshotFile(Fleet(20, 1), Versioned(2), s.path).ok());
  ASSERT_TRUE(reloader.value()->Poll().ok());
  (void)reloader.value()->Check();  // writes BASE.good
  EXPECT_EQ(ReadAll(target), "precious\n") << "a write followed a planted link";
  struct stat st {};
  ASSERT_EQ(lstat(s.Record("good").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode)) << "BASE.good is still the planted link";
  ASSERT_EQ(lstat(s.Record("share").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode)) << "BASE.share is still the planted link";
  EXPECT_EQ(ReadSnapshotInfo(s.Record("good")).value().config_version, 2u);
  std::remove(target.c_str());
}

// A link at BASE.lock: not followed, not created through; nothing is
// written (no write goes unlocked) and the report says why.
TEST(SnapshotState, ALinkAtTheLockStopsTheWritesAndSaysSo) {
  const StateFiles s("state_lock_link");
  const std::string target = TempPath("state_lock_target");
  std::remove(target.c_str());
  ASSERT_EQ(symlink(target.c_str(), s.Record("lock").c_str()), 0);
  ASSERT_TRUE(WriteSnapshotFile(Fleet(20, 0), Versioned(1), s.path).ok());
  Result<std::unique_ptr<SnapshotReloader>> reloader = s.Create();
  ASSERT_TRUE(reloader.ok()) << reloader.status().ToString();
  EXPECT_FALSE(std::filesystem::exists(target)) << "the lock was created through the link";
  const ReloadReport report = reloader.value()->report();
  EXPECT_FALSE(report.state_error.ok());
  EXPECT_NE(report.state_error.message().find(".lock"), std::string::npos)
      << report.state_error.ToString();
  EXPECT_FALSE(std::filesystem::exists(s.Record("good")));
}

// ---- Adoption proves what it adopts ------------------------------------------

// A sealed memory file of this process holding `bytes`; its descriptor
// stays open for the test.
internal::SealedCopy SealedMemoryFile(const std::string& bytes) {
  const int fd = memfd_create("forged", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), 0);
  struct stat st {};
  EXPECT_EQ(fstat(fd, &st), 0);
  return internal::SealedCopy{fd, st.st_dev, st.st_ino, bytes.size()};
}

// A share record naming `copy` as this process's copy of `path`'s file.
void NameInShare(const StateFiles& s, const internal::SealedCopy& copy, uint64_t version,
                 const Fingerprint& fingerprint) {
  internal::ShareRecord record;
  record.path = s.path;
  record.policy = internal::PolicyDigest(s.options.load);
  record.pid = getpid();
  record.copy = copy;
  record.config_version = version;
  record.fingerprint = fingerprint;
  WriteAll(s.Record("share"), internal::FormatShareRecord(record));
}

// The worker user takes the signed file, points its keys elsewhere (a node
// column byte), seals that in a memory file and names it in BASE.share,
// once with the file's own header and trailer and once with a raised
// version: neither a start (the master at a reload) nor a respawned worker
// (AdoptShared) serves it, and BASE.good never takes its bytes.
TEST(SnapshotState, AForgedCopyNamedInTheShareRecordIsNeverServed) {
  StateFiles s("state_forged");
  SnapshotWriteOptions write = Versioned(4);
  ASSERT_NO_FATAL_FAILURE(s.SignWithATrustedKey(write));
  const Ring real = Fleet(30, 0);
  const std::string signed_bytes = SerializeSnapshot(real, write).value();
  Publish(signed_bytes, s.path);
  Result<std::unique_ptr<SnapshotReloader>> worker = s.Create();
  ASSERT_TRUE(worker.ok()) << worker.status().ToString();

  std::string same_header = signed_bytes;
  const uint64_t node_column = testing::SectionOffset(signed_bytes, fmt::kNodeColumn);
  same_header[node_column] = static_cast<char>(same_header[node_column] ^ 1);
  testing::FixChecksum(same_header);
  std::string raised = testing::StoredAt<uint64_t>(same_header, fmt::kOffConfigVersion, 99);
  testing::FixChecksum(raised);
  for (const std::string* forged : {&same_header, &raised}) {
    const internal::SealedCopy copy = SealedMemoryFile(*forged);
    NameInShare(s, copy, forged == &raised ? 99 : 4, RingFingerprint(real));
    Result<std::unique_ptr<SnapshotReloader>> master = s.Create();
    ASSERT_TRUE(master.ok()) << master.status().ToString();
    EXPECT_EQ(master.value()->current()->info().config_version, 4u);
    ExpectAnswersOf(real, *master.value()->ring(), "a start with a forged copy named", kProbes);
    EXPECT_EQ(worker.value()->AdoptShared().outcome, ReloadOutcome::kUnchanged);
    master.value().reset();
    EXPECT_EQ(ReadSnapshotInfo(s.Record("good")).value().config_version, 4u);
    EXPECT_EQ(ReadAll(s.Record("good")), signed_bytes);
    close(copy.fd);
  }
}

// A three-line text naming the new file's identity, pid and descriptor of
// nothing, the version and ring served: 1.0 took the new file for the ring
// served and never loaded it. A record is a hint, never a verdict.
TEST(SnapshotState, ATextOnlyShareRecordFreezesNothing) {
  const StateFiles s("state_text_share");
  const Ring v1 = Fleet(25, 0);
  ASSERT_TRUE(WriteSnapshotFile(v1, Versioned(1), s.path).ok());
  Result<std::unique_ptr<SnapshotReloader>> reloader = s.Create();
  ASSERT_TRUE(reloader.ok());
  const Ring v2 = Fleet(25, 9);
  ASSERT_TRUE(WriteSnapshotFile(v2, Versioned(2), s.path).ok());
  struct stat st {};
  ASSERT_EQ(stat(s.path.c_str(), &st), 0);
  NameInShare(s, internal::SealedCopy{3, st.st_dev, st.st_ino, static_cast<uint64_t>(st.st_size)},
              1, RingFingerprint(v1));
  ASSERT_TRUE(reloader.value()->Poll().ok());
  EXPECT_EQ(reloader.value()->current()->info().config_version, 2u);
  ExpectAnswersOf(v2, *reloader.value()->ring(), "the new file", kProbes);
}

// A share record of any bytes: one well-formed record or nothing.
TEST(SnapshotState, ShareRecordsParseWhollyOrNotAtAll) {
  internal::ShareRecord record;
  record.path = "/etc/nginx/ring with spaces.chash";
  record.pid = 2147483647;
  record.copy = internal::SealedCopy{17, 5, UINT64_MAX, 123456};
  record.config_version = UINT64_MAX;
  record.fingerprint.bytes[3] = 0xab;
  record.policy[31] = 0x01;
  const std::string text = internal::FormatShareRecord(record);
  const std::optional<internal::ShareRecord> back = internal::ParseShareRecord(text);
  ASSERT_TRUE(back.has_value()) << text;
  EXPECT_EQ(back->path, record.path);
  EXPECT_EQ(back->config_version, UINT64_MAX);
  EXPECT_EQ(static_cast<uint64_t>(back->copy.inode), UINT64_MAX);
  EXPECT_EQ(back->copy.fd, 17);
  EXPECT_EQ(back->pid, 2147483647);
  EXPECT_EQ(back->policy, record.policy);
  EXPECT_TRUE(back->fingerprint == record.fingerprint);
  const auto replaced = [&](const std::string& key, const std::string& value) {
    std::string edited = text;
    const size_t at = edited.find("\n" + key + " ") + 1;
    const size_t end = edited.find('\n', at);
    edited.replace(at, end - at, key + " " + value);
    return edited;
  };
  EXPECT_FALSE(internal::ParseShareRecord(replaced("config_version", "18446744073709551616")));
  EXPECT_FALSE(internal::ParseShareRecord(replaced("config_version", "-1")));
  EXPECT_FALSE(internal::ParseShareRecord(replaced("config_version", "+1")));
  EXPECT_FALSE(internal::ParseShareRecord(replaced("config_version", "1 ")));
  EXPECT_FALSE(internal::ParseShareRecord(replaced("pid", "0")));
  EXPECT_FALSE(internal::ParseShareRecord(replaced("pid", "2147483648")));
  EXPECT_FALSE(internal::ParseShareRecord(replaced("fd", "2147483648")));
  EXPECT_FALSE(internal::ParseShareRecord(replaced("policy", "00")));
  EXPECT_FALSE(internal::ParseShareRecord(text + "pid 5\n")) << "a field twice";
  EXPECT_FALSE(internal::ParseShareRecord(text + "extra 5\n")) << "an unknown field";
  EXPECT_FALSE(internal::ParseShareRecord(text.substr(0, text.size() - 1))) << "no last newline";
  EXPECT_FALSE(internal::ParseShareRecord(text.substr(0, text.find("\nfd "))))
      << "a field missing";
  EXPECT_FALSE(internal::ParseShareRecord("chash-reload-share 1\n" + text.substr(text.find('\n') + 1)))
      << "1.0's record";
  EXPECT_FALSE(internal::ParseShareRecord(std::string(internal::kMaxRecordBytes + 1, 'x')));
}

// ---- Records that cannot hang or wedge ---------------------------------------

// A FIFO and a link to /dev/zero as each record: a start, a check and a
// respawned worker's catch-up finish (each in a child with an alarm), and
// the ring is served.
TEST(SnapshotState, FifosAndDevZeroAsRecordsHangNothing) {
  for (const bool fifo : {true, false}) {
    const StateFiles s(fifo ? "state_fifo" : "state_zero");
    for (const std::string kind : {"good", "share", "lock"}) {
      if (fifo) {
        ASSERT_EQ(mkfifo(s.Record(kind).c_str(), 0600), 0);
      } else {
        ASSERT_EQ(symlink("/dev/zero", s.Record(kind).c_str()), 0);
      }
    }
    const Ring v1 = Fleet(20, 0);
    ASSERT_TRUE(WriteSnapshotFile(v1, Versioned(1), s.path).ok());
    EXPECT_EQ(InChild(20,
                      [&] {
                        Result<std::unique_ptr<SnapshotReloader>> r = s.Create();
                        if (!r.ok()) return 2;
                        if (r.value()->current()->info().config_version != 1) return 3;
                        if (!WriteSnapshotFile(Fleet(20, 4), Versioned(2), s.path).ok()) return 4;
                        (void)r.value()->Check();
                        (void)r.value()->AdoptShared();
                        ReloadOptions test = s.options;
                        test.write_state = false;
                        Result<std::unique_ptr<SnapshotReloader>> t =
                            SnapshotReloader::Create(s.path, test);
                        return t.ok() ? 0 : 5;
                      }),
              0)
        << (fifo ? "FIFOs" : "links to /dev/zero") << " (14 = SIGALRM: a hang)";
  }
}

// Version 2^64 - 1 is served and kept; every later start works (1.0 wrote
// it to NAME.state, which its reader then refused as damaged).
TEST(SnapshotState, TheLargestVersionDoesNotWedgeLaterStarts) {
  const StateFiles s("state_max_version");
  const Ring ring = Fleet(20, 0);
  ASSERT_TRUE(WriteSnapshotFile(ring, Versioned(UINT64_MAX), s.path).ok());
  for (int start = 0; start < 3; ++start) {
    Result<std::unique_ptr<SnapshotReloader>> r = s.Create();
    ASSERT_TRUE(r.ok()) << "start " << start << ": " << r.status().ToString();
    EXPECT_EQ(r.value()->current()->info().config_version, UINT64_MAX);
    EXPECT_EQ(r.value()->report().highest_version, UINT64_MAX);
  }
  // A lower version after it is a rollback, served from the last good file.
  ASSERT_TRUE(WriteSnapshotFile(Fleet(20, 3), Versioned(7), s.path).ok());
  Result<std::unique_ptr<SnapshotReloader>> r = s.Create();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()->current()->info().config_version, UINT64_MAX);
  EXPECT_TRUE(r.value()->report().serving_last_good);
}

// A record no verified file backs refuses nothing: BASE.good replaced by a
// file claiming a version above every push (its checksum forged, no key
// trusted it) is set aside at the next start, and the path's file served.
TEST(SnapshotState, AForgedLastGoodFileRefusesNothing) {
  StateFiles s("state_forged_good");
  SnapshotWriteOptions write = Versioned(5);
  ASSERT_NO_FATAL_FAILURE(s.SignWithATrustedKey(write));
  const Ring ring = Fleet(20, 0);
  ASSERT_TRUE(WriteSnapshotFile(ring, write, s.path).ok());
  ASSERT_TRUE(s.Create().ok());
  std::string forged = ReadAll(s.Record("good"));
  forged = testing::StoredAt<uint64_t>(forged, fmt::kOffConfigVersion, UINT64_MAX);
  testing::FixChecksum(forged);
  WriteAll(s.Record("good"), forged);
  write.config_version = 6;
  const Ring next = Fleet(20, 2);
  ASSERT_TRUE(WriteSnapshotFile(next, write, s.path).ok());
  Result<std::unique_ptr<SnapshotReloader>> r = s.Create();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r.value()->current()->info().config_version, 6u);
  EXPECT_EQ(r.value()->report().last_check, SnapshotCheck::kSignature)
      << r.value()->report().last_message;
  EXPECT_NE(r.value()->report().last_message.find("set aside"), std::string::npos);
  r.value().reset();
  EXPECT_EQ(ReadSnapshotInfo(s.Record("good")).value().config_version, 6u)
      << "the forged last good file was not replaced";
}

// ---- Verdicts only about bytes -------------------------------------------------

// The file is unreadable for a moment (a deploy tool fixing its mode): an
// I/O error, read again at the next look once readable, though its identity
// did not change (chmod changes no mtime). In a child that runs as an
// unprivileged user when the suite runs as root (root reads any mode).
TEST(SnapshotState, ATransientReadErrorIsNoVerdict) {
  const StateFiles s("state_eacces");
  ASSERT_TRUE(WriteSnapshotFile(Fleet(20, 0), Versioned(1), s.path).ok());
  const int code = InChild(20, [&]() -> int {
    if (geteuid() == 0) {
      if (chown(s.dir.c_str(), 65534, 65534) != 0 || chown(s.path.c_str(), 65534, 65534) != 0 ||
          setgid(65534) != 0 || setuid(65534) != 0) {
        return 2;
      }
    }
    Result<std::unique_ptr<SnapshotReloader>> r = s.Create();
    if (!r.ok()) return 3;
    const Ring v2 = Fleet(20, 5);
    if (!WriteSnapshotFile(v2, Versioned(2), s.path).ok()) return 4;
    if (chmod(s.path.c_str(), 0) != 0) return 5;
    const ReloadCandidate refused = r.value()->Check();
    if (refused.outcome != ReloadOutcome::kRefused || refused.check != SnapshotCheck::kIo) return 6;
    if (chmod(s.path.c_str(), 0644) != 0) return 7;
    if (!r.value()->Poll().ok()) return 8;
    return r.value()->current()->info().config_version == 2 ? 0 : 9;
  });
  EXPECT_EQ(code, 0) << "6 = not refused as io, 8/9 = not loaded once readable";
}

// ---- Expiry: one policy, at runtime and at a restart ----------------------------

TEST(SnapshotState, AnExpiredRingIsServedOnlyWhileNothingNewerPassesAndSaysSo) {
  const StateFiles s("state_expiry");
  const int64_t soon = static_cast<int64_t>(std::time(nullptr)) + 2;
  SnapshotWriteOptions write = Versioned(1);
  write.expires_unix_seconds = soon;
  ASSERT_TRUE(WriteSnapshotFile(Fleet(20, 0), write, s.path).ok());
  Result<std::unique_ptr<SnapshotReloader>> r = s.Create();
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.value()->report().serving_expired);
  EXPECT_EQ(r.value()->report().served_expires_unix_seconds, soon);
  while (std::time(nullptr) < soon) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(r.value()->report().serving_expired) << "a served ring expired without a signal";
  // A restart on that file (and BASE.good, the same file): served, flagged,
  // instead of failing.
  r.value().reset();
  Result<std::unique_ptr<SnapshotReloader>> restarted = s.Create();
  ASSERT_TRUE(restarted.ok()) << restarted.status().ToString();
  EXPECT_TRUE(restarted.value()->report().serving_expired);
  EXPECT_EQ(restarted.value()->current()->info().config_version, 1u);
  // A new file already past its expiry is refused while the ring served is
  // kept; a fresh one is served.
  write.config_version = 2;
  write.expires_unix_seconds = soon - 1;
  ASSERT_TRUE(WriteSnapshotFile(Fleet(20, 1), write, s.path).ok());
  EXPECT_EQ(CheckOf(restarted.value()->Poll()), "expired");
  write.config_version = 3;
  write.expires_unix_seconds = 0;
  ASSERT_TRUE(WriteSnapshotFile(Fleet(20, 2), write, s.path).ok());
  ASSERT_TRUE(restarted.value()->Poll().ok());
  EXPECT_FALSE(restarted.value()->report().serving_expired);
}

// ---- Instances that never collide -----------------------------------------------

// Two instances, one state directory, one upstream name, different files
// (and versions): 1.0 made the second refuse its file as a rollback and
// serve the first's last good file.
TEST(SnapshotState, TwoWatchedFilesOfOneNameKeepTheirOwnHistory) {
  const StateFiles a("state_instance_a", "http.cache.snapshot");
  StateFiles b("state_instance_b", "http.cache.snapshot");
  b.options.state_dir = a.dir;
  const Ring ring_a = Fleet(20, 0);
  const Ring ring_b = Fleet(24, 40);
  ASSERT_TRUE(WriteSnapshotFile(ring_a, Versioned(9), a.path).ok());
  ASSERT_TRUE(WriteSnapshotFile(ring_b, Versioned(3), b.path).ok());
  for (int start = 0; start < 2; ++start) {
    Result<std::unique_ptr<SnapshotReloader>> ra = a.Create();
    Result<std::unique_ptr<SnapshotReloader>> rb = b.Create();
    ASSERT_TRUE(ra.ok()) << ra.status().ToString();
    ASSERT_TRUE(rb.ok()) << rb.status().ToString();
    ExpectAnswersOf(ring_a, *ra.value()->ring(), "instance a", kProbes);
    ExpectAnswersOf(ring_b, *rb.value()->ring(), "instance b", kProbes);
    EXPECT_FALSE(rb.value()->report().serving_last_good);
    EXPECT_NE(ra.value()->report().state_file, rb.value()->report().state_file);
  }
}

// ---- The directory itself ---------------------------------------------------------

TEST(SnapshotState, ADirectoryOthersMayWriteOrALinkIsRefusedByName) {
  StateFiles s("state_dir_checks");
  ASSERT_TRUE(WriteSnapshotFile(Fleet(10, 0), Versioned(1), s.path).ok());
  chmod(s.dir.c_str(), 0777);
  Result<std::unique_ptr<SnapshotReloader>> open = s.Create();
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.status().message().find("writable by its group or others"), std::string::npos)
      << open.status().ToString();
  chmod(s.dir.c_str(), 0700);
  const std::string link = TempPath("state_dir_link");
  std::remove(link.c_str());
  ASSERT_EQ(symlink(s.dir.c_str(), link.c_str()), 0);
  s.options.state_dir = link;
  Result<std::unique_ptr<SnapshotReloader>> linked = s.Create();
  ASSERT_FALSE(linked.ok());
  EXPECT_NE(linked.status().message().find("symbolic link"), std::string::npos)
      << linked.status().ToString();
  std::remove(link.c_str());
  // A configuration test on a directory not made yet reads nothing, writes nothing.
  s.options.state_dir = s.dir + "/not_yet";
  s.options.write_state = false;
  ASSERT_TRUE(s.Create().ok());
  EXPECT_FALSE(std::filesystem::exists(s.options.state_dir));
}

// Temporary files of writes that never finished (a crash) are removed by
// the next writer; another base's are left alone.
TEST(SnapshotState, LeftoversOfCrashedWritesAreRemoved) {
  const StateFiles s("state_leftovers");
  WriteAll(s.Record("good") + ".tmp.0123456789abcdef01234567", std::string(4096, 'x'));
  WriteAll(s.dir + "/other.good.tmp.0123456789abcdef01234567", "y");
  ASSERT_TRUE(WriteSnapshotFile(Fleet(10, 0), Versioned(1), s.path).ok());
  ASSERT_TRUE(s.Create().ok());
  const std::vector<std::string> names = s.Listing();
  for (const std::string& name : names) {
    EXPECT_TRUE(name.find(".tmp.") == std::string::npos || name.rfind("other.", 0) == 0) << name;
  }
  EXPECT_TRUE(std::filesystem::exists(s.dir + "/other.good.tmp.0123456789abcdef01234567"));
}

// A root process never writes in a directory another user owns (nginx's
// master in its workers' directory): it serves, and the owner's processes
// write what it left.
TEST(SnapshotState, RootWritesNothingInADirectoryItDoesNotOwn) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (CI runs as root)";
  const StateFiles s("state_root");
  ASSERT_EQ(chown(s.dir.c_str(), 65534, 65534), 0);
  ASSERT_TRUE(WriteSnapshotFile(Fleet(20, 0), Versioned(1), s.path).ok());
  Result<std::unique_ptr<SnapshotReloader>> master = s.Create();
  ASSERT_TRUE(master.ok()) << master.status().ToString();
  EXPECT_TRUE(master.value()->report().state_error.ok())
      << master.value()->report().state_error.ToString();
  EXPECT_TRUE(s.Listing().empty()) << "root wrote " << s.Listing().front();
  // A worker forked from it, as the directory's owner, writes the last good file.
  EXPECT_EQ(InChild(20,
                    [&] {
                      if (setgid(65534) != 0 || setuid(65534) != 0) return 2;
                      (void)master.value()->Check();
                      return std::filesystem::exists(s.Record("good")) ? 0 : 3;
                    }),
            0);
  struct stat st {};
  ASSERT_EQ(stat(s.Record("good").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);
}

}  // namespace
}  // namespace chash
