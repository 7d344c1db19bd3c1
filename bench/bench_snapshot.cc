// Ring snapshots (include/chash/snapshot.h) against building the ring from
// its servers, in one binary and one run so that every comparison is a ratio
// measured side by side:
//
//   rings    16K points (pingora-v2, 100 x 10 x 16: the CI smoke), 20.5M
//            points (pingora-v2, 2,048 servers x weight 625 x multiple 16,
//            bench_chash's 20.5M ring) and, with --with_204m, 204.8M points
//            (pingora-v1, 2,048 x 625 x 160: the seeds' ring; 1.2 GB a file,
//            several GB for the run);
//   build    RingBuilder from the server list (every core);
//   write    SerializeSnapshot (bytes in memory, unsigned and signed) and
//            WriteSnapshotFile (temporary file, fsync, rename, fsync of the
//            directory);
//   load     LoadSnapshot: kSealed verified and signed (the default: a
//            sealed memory file read from the file, then every check), kMap
//            verified (XXH3-128 on), kMap unverified
//            (checksum off, every structural check on), kCopy verified and
//            unverified, kMap signed (a trusted key: the SHA-256 chunk tree
//            of format 1.1, hashed on the other threads during the load),
//            kMap with the points digest (SHA-256, 8 bytes a point); each
//            from a warm page cache (the file was just written or read), and
//            kMap verified from a cold one for this file only
//            (posix_fadvise DONTNEED evicts its clean pages without root;
//            counter resident_before says how much of the file was still
//            cached when the load started: on a VM the "disk" may itself be
//            the host's cache);
//   parts    what a load is made of, each alone over the same file: the
//            XXH3-128 pass, the digest a signature check adds (1.0's BLAKE2b;
//            1.1's SHA-256 chunk tree on one thread and on every thread),
//            and the search index rebuild (what a file without a stored
//            index costs per load, and index_bytes per process);
//   lookups  by hash (single and 1,024 a batch) and by 30-byte key on the
//            built ring (transparent huge pages), the same built on 4 KiB
//            pages, the mapped ring (page-cache pages) and the copied one;
//            and the first 1,024 lookups right after a load;
//   refuse   a file refused from its header: unsigned with a trusted key,
//            a 4 GiB hole over the size cap and under it (holes);
//   memory   in a child process: the peak resident growth (VmHWM) of a
//            build and of a load, and the memory the process then holds,
//            anonymous (its own), file-backed (the page cache's, shared) and
//            shared memory (a sealed copy, shareable by the host).
//
// Every benchmark checks the ring it times against the built ring before any
// timing (and the built ring against the reference continuum, up to 20.5M
// points): the same answers on 20,000 hashes, the ring's ends included, and
// on 65,536 keys (SkipWithError otherwise). Flags: --with_204m,
// --snapshot_dir=DIR (default: $TMPDIR or /tmp; the files are removed at
// exit). bench/snapshot_bench.sh runs it as the committed results were made.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "proc_memory.h"
#include "bench_util.h"
#include "builder/columns_builder.h"
#include "builder/parallel.h"
#include "chash/chash.h"
#include "chash/snapshot.h"
#include "layout/aligned_array.h"
#include "layout/columns.h"
#include "reference/reference_ring.h"
#include "simd/search.h"
#include "snapshot/format.h"

namespace chash::bench {
namespace {

using measure::ProcStatusKb;

namespace fmt = internal::snapshot;
using Clock = std::chrono::steady_clock;

// ---- Fixtures ------------------------------------------------------------------

struct RingSpec {
  const char* name;
  Flavor flavor;
  uint32_t nodes, weight, multiple;
  bool check_reference;  // also check the built ring against the reference
};

constexpr RingSpec kRingSpecs[] = {
    {"16K", Flavor::kPingoraV2, 100, 10, 16, true},
    {"20.5M", Flavor::kPingoraV2, 2048, 625, 16, true},
    {"204.8M-v1", Flavor::kPingoraV1, 2048, 625, 160, false},
};
constexpr size_t kFirstLarge = 1;  // rings from here on get fixed iteration counts
bool with_204m = false;
std::string snapshot_dir;

bool IsLarge(size_t ring) { return ring >= kFirstLarge; }
bool IsHuge(size_t ring) { return ring == 2; }

Result<Ring> BuildSpec(const RingSpec& spec) {
  return BuildNodes(spec.flavor, spec.multiple, spec.nodes, spec.weight);
}

SnapshotWriteOptions WriteOptions(const RingSpec& spec) {
  SnapshotWriteOptions write;
  write.config_version = 1;
  write.label = spec.name;
  return write;
}

constexpr size_t kQueryCount = size_t{1} << 20;
constexpr size_t kKeyCount = size_t{1} << 16;
constexpr size_t kKeyLength = 30;
constexpr size_t kCheckCount = 20000;
constexpr size_t kOpsPerIteration = 1024;

struct Fixture {
  const RingSpec* spec = nullptr;
  Ring ring;  // built from the servers, kept for the whole run
  std::unique_ptr<Ring> ring_small_pages;
  std::string path;         // unsigned snapshot of `ring`
  std::string signed_path;  // the same, signed with `key`
  SecretKey key;
  std::vector<uint32_t> hashes;  // lookup queries
  std::vector<uint32_t> check_hashes, check_expected;
  std::vector<std::string> keys;
  std::vector<std::string_view> key_views;
  std::vector<uint32_t> key_expected;
  std::string error;  // why the fixture is unusable, "" if it is fine
};

std::vector<std::string> files_to_remove;

void MakeFixture(Fixture& f, size_t index) {
  f.spec = &kRingSpecs[index];
  std::fprintf(stderr, "[fixture %s: building the ring, writing its snapshots...]\n",
               f.spec->name);
  Result<Ring> ring = BuildSpec(*f.spec);
  if (!ring.ok()) {
    f.error = "build: " + ring.status().ToString();
    return;
  }
  f.ring = std::move(ring).value();

  std::mt19937_64 rng(42 + index);
  f.hashes.resize(kQueryCount);
  for (uint32_t& h : f.hashes) h = static_cast<uint32_t>(rng());
  const PointCursor first = f.ring.Begin();
  const uint32_t first_hash = first.hash();
  PointCursor last = f.ring.WalkFromHash(0);
  for (uint64_t i = 1; i < f.ring.num_points(); ++i) last.Advance();  // O(n) once
  const uint32_t last_hash = last.hash();
  f.check_hashes = {0, 1, UINT32_MAX, first_hash, first_hash - 1, first_hash + 1,
                    last_hash, last_hash - 1, last_hash + 1};
  while (f.check_hashes.size() < kCheckCount) f.check_hashes.push_back(static_cast<uint32_t>(rng()));
  f.check_expected.resize(f.check_hashes.size());
  for (size_t i = 0; i < f.check_hashes.size(); ++i) {
    f.check_expected[i] = f.ring.FindNodeByHash(f.check_hashes[i]);
  }
  f.keys.resize(kKeyCount);
  for (std::string& key : f.keys) {
    key.resize(kKeyLength);
    for (char& c : key) c = static_cast<char>('!' + rng() % 94);
  }
  f.key_views.assign(f.keys.begin(), f.keys.end());
  for (const std::string& key : f.keys) f.key_expected.push_back(f.ring.FindNode(key));

  if (f.spec->check_reference) {
    Result<reference::ReferenceRing> reference =
        BuildReferenceNodes(f.spec->flavor, f.spec->multiple, f.spec->nodes, f.spec->weight);
    if (!reference.ok()) {
      f.error = "reference build failed";
      return;
    }
    for (size_t i = 0; i < f.check_hashes.size(); ++i) {
      if (reference.value().FindNodeByHash(f.check_hashes[i]) != f.check_expected[i]) {
        f.error = "the built ring differs from the reference at hash " +
                  std::to_string(f.check_hashes[i]);
        return;
      }
    }
    for (size_t i = 0; i < f.keys.size(); i += 7) {
      if (reference.value().FindNode(f.keys[i]) != f.key_expected[i]) {
        f.error = "the built ring differs from the reference on key " + f.keys[i];
        return;
      }
    }
  }

  Result<SecretKey> key = GenerateSecretKey();
  if (!key.ok()) {
    f.error = "keygen: " + key.status().ToString();
    return;
  }
  f.key = key.value();
  const std::string base = snapshot_dir + "/bench-snapshot-" + std::to_string(getpid()) + "-" +
                           std::to_string(index);
  f.path = base + ".chash";
  f.signed_path = base + "-signed.chash";
  files_to_remove.push_back(f.path);
  files_to_remove.push_back(f.signed_path);
  SnapshotWriteOptions write = WriteOptions(*f.spec);
  if (Status status = WriteSnapshotFile(f.ring, write, f.path); !status.ok()) {
    f.error = "write: " + status.ToString();
    return;
  }
  write.signing_key = f.key;
  if (Status status = WriteSnapshotFile(f.ring, write, f.signed_path); !status.ok()) {
    f.error = "write signed: " + status.ToString();
    return;
  }
}

Fixture& GetFixture(size_t index) {
  return MadeOnce<Fixture>(index, [index](Fixture& f) { MakeFixture(f, index); });
}

Fixture* Usable(benchmark::State& state, size_t ring) {
  Fixture& f = GetFixture(ring);
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return nullptr;
  }
  return &f;
}

// The same answers as the built ring on the check hashes (single and batch)
// and on every 7th key; the same size and node count.
bool CheckRing(benchmark::State& state, const Fixture& f, const Ring& ring) {
  if (ring.num_points() != f.ring.num_points() || ring.num_nodes() != f.ring.num_nodes()) {
    state.SkipWithError("the ring's size differs from the built ring's");
    return false;
  }
  std::vector<uint32_t> out(f.check_hashes.size());
  ring.FindNodesByHash(f.check_hashes, out);
  for (size_t i = 0; i < f.check_hashes.size(); ++i) {
    if (out[i] != f.check_expected[i] ||
        ring.FindNodeByHash(f.check_hashes[i]) != f.check_expected[i]) {
      state.SkipWithError(("wrong node at hash " + std::to_string(f.check_hashes[i])).c_str());
      return false;
    }
  }
  for (size_t i = 0; i < f.keys.size(); i += 7) {
    if (ring.FindNode(f.keys[i]) != f.key_expected[i]) {
      state.SkipWithError(("wrong node for key " + f.keys[i]).c_str());
      return false;
    }
  }
  return true;
}

void SetPoints(benchmark::State& state, const Fixture& f) {
  state.counters["points"] = static_cast<double>(f.ring.num_points());
  struct stat st {};
  if (stat(f.path.c_str(), &st) == 0) state.counters["file_bytes"] = static_cast<double>(st.st_size);
}

// ---- Load shapes ------------------------------------------------------------------

enum class Shape {
  kBuild,
  kMapVerified,
  kMapUnverified,
  kCopyVerified,
  kCopyUnverified,
  kMapSigned,
  kMapPointsDigest,
  kSealedVerified,  // the default load: a sealed copy, then every check
  kSealedSigned,
};

// Every shape, in the order the make/ and load/ rows are registered, with
// its name in the benchmarks' names.
constexpr std::pair<Shape, const char*> kShapes[] = {
    {Shape::kBuild, "build"},
    {Shape::kMapVerified, "map_verified"},
    {Shape::kMapUnverified, "map_unverified"},
    {Shape::kCopyVerified, "copy_verified"},
    {Shape::kCopyUnverified, "copy_unverified"},
    {Shape::kMapSigned, "map_signed"},
    {Shape::kMapPointsDigest, "map_points_digest"},
    {Shape::kSealedVerified, "sealed_verified"},
    {Shape::kSealedSigned, "sealed_signed"},
};

const char* ShapeName(Shape shape) {
  for (const auto& [s, name] : kShapes) {
    if (s == shape) return name;
  }
  return "?";
}

SnapshotLoadOptions OptionsFor(const Fixture& f, Shape shape) {
  SnapshotLoadOptions options;
  options.mode = shape == Shape::kCopyVerified || shape == Shape::kCopyUnverified
                     ? SnapshotLoadMode::kCopy
                 : shape == Shape::kSealedVerified || shape == Shape::kSealedSigned
                     ? SnapshotLoadMode::kSealed
                     : SnapshotLoadMode::kMap;
  options.verify_checksum = shape != Shape::kMapUnverified && shape != Shape::kCopyUnverified;
  if (shape == Shape::kMapSigned || shape == Shape::kSealedSigned) {
    options.trusted_keys = {f.key.public_key()};
  }
  options.verify_points_digest = shape == Shape::kMapPointsDigest;
  return options;
}

// A ring of the shape: built from the servers, or loaded from the fixture's
// file. `holder` keeps a loaded snapshot (and its mapping) alive.
Result<const Ring*> MakeRing(const Fixture& f, Shape shape, Ring& built,
                             std::shared_ptr<const RingSnapshot>& holder) {
  if (shape == Shape::kBuild) {
    Result<Ring> ring = BuildSpec(*f.spec);
    if (!ring.ok()) return ring.status();
    built = std::move(ring).value();
    return &built;
  }
  const std::string& path =
      shape == Shape::kMapSigned || shape == Shape::kSealedSigned ? f.signed_path : f.path;
  Result<std::shared_ptr<const RingSnapshot>> loaded = LoadSnapshot(path, OptionsFor(f, shape));
  if (!loaded.ok()) return loaded.status();
  holder = std::move(loaded).value();
  return &holder->ring();
}

void BM_Make(benchmark::State& state, size_t ring, Shape shape) {
  Fixture* f = Usable(state, ring);
  if (f == nullptr) return;
  {
    Ring built;
    std::shared_ptr<const RingSnapshot> holder;
    Result<const Ring*> made = MakeRing(*f, shape, built, holder);
    if (!made.ok()) return state.SkipWithError(made.status().ToString().c_str());
    if (!CheckRing(state, *f, *made.value())) return;
    if (holder && holder->mode() != OptionsFor(*f, shape).mode) {
      return state.SkipWithError("the load did not give the mode asked for");
    }
  }
  for (auto _ : state) {
    Ring built;
    std::shared_ptr<const RingSnapshot> holder;
    Result<const Ring*> made = MakeRing(*f, shape, built, holder);
    if (!made.ok()) return state.SkipWithError(made.status().ToString().c_str());
    benchmark::DoNotOptimize(made.value());
    // Released inside the timing: a reload releases the old ring too.
  }
  SetPoints(state, *f);
}

// A reloader's start (SnapshotReloader::Create, kSealed, a state
// directory) while another process of the host (here: another reloader of
// this process, which is what the record names) serves the file: `adopt`
// maps that reloader's sealed copy and runs every check on it; otherwise
// (share = false) it reads the file into a copy of its own and checks that.
// The difference is the file's read and the copy, not the verification
// (SECURITY.md: nothing another process says is trusted).
void BM_Reload(benchmark::State& state, size_t ring, bool adopt, bool sign) {
  Fixture* f = Usable(state, ring);
  if (f == nullptr) return;
  const std::string dir = snapshot_dir + "/chash-bench-state-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
  ReloadOptions options;
  options.state_dir = dir;
  options.name = "bench";
  if (sign) options.load.trusted_keys = {f->key.public_key()};
  const std::string& path = sign ? f->signed_path : f->path;
  Result<std::unique_ptr<SnapshotReloader>> publisher = SnapshotReloader::Create(path, options);
  if (!publisher.ok()) return state.SkipWithError(publisher.status().ToString().c_str());
  options.share = adopt;
  for (auto _ : state) {
    Result<std::unique_ptr<SnapshotReloader>> started = SnapshotReloader::Create(path, options);
    if (!started.ok()) return state.SkipWithError(started.status().ToString().c_str());
    state.PauseTiming();
    if (!CheckRing(state, *f, *started.value()->ring())) return;
    started.value().reset();
    state.ResumeTiming();
  }
  publisher.value().reset();
  std::filesystem::remove_all(dir);
  SetPoints(state, *f);
}

// kMap verified after evicting the file's pages from the page cache.
// mincore over a fresh, unpopulated mapping says how much was still cached.
double ResidentFraction(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st {};
  fstat(fd, &st);
  const size_t size = static_cast<size_t>(st.st_size);
  void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return -1;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((size + page - 1) / page);
  double fraction = -1;
  if (mincore(map, size, resident.data()) == 0) {
    size_t count = 0;
    for (const unsigned char r : resident) count += r & 1;
    fraction = static_cast<double>(count) / static_cast<double>(resident.size());
  }
  munmap(map, size);
  return fraction;
}

bool EvictFromPageCache(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = fdatasync(fd) == 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
  close(fd);
  return ok;
}

void BM_LoadCold(benchmark::State& state, size_t ring) {
  Fixture* f = Usable(state, ring);
  if (f == nullptr) return;
  double resident_sum = 0;
  for (auto _ : state) {
    state.PauseTiming();
    if (!EvictFromPageCache(f->path)) return state.SkipWithError("posix_fadvise failed");
    resident_sum += ResidentFraction(f->path);
    state.ResumeTiming();
    Result<std::shared_ptr<const RingSnapshot>> loaded = LoadSnapshot(f->path);
    if (!loaded.ok()) return state.SkipWithError(loaded.status().ToString().c_str());
    state.PauseTiming();
    if (!CheckRing(state, *f, loaded.value()->ring())) return;
    loaded = Status();  // release the mapping before the next eviction
    state.ResumeTiming();
  }
  state.counters["resident_before"] = resident_sum / static_cast<double>(state.iterations());
  SetPoints(state, *f);
}

// ---- Writing -------------------------------------------------------------------------

void BM_Serialize(benchmark::State& state, size_t ring, bool sign) {
  Fixture* f = Usable(state, ring);
  if (f == nullptr) return;
  SnapshotWriteOptions write = WriteOptions(*f->spec);
  if (sign) write.signing_key = f->key;
  {  // the bytes load back into the same ring
    Result<std::string> bytes = SerializeSnapshot(f->ring, write);
    if (!bytes.ok()) return state.SkipWithError(bytes.status().ToString().c_str());
    SnapshotLoadOptions options;
    if (sign) options.trusted_keys = {f->key.public_key()};
    Result<std::shared_ptr<const RingSnapshot>> loaded =
        LoadSnapshotFromBytes(bytes.value(), options);
    if (!loaded.ok()) return state.SkipWithError(loaded.status().ToString().c_str());
    if (!CheckRing(state, *f, loaded.value()->ring())) return;
  }
  for (auto _ : state) {
    Result<std::string> bytes = SerializeSnapshot(f->ring, write);
    if (!bytes.ok()) return state.SkipWithError(bytes.status().ToString().c_str());
    benchmark::DoNotOptimize(bytes.value().data());
  }
  SetPoints(state, *f);
}

void BM_WriteFile(benchmark::State& state, size_t ring) {
  Fixture* f = Usable(state, ring);
  if (f == nullptr) return;
  const std::string path = f->path + ".write";
  files_to_remove.push_back(path);
  const SnapshotWriteOptions write = WriteOptions(*f->spec);
  for (auto _ : state) {
    if (Status status = WriteSnapshotFile(f->ring, write, path); !status.ok()) {
      return state.SkipWithError(status.ToString().c_str());
    }
  }
  Result<std::shared_ptr<const RingSnapshot>> loaded = LoadSnapshot(path);
  if (!loaded.ok()) return state.SkipWithError(loaded.status().ToString().c_str());
  if (!CheckRing(state, *f, loaded.value()->ring())) return;
  loaded = Status();
  std::remove(path.c_str());
  SetPoints(state, *f);
}

// ---- Parts of a load ------------------------------------------------------------

// The fixture's file mapped read-only and populated, as LoadSnapshot maps it.
struct Mapped {
  const uint8_t* data = nullptr;
  size_t size = 0;
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;
  explicit Mapped(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (fstat(fd, &st) == 0) {
      void* map = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ,
                       MAP_SHARED | MAP_POPULATE, fd, 0);
      if (map != MAP_FAILED) {
        data = static_cast<const uint8_t*>(map);
        size = static_cast<size_t>(st.st_size);
      }
    }
    close(fd);
  }
  ~Mapped() {
    if (data != nullptr) munmap(const_cast<uint8_t*>(data), size);
  }
};

enum class Part { kXxh3, kBlake2b, kSha256Tree1, kSha256Tree, kIndex };

void BM_Part(benchmark::State& state, size_t ring, Part part) {
  Fixture* f = Usable(state, ring);
  if (f == nullptr) return;
  const Mapped file(part == Part::kIndex || part == Part::kXxh3 ? f->path : f->signed_path);
  if (file.data == nullptr) return state.SkipWithError("mmap failed");
  if (part == Part::kXxh3) {
    const uint8_t* checksum = file.data + file.size - 16;
    if (std::memcmp(fmt::Checksum(file.data, file.size - 16).data(), checksum, 16) != 0) {
      return state.SkipWithError("XXH3-128 differs from the trailer's");
    }
    for (auto _ : state) {
      benchmark::DoNotOptimize(fmt::Checksum(file.data, file.size - 16));
    }
  } else if (part != Part::kIndex) {
    // What a 1.0 signature hashes (BLAKE2b, one thread) and what a 1.1 one
    // hashes (the SHA-256 chunk tree, on one thread and on every thread).
    const uint16_t minor = part == Part::kBlake2b ? 0 : 1;
    const unsigned threads = part == Part::kSha256Tree ? internal::BuildThreads() : 1;
    fmt::SignedMessage message;
    for (auto _ : state) {
      if (!fmt::MakeSignedMessage(minor, file.data, file.size - fmt::kTrailerBytes, threads,
                                  message)) {
        return state.SkipWithError("out of memory hashing");
      }
      benchmark::DoNotOptimize(message);
    }
    state.counters["threads"] = threads;
  } else {
    const uint64_t n = f->ring.num_points();
    const auto section = [&](fmt::Section s) {
      return fmt::LoadU64(file.data + fmt::kOffSections + 16 * s);
    };
    const auto* hash = reinterpret_cast<const uint32_t*>(file.data + section(fmt::kHashColumn));
    const auto* node = reinterpret_cast<const uint16_t*>(file.data + section(fmt::kNodeColumn));
    uint64_t index_bytes = 0;
    bool checked = false;
    for (auto _ : state) {
      internal::Columns columns;
      columns.size = static_cast<uint32_t>(n);
      columns.hash.Borrow(hash, internal::HashColumnSlots(n));
      columns.node.Borrow(node, internal::NodeColumnSlots(n));
      if (!internal::BuildColumnsIndex(columns)) return state.SkipWithError("out of memory");
      index_bytes = columns.index.allocated_bytes();
      if (!checked) {  // the index finds what the built ring finds
        state.PauseTiming();
        const internal::SearchView view = columns.index.View(hash, node, columns.size);
        for (size_t i = 0; i < f->check_hashes.size(); ++i) {
          if (internal::DispatchFindNodeByHash(view, f->check_hashes[i]) != f->check_expected[i]) {
            return state.SkipWithError("the rebuilt index finds another slot");
          }
        }
        checked = true;
        state.ResumeTiming();
      }
    }
    state.counters["index_bytes"] = static_cast<double>(index_bytes);
    state.counters["index_bytes_per_point"] =
        static_cast<double>(index_bytes) / static_cast<double>(n);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * file.size));
  SetPoints(state, *f);
}

// ---- Lookups ------------------------------------------------------------------------

enum class RingKind { kBuilt, kBuilt4k, kMap, kCopy, kSealed };

// A ring of the kind, kept for the whole run (loads are kept by kind).
const Ring* RingOfKind(Fixture& f, RingKind kind, std::string& error) {
  static std::map<std::pair<const Fixture*, RingKind>, std::shared_ptr<const RingSnapshot>> loaded;
  switch (kind) {
    case RingKind::kBuilt:
      return &f.ring;
    case RingKind::kBuilt4k:
      if (!f.ring_small_pages) {
        internal::SetHugePagesEnabled(false);
        Result<Ring> ring = BuildSpec(*f.spec);
        internal::SetHugePagesEnabled(true);
        if (!ring.ok()) {
          error = ring.status().ToString();
          return nullptr;
        }
        f.ring_small_pages = std::make_unique<Ring>(std::move(ring).value());
      }
      return f.ring_small_pages.get();
    case RingKind::kMap:
    case RingKind::kCopy:
    case RingKind::kSealed: {
      auto& slot = loaded[{&f, kind}];
      if (!slot) {
        SnapshotLoadOptions options;
        options.mode = kind == RingKind::kMap    ? SnapshotLoadMode::kMap
                       : kind == RingKind::kCopy ? SnapshotLoadMode::kCopy
                                                 : SnapshotLoadMode::kSealed;
        Result<std::shared_ptr<const RingSnapshot>> snapshot = LoadSnapshot(f.path, options);
        if (!snapshot.ok()) {
          error = snapshot.status().ToString();
          return nullptr;
        }
        slot = std::move(snapshot).value();
      }
      return &slot->ring();
    }
  }
  return nullptr;
}

enum class LookupShape { kSingle, kBatch, kKey };

void BM_Lookup(benchmark::State& state, size_t ring, RingKind kind, LookupShape shape) {
  Fixture* f = Usable(state, ring);
  if (f == nullptr) return;
  std::string error;
  const Ring* r = RingOfKind(*f, kind, error);
  if (r == nullptr) return state.SkipWithError(error.c_str());
  if (!CheckRing(state, *f, *r)) return;
  state.SetLabel(std::string(ActiveTargetName()));
  size_t pos = 0;
  uint32_t sink = 0;
  std::vector<uint32_t> out(kOpsPerIteration);
  for (auto _ : state) {
    if (shape == LookupShape::kSingle) {
      const uint32_t* q = f->hashes.data() + pos;
      for (size_t i = 0; i < kOpsPerIteration; ++i) sink += r->FindNodeByHash(q[i]);
      pos = (pos + kOpsPerIteration) & (kQueryCount - 1);
    } else if (shape == LookupShape::kBatch) {
      r->FindNodesByHash(std::span<const uint32_t>(f->hashes.data() + pos, kOpsPerIteration), out);
      benchmark::DoNotOptimize(out.data());
      pos = (pos + kOpsPerIteration) & (kQueryCount - 1);
    } else {
      for (size_t i = 0; i < kOpsPerIteration; ++i) sink += r->FindNode(f->key_views[pos + i]);
      pos = (pos + kOpsPerIteration) & (kKeyCount - 1);
    }
  }
  benchmark::DoNotOptimize(sink);
  SetPerOp(state, kOpsPerIteration);
}

// The first 1,024 single lookups by hash right after a load (the load not
// timed): the columns are in the page cache and mapped (MAP_POPULATE), so
// these pay TLB and cache misses, not page faults.
void BM_FirstLookups(benchmark::State& state, size_t ring, Shape shape) {
  Fixture* f = Usable(state, ring);
  if (f == nullptr) return;
  size_t pos = 0;
  uint32_t sink = 0;
  double first_ns = 0;
  for (auto _ : state) {
    Ring built;
    std::shared_ptr<const RingSnapshot> holder;
    Result<const Ring*> made = MakeRing(*f, shape, built, holder);
    if (!made.ok()) return state.SkipWithError(made.status().ToString().c_str());
    const Ring& r = *made.value();
    const uint32_t* q = f->hashes.data() + pos;
    const auto start = Clock::now();
    sink += r.FindNodeByHash(q[0]);
    const auto after_first = Clock::now();
    for (size_t i = 1; i < kOpsPerIteration; ++i) sink += r.FindNodeByHash(q[i]);
    const auto end = Clock::now();
    state.SetIterationTime(std::chrono::duration<double>(end - start).count());
    first_ns += std::chrono::duration<double, std::nano>(after_first - start).count();
    pos = (pos + kOpsPerIteration) & (kQueryCount - 1);
    if (!CheckRing(state, *f, r)) return;
  }
  benchmark::DoNotOptimize(sink);
  state.counters["first_lookup_ns"] = first_ns / static_cast<double>(state.iterations());
  SetPerOp(state, kOpsPerIteration);
}

// ---- Memory (in a child process) ------------------------------------------------

struct MemoryReport {
  int64_t peak_growth = -1;  // VmHWM after - VmRSS before, bytes
  int64_t anon_held = 0;     // RssAnon while the ring is held - before
  int64_t file_held = 0;     // RssFile while the ring is held - before
  int64_t shmem_held = 0;    // RssShmem (a sealed copy's pages, shareable) - before
  double seconds = 0;
  uint32_t ok = 0;
};

// Makes the ring of `shape` in a forked child and reports what its resident
// set did. The child inherits the parent's pages; only growth is reported.
MemoryReport MeasureInChild(const Fixture& f, Shape shape) {
  MemoryReport report;
  int fds[2];
  if (pipe(fds) != 0) return report;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    MemoryReport child;
    const int64_t rss = static_cast<int64_t>(ProcStatusKb("VmRSS:"));
    const int64_t anon = static_cast<int64_t>(ProcStatusKb("RssAnon:"));
    const int64_t file = static_cast<int64_t>(ProcStatusKb("RssFile:"));
    const int64_t shmem = static_cast<int64_t>(ProcStatusKb("RssShmem:"));
    const auto start = Clock::now();
    Ring built;
    std::shared_ptr<const RingSnapshot> holder;
    Result<const Ring*> made = MakeRing(f, shape, built, holder);
    child.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (made.ok()) {
      child.ok = 1;
      child.peak_growth = (static_cast<int64_t>(ProcStatusKb("VmHWM:")) - rss) * 1024;
      child.anon_held = (static_cast<int64_t>(ProcStatusKb("RssAnon:")) - anon) * 1024;
      child.file_held = (static_cast<int64_t>(ProcStatusKb("RssFile:")) - file) * 1024;
      child.shmem_held = (static_cast<int64_t>(ProcStatusKb("RssShmem:")) - shmem) * 1024;
    }
    if (write(fds[1], &child, sizeof child) != sizeof child) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  if (pid < 0 || read(fds[0], &report, sizeof report) != sizeof report) report = MemoryReport();
  close(fds[0]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  return report;
}

void BM_Memory(benchmark::State& state, size_t ring, Shape shape) {
  Fixture* f = Usable(state, ring);
  if (f == nullptr) return;
  MemoryReport report;
  for (auto _ : state) {
    report = MeasureInChild(*f, shape);
    if (report.ok != 1) return state.SkipWithError("the child could not make the ring");
    state.SetIterationTime(report.seconds);
  }
  const double points = static_cast<double>(f->ring.num_points());
  state.counters["peak_rss_growth_bytes"] = static_cast<double>(report.peak_growth);
  state.counters["peak_rss_bytes_per_point"] = static_cast<double>(report.peak_growth) / points;
  state.counters["held_anon_bytes"] = static_cast<double>(report.anon_held);
  state.counters["held_file_bytes"] = static_cast<double>(report.file_held);
  state.counters["held_shmem_bytes"] = static_cast<double>(report.shmem_held);
  SetPoints(state, *f);
}

// ---- Refusals before the body --------------------------------------------------------

// What a file the loader refuses from its header costs: the fixture's
// unsigned file loaded with a trusted key (refused "signature"), and a file
// whose valid header and trailer lie around a 4 GiB hole (refused
// "max_size" under the default cap, "sparse" under an 8 GiB one). The
// refusal's check is verified before any timing; independent of the size.
enum class Refusal { kUnsigned, kSparseCapped, kSparse };

void BM_Refuse(benchmark::State& state, size_t ring, Refusal refusal) {
  Fixture* f = Usable(state, ring);
  if (f == nullptr) return;
  std::string path = f->path;
  SnapshotLoadOptions options;
  const char* expected = "signature";
  if (refusal == Refusal::kUnsigned) {
    options.trusted_keys = {f->key.public_key()};
  } else {
    path = snapshot_dir + "/chash_bench_sparse_" + std::to_string(getpid()) + ".chash";
    std::error_code error;
    std::filesystem::copy_file(f->path, path, std::filesystem::copy_options::overwrite_existing,
                               error);
    if (error || truncate(path.c_str(), int64_t{4} << 30) != 0) {
      return state.SkipWithError("cannot make the sparse file");
    }
    files_to_remove.push_back(path);
    expected = refusal == Refusal::kSparse ? "sparse" : "max_size";
    if (refusal == Refusal::kSparse) options.max_file_bytes = uint64_t{8} << 30;
  }
  Result<std::shared_ptr<const RingSnapshot>> first = LoadSnapshot(path, options);
  if (first.ok() || SnapshotCheckName(FailedSnapshotCheck(first.status())) != expected) {
    return state.SkipWithError(("not refused for " + std::string(expected) + ": " +
                                (first.ok() ? "loaded" : first.status().ToString()))
                                   .c_str());
  }
  for (auto _ : state) {
    Result<std::shared_ptr<const RingSnapshot>> refused = LoadSnapshot(path, options);
    benchmark::DoNotOptimize(refused.ok());
  }
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) state.counters["file_bytes"] = static_cast<double>(st.st_size);
}

// ---- Registration -----------------------------------------------------------------

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string line;
  std::getline(in, line);
  return line;
}

void RegisterAll() {
  const size_t rings = with_204m ? std::size(kRingSpecs) : std::size(kRingSpecs) - 1;
  const auto reg = [](const std::string& name, auto fn) {
    return benchmark::RegisterBenchmark(name.c_str(), fn);
  };
  // Slow steps of the large rings get fixed iteration counts: a 204.8M build
  // takes seconds even on a quiet machine.
  const auto slow = [](benchmark::internal::Benchmark* b, size_t ring, int large, int huge) {
    b->Unit(benchmark::kMillisecond)->UseRealTime();
    if (IsHuge(ring)) {
      b->Iterations(huge);
    } else if (IsLarge(ring)) {
      b->Iterations(large);
    }
    return b;
  };
  for (size_t ring = 0; ring < rings; ++ring) {
    const std::string r = kRingSpecs[ring].name;
    for (const auto& [shape, name] : kShapes) {
      const int large = shape == Shape::kBuild || shape == Shape::kMapPointsDigest ? 5 : 20;
      const int huge = shape == Shape::kBuild || shape == Shape::kMapPointsDigest ? 2 : 5;
      slow(reg(std::string(shape == Shape::kBuild ? "make/" : "load/") + name + "/" + r,
               // An init-capture: clang 14 cannot capture structured bindings.
               [ring, shape = shape](benchmark::State& s) { BM_Make(s, ring, shape); }),
           ring, large, huge);
    }
    slow(reg("load/map_verified_cold/" + r, [ring](benchmark::State& s) { BM_LoadCold(s, ring); }),
         ring, 5, 3);
    for (const bool sign : {false, true}) {
      for (const bool adopt : {true, false}) {
        slow(reg(std::string("reload/") + (adopt ? "adopt" : "own_copy") +
                     (sign ? "_signed/" : "_verified/") + r,
                 [ring, adopt, sign](benchmark::State& s) { BM_Reload(s, ring, adopt, sign); }),
             ring, 20, 5);
      }
    }
    reg("refuse/unsigned_with_trusted_key/" + r,
        [ring](benchmark::State& s) { BM_Refuse(s, ring, Refusal::kUnsigned); })
        ->Unit(benchmark::kMicrosecond);
    if (ring == 0) {
      reg("refuse/sparse_4g_over_the_cap",
          [](benchmark::State& s) { BM_Refuse(s, 0, Refusal::kSparseCapped); })
          ->Unit(benchmark::kMicrosecond);
      reg("refuse/sparse_4g_holes", [](benchmark::State& s) { BM_Refuse(s, 0, Refusal::kSparse); })
          ->Unit(benchmark::kMicrosecond);
    }
    slow(reg("write/serialize/" + r, [ring](benchmark::State& s) { BM_Serialize(s, ring, false); }),
         ring, 5, 2);
    slow(reg("write/serialize_signed/" + r,
             [ring](benchmark::State& s) { BM_Serialize(s, ring, true); }),
         ring, 5, 2);
    slow(reg("write/file_fsync/" + r, [ring](benchmark::State& s) { BM_WriteFile(s, ring); }),
         ring, 5, 2);
    for (const auto& [part, name] : {std::pair{Part::kXxh3, "xxh3_128"},
                                     std::pair{Part::kBlake2b, "blake2b_256"},
                                     std::pair{Part::kSha256Tree1, "sha256_tree_1thread"},
                                     std::pair{Part::kSha256Tree, "sha256_tree"},
                                     std::pair{Part::kIndex, "index_rebuild"}}) {
      slow(reg(std::string("part/") + name + "/" + r,
               // An init-capture: clang 14 cannot capture structured bindings.
               [ring, part = part](benchmark::State& s) { BM_Part(s, ring, part); }),
           ring, 20, 5);
    }
    // Before the lookups: their rings (4 KiB pages, copied) stay for the run
    // and would be inherited by the children.
    for (const Shape shape :
         {Shape::kBuild, Shape::kMapVerified, Shape::kCopyVerified, Shape::kSealedVerified}) {
      reg(std::string("memory/") + ShapeName(shape) + "/" + r,
          [ring, shape](benchmark::State& s) { BM_Memory(s, ring, shape); })
          ->Unit(benchmark::kMillisecond)
          ->UseManualTime()
          ->Iterations(1);
    }
    for (const auto& [kind, kind_name] : {std::pair{RingKind::kBuilt, "built"},
                                          std::pair{RingKind::kBuilt4k, "built_4k_pages"},
                                          std::pair{RingKind::kMap, "map"},
                                          std::pair{RingKind::kCopy, "copy"},
                                          std::pair{RingKind::kSealed, "sealed"}}) {
      for (const auto& [shape, name] : {std::pair{LookupShape::kSingle, "single"},
                                        std::pair{LookupShape::kBatch, "batch1024"},
                                        std::pair{LookupShape::kKey, "key"}}) {
        reg(std::string("lookup/") + name + "/" + kind_name + "/" + r,
            [ring, kind = kind, shape = shape](benchmark::State& s) {
              BM_Lookup(s, ring, kind, shape);
            })
            ->Unit(benchmark::kNanosecond);
      }
    }
    for (const Shape shape : {Shape::kMapVerified, Shape::kCopyVerified}) {
      reg(std::string("first_lookups/") + ShapeName(shape) + "/" + r,
          [ring, shape](benchmark::State& s) { BM_FirstLookups(s, ring, shape); })
          ->Unit(benchmark::kMicrosecond)
          ->UseManualTime()
          ->Iterations(IsHuge(ring) ? 5 : IsLarge(ring) ? 20 : 200);
    }
  }
}

}  // namespace
}  // namespace chash::bench

int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--with_204m") {
      chash::bench::with_204m = true;
    } else if (arg.rfind("--snapshot_dir=", 0) == 0) {
      chash::bench::snapshot_dir = arg.substr(std::strlen("--snapshot_dir="));
    } else {
      args.push_back(argv[i]);
    }
  }
  if (chash::bench::snapshot_dir.empty()) {
    std::error_code error;
    chash::bench::snapshot_dir = std::filesystem::temp_directory_path(error).string();
    if (error) chash::bench::snapshot_dir = "/tmp";
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  benchmark::AddCustomContext("chash_target", std::string(chash::ActiveTargetName()));
  benchmark::AddCustomContext("loadavg_at_start", chash::bench::LoadAverage());
  benchmark::AddCustomContext("snapshot_dir", chash::bench::snapshot_dir);
  benchmark::AddCustomContext(
      "page_cache", "warm (each file written or read just before) except load/*_cold/*");
  chash::bench::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (const std::string& path : chash::bench::files_to_remove) std::remove(path.c_str());
  std::fprintf(stderr, "[load average at the end: %s]\n", chash::bench::LoadAverage().c_str());
  return 0;
}
