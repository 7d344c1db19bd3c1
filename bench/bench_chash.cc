// chash against the baselines its users would otherwise have, in one binary
// and one run so that every comparison is a ratio measured side by side:
//
//   rings   pingora-v2 rings of 1.6K, 16K, 160K, 1.6M and 20.5M points
//           (204.8M with --with_204m: 1.2 GB of columns, several GB of
//           baselines), built once per size and kept for the whole run;
//   chash   lookups by hash: single (one call per uniformly random hash),
//           dependent (each hash depends on the previous answer), batches of
//           8, 64 and 1024; key to node on 30-byte keys, single and 1024 a
//           batch; every Highway target this CPU supports (ForceTarget);
//           with and without huge pages for the large rings;
//   baselines  std::lower_bound on the sorted hash column; pingora-ketama's
//           layout (8-byte points, Rust's binary_search_by) and key path
//           (table CRC32); nginx's (16-byte points with a server pointer,
//           its branchy search, byte-table CRC32); zlib's crc32(); the memory
//           floor: two random cache lines per lookup over a buffer of the
//           ring's column bytes, 16 loads in flight;
//   crc32   every implementation on 30-byte keys and by length;
//   build   RingBuilder vs a std::sort build of the same points, time and
//           peak resident memory per generated point.
//
// Every benchmark checks its answers against the reference continuum
// (tests/reference) before it is timed, and fails (SkipWithError) on any
// difference. Times are reported per lookup in the counter ns_per_op.
#include <benchmark/benchmark.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "proc_memory.h"
#include "builder/columns_builder.h"
#include "builder/parallel.h"
#include "bench_util.h"
#include "chash/chash.h"
#include "cold_lookups.h"
#include "dispatch_control.h"
#include "hash/crc32_internal.h"
#include "layout/aligned_array.h"
#include "reference/reference_ring.h"

namespace chash::bench {
namespace {

using measure::ProcStatusKb;

// ---- Fixtures ------------------------------------------------------------------

struct RingSpec {
  const char* name;
  uint32_t nodes, weight, multiple;
};

// pingora-v2 rings; points = nodes x weight x multiple.
constexpr RingSpec kRingSpecs[] = {
    {"1.6K", 10, 10, 16},      {"16K", 100, 10, 16},      {"160K", 1000, 10, 16},
    {"1.6M", 1000, 100, 16},   {"20.5M", 2048, 625, 16},  {"204.8M", 2048, 625, 160},
};
constexpr size_t kLargeRings = 4;  // index of the first ring that outgrows the caches
bool with_204m = false;

Result<Ring> BuildSpec(const RingSpec& spec) {
  return BuildNodes(Flavor::kPingoraV2, spec.multiple, spec.nodes, spec.weight);
}

struct PingoraPoint {  // pingora-ketama v1 Point: node index and hash, 8 bytes
  uint32_t node;
  uint32_t hash;
};
struct NginxPoint {  // ngx_http_upstream_chash_point_t: 16 bytes on 64-bit
  uint32_t hash;
  const uint32_t* server;
};

constexpr size_t kQueryCount = size_t{1} << 20;
constexpr size_t kKeyCount = size_t{1} << 16;
constexpr size_t kKeyLength = 30;
constexpr size_t kCheckCount = 20000;

struct Fixture {
  const RingSpec* spec = nullptr;
  Ring ring;
  std::unique_ptr<Ring> ring_small_pages;  // built on first use
  uint64_t points = 0;
  // Baselines, made from the reference's points (not from chash's columns),
  // in the same memory as chash's columns: AlignedArray, 64-byte aligned,
  // and 2 MiB-aligned transparent huge pages from 4 MiB up.
  internal::AlignedArray<uint32_t> sorted_hash;
  internal::AlignedArray<uint16_t> sorted_node;
  internal::AlignedArray<PingoraPoint> pingora;
  internal::AlignedArray<NginxPoint> nginx;
  std::vector<uint32_t> node_ids;  // what an nginx server pointer points at
  internal::AlignedArray<uint8_t> floor_buffer;
  // Queries and the reference's answers.
  std::vector<uint32_t> hashes;
  std::vector<uint32_t> check_hashes, check_expected;
  std::vector<std::string> keys;
  std::vector<std::string_view> key_views;
  std::vector<uint32_t> key_expected;
};

void MakeFixture(Fixture& f, size_t index) {
  f.spec = &kRingSpecs[index];
  std::fprintf(stderr, "[fixture %s: building ring and baselines...]\n", f.spec->name);
  Result<Ring> ring = BuildSpec(*f.spec);
  if (!ring.ok()) {
    std::fprintf(stderr, "ring build failed: %s\n", ring.status().ToString().c_str());
    std::abort();
  }
  f.ring = std::move(ring).value();
  f.points = f.ring.num_points();

  Result<reference::ReferenceRing> built =
      BuildReferenceNodes(Flavor::kPingoraV2, f.spec->multiple, f.spec->nodes, f.spec->weight);
  if (!built.ok()) std::abort();
  const reference::ReferenceRing& reference = built.value();
  const auto& points = reference.points();

  f.node_ids.resize(f.spec->nodes);
  for (uint32_t i = 0; i < f.spec->nodes; ++i) f.node_ids[i] = i;
  if (!f.sorted_hash.Allocate(points.size()) || !f.sorted_node.Allocate(points.size()) ||
      !f.pingora.Allocate(points.size()) || !f.nginx.Allocate(points.size())) {
    std::abort();
  }
  for (size_t i = 0; i < points.size(); ++i) {
    const reference::Point& p = points[i];
    f.sorted_hash[i] = p.hash;
    f.sorted_node[i] = static_cast<uint16_t>(p.node);
    f.pingora[i] = {p.node, p.hash};
    f.nginx[i] = {p.hash, &f.node_ids[p.node]};
  }
  const size_t floor_bytes = f.ring.memory_usage().column_bytes;
  if (!f.floor_buffer.Allocate(floor_bytes)) std::abort();
  std::memset(f.floor_buffer.data(), 1, floor_bytes);

  std::mt19937_64 rng(42 + index);
  f.hashes.resize(kQueryCount);
  for (uint32_t& h : f.hashes) h = static_cast<uint32_t>(rng());
  f.check_hashes = {0, 1, UINT32_MAX, points.front().hash, points.back().hash,
                    points.back().hash + 1, points.front().hash - 1};
  while (f.check_hashes.size() < kCheckCount) f.check_hashes.push_back(static_cast<uint32_t>(rng()));
  for (const uint32_t h : f.check_hashes) f.check_expected.push_back(reference.FindNodeByHash(h));

  f.keys.resize(kKeyCount);
  for (std::string& key : f.keys) {
    key.resize(kKeyLength);
    for (char& c : key) c = static_cast<char>('!' + rng() % 94);
  }
  f.key_views.assign(f.keys.begin(), f.keys.end());
  for (const std::string& key : f.keys) f.key_expected.push_back(reference.FindNode(key));
}

Fixture& GetFixture(size_t index) {
  return MadeOnce<Fixture>(index, [index](Fixture& f) { MakeFixture(f, index); });
}

const Ring& SmallPagesRing(Fixture& f) {
  if (!f.ring_small_pages) {
    internal::SetHugePagesEnabled(false);
    Result<Ring> ring = BuildSpec(*f.spec);
    internal::SetHugePagesEnabled(true);
    if (!ring.ok()) std::abort();
    f.ring_small_pages = std::make_unique<Ring>(std::move(ring).value());
  }
  return *f.ring_small_pages;
}

// ---- Baseline lookups --------------------------------------------------------------

inline uint32_t LowerBoundNode(const Fixture& f, uint32_t hash) {
  const uint32_t* begin = f.sorted_hash.data();
  const size_t n = f.sorted_hash.size();
  const size_t i = std::lower_bound(begin, begin + n, hash) - begin;
  return f.sorted_node[i == n ? 0 : i];
}

// The batched baseline a good engineer would write over the same sorted
// column: a group of queries descends together with a branchless binary
// search, each query's next probe prefetched, so a group's misses overlap as
// chash's groups' do. lower_bound index = base + (*base < x) once one
// candidate is left; n wraps to 0.
template <size_t kGroup>
inline void BranchlessGroup(const uint32_t* a, const uint16_t* node, size_t n,
                            const uint32_t* x, uint32_t* out) {
  const uint32_t* base[kGroup];
  for (size_t j = 0; j < kGroup; ++j) base[j] = a;
  size_t len = n;
  while (len > 1) {
    const size_t half = len / 2;
    len -= half;
    const size_t next = len / 2;  // the next probe is base + next - 1 or base + half + next - 1
    for (size_t j = 0; j < kGroup; ++j) {
      base[j] += (base[j][half - 1] < x[j]) * half;  // no branch to mispredict
      __builtin_prefetch(base[j] + (next > 0 ? next - 1 : 0));
    }
  }
  for (size_t j = 0; j < kGroup; ++j) {
    const size_t i = static_cast<size_t>(base[j] - a) + (*base[j] < x[j]);
    out[j] = node[i == n ? 0 : i];
  }
}

constexpr size_t kBaselineGroup = 32;

[[gnu::noinline]] void BranchlessBatch(const Fixture& f, const uint32_t* x, size_t count, uint32_t* out) {
  const uint32_t* a = f.sorted_hash.data();
  const uint16_t* node = f.sorted_node.data();
  const size_t n = f.sorted_hash.size();
  size_t i = 0;
  for (; i + kBaselineGroup <= count; i += kBaselineGroup) {
    BranchlessGroup<kBaselineGroup>(a, node, n, x + i, out + i);
  }
  for (; i < count; ++i) {
    const uint32_t* b = a;
    for (size_t len = n; len > 1;) {
      const size_t half = len / 2;
      b += (b[half - 1] < x[i]) * half;
      len -= half;
    }
    const size_t slot = static_cast<size_t>(b - a) + (*b < x[i]);
    out[i] = node[slot == n ? 0 : slot];
  }
}

// pingora-ketama: ring.binary_search_by(|p| p.hash.cmp(&hash)) (Rust's std
// implementation), Ok(i) | Err(i) => i, i == len wraps to 0.
inline uint32_t PingoraNode(const Fixture& f, uint32_t hash) {
  const PingoraPoint* ring = f.pingora.data();
  size_t size = f.pingora.size(), left = 0, right = size;
  size_t index = 0;
  bool found = false;
  while (left < right) {
    const size_t mid = left + size / 2;
    const uint32_t h = ring[mid].hash;
    if (h == hash) {
      index = mid;
      found = true;
      break;
    }
    if (h < hash) {
      left = mid + 1;
    } else {
      right = mid;
    }
    size = right - left;
  }
  if (!found) index = left;
  if (index == f.pingora.size()) index = 0;
  return ring[index].node;
}

// crc32fast below 128 bytes runs a table path; chash's slice-by-8 stands in.
inline uint32_t TableCrc32(std::string_view key) {
  return ~internal::Crc32UpdateRaw(0xFFFFFFFFu, reinterpret_cast<const uint8_t*>(key.data()),
                                   key.size());
}

// nginx ngx_crc32_long: one 256-entry table lookup per byte.
inline uint32_t ByteTableCrc32(std::string_view key) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const char c : key) {
    crc = internal::kCrc32Tables[0][(crc ^ static_cast<uint8_t>(c)) & 0xFF] ^ (crc >> 8);
  }
  return ~crc;
}

// ngx_http_upstream_find_chash_point, then point[i % number].server.
inline uint32_t NginxNode(const Fixture& f, uint32_t hash) {
  const NginxPoint* point = f.nginx.data();
  size_t i = 0, j = f.nginx.size();
  while (i < j) {
    const size_t k = (i + j) / 2;
    if (hash > point[k].hash) {
      i = k + 1;
    } else if (hash < point[k].hash) {
      j = k;
    } else {
      i = k;
      break;
    }
  }
  return *point[i % f.nginx.size()].server;
}

// ---- Benchmark plumbing ----------------------------------------------------------

// Checks `lookup` on the fixture's check hashes against the reference.
bool CheckByHash(benchmark::State& state, const Fixture& f,
                 const std::function<uint32_t(uint32_t)>& lookup) {
  for (size_t i = 0; i < f.check_hashes.size(); ++i) {
    if (lookup(f.check_hashes[i]) != f.check_expected[i]) {
      state.SkipWithError(("wrong node for hash " + std::to_string(f.check_hashes[i])).c_str());
      return false;
    }
  }
  return true;
}

bool CheckBatchByHash(benchmark::State& state, const Fixture& f, const Ring& ring) {
  std::vector<uint32_t> out(f.check_hashes.size());
  ring.FindNodesByHash(f.check_hashes, out);
  if (out != f.check_expected) {
    state.SkipWithError("batch answers differ from the reference");
    return false;
  }
  return true;
}

bool CheckByKey(benchmark::State& state, const Fixture& f,
                const std::function<uint32_t(std::string_view)>& lookup) {
  for (size_t i = 0; i < f.keys.size(); i += 7) {
    if (lookup(f.keys[i]) != f.key_expected[i]) {
      state.SkipWithError(("wrong node for key " + f.keys[i]).c_str());
      return false;
    }
  }
  return true;
}

// Forces a Highway target for one benchmark; the label names it and the
// CRC-32 implementation.
class CrcTargetScope : public TargetScope {
 public:
  CrcTargetScope(benchmark::State& state, const std::string& target)
      : TargetScope(state, target, std::string(" crc=") + internal::Crc32ImplementationName()) {}
};

constexpr size_t kOpsPerIteration = 1024;

// ---- chash lookups -----------------------------------------------------------------

void BM_ByHashSingle(benchmark::State& state, size_t ring, std::string target, bool small_pages) {
  Fixture& f = GetFixture(ring);
  const CrcTargetScope scope(state, target);
  const Ring& r = small_pages ? SmallPagesRing(f) : f.ring;
  const auto find = [&r](uint32_t h) { return r.FindNodeByHash(h); };
  if (!scope.ok() || !CheckByHash(state, f, find)) return;
  TimeEach(state, f.hashes, kOpsPerIteration, find);
}

void BM_ByHashDependent(benchmark::State& state, size_t ring, std::string target) {
  Fixture& f = GetFixture(ring);
  const CrcTargetScope scope(state, target);
  if (!scope.ok() || !CheckByHash(state, f, [&](uint32_t h) { return f.ring.FindNodeByHash(h); })) {
    return;
  }
  size_t pos = 0;
  uint32_t previous = 0;
  for (auto _ : state) {
    const uint32_t* q = f.hashes.data() + pos;
    for (size_t i = 0; i < kOpsPerIteration; ++i) previous = f.ring.FindNodeByHash(q[i] ^ previous);
    pos = (pos + kOpsPerIteration) & (kQueryCount - 1);
  }
  benchmark::DoNotOptimize(previous);
  SetPerOp(state, kOpsPerIteration);
}

void BM_ByHashBatch(benchmark::State& state, size_t ring, std::string target, size_t batch,
                    bool small_pages) {
  Fixture& f = GetFixture(ring);
  const CrcTargetScope scope(state, target);
  const Ring& r = small_pages ? SmallPagesRing(f) : f.ring;
  if (!scope.ok() || !CheckBatchByHash(state, f, r)) return;
  std::vector<uint32_t> out(batch);
  size_t pos = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < kOpsPerIteration; i += batch) {
      r.FindNodesByHash(std::span(f.hashes).subspan(pos + i, batch), out);
      benchmark::DoNotOptimize(out.data());
    }
    pos = (pos + kOpsPerIteration) & (kQueryCount - 1);
  }
  SetPerOp(state, kOpsPerIteration);
}

// FindNode (the CRC fused into the search kernel), or `unfused`: Crc32 then
// FindNodeByHash, two calls, as FindNode was before the fused kernel.
void BM_KeySingle(benchmark::State& state, size_t ring, std::string target, bool unfused = false) {
  Fixture& f = GetFixture(ring);
  const CrcTargetScope scope(state, target);
  const auto fused = [&f](std::string_view k) { return f.ring.FindNode(k); };
  const auto two_calls = [&f](std::string_view k) { return f.ring.FindNodeByHash(Crc32(k)); };
  if (!scope.ok()) return;
  if (unfused) {
    if (CheckByKey(state, f, two_calls)) TimeEach(state, f.key_views, kOpsPerIteration, two_calls);
  } else {
    if (CheckByKey(state, f, fused)) TimeEach(state, f.key_views, kOpsPerIteration, fused);
  }
}

void BM_KeyBatch(benchmark::State& state, size_t ring, std::string target) {
  Fixture& f = GetFixture(ring);
  const CrcTargetScope scope(state, target);
  if (!scope.ok()) return;
  TimeBatches(state, f.key_views, f.key_expected, kOpsPerIteration,
              "batch key answers differ from the reference",
              [&f](std::span<const std::string_view> keys, std::span<uint32_t> out) {
                f.ring.FindNodes(keys, out);
              });
}

// ---- Baselines ---------------------------------------------------------------------------

// A baseline's lookup by hash or by key (a template argument: called, and
// inlined, in the timed loop): checked against the reference, then timed.
template <uint32_t (*kLookup)(const Fixture&, uint32_t)>
void BM_BaselineByHash(benchmark::State& state, size_t ring) {
  const Fixture& f = GetFixture(ring);
  const auto find = [&f](uint32_t h) { return kLookup(f, h); };
  if (CheckByHash(state, f, find)) TimeEach(state, f.hashes, kOpsPerIteration, find);
}

template <uint32_t (*kLookup)(const Fixture&, std::string_view)>
void BM_BaselineByKey(benchmark::State& state, size_t ring) {
  const Fixture& f = GetFixture(ring);
  const auto find = [&f](std::string_view k) { return kLookup(f, k); };
  if (CheckByKey(state, f, find)) TimeEach(state, f.key_views, kOpsPerIteration, find);
}

void BM_LowerBoundDependent(benchmark::State& state, size_t ring) {
  const Fixture& f = GetFixture(ring);
  if (!CheckByHash(state, f, [&](uint32_t h) { return LowerBoundNode(f, h); })) return;
  size_t pos = 0;
  uint32_t previous = 0;
  for (auto _ : state) {
    const uint32_t* q = f.hashes.data() + pos;
    for (size_t i = 0; i < kOpsPerIteration; ++i) previous = LowerBoundNode(f, q[i] ^ previous);
    pos = (pos + kOpsPerIteration) & (kQueryCount - 1);
  }
  benchmark::DoNotOptimize(previous);
  SetPerOp(state, kOpsPerIteration);
}

// pingora-ketama's and nginx's key paths: their CRC-32, then their search.
uint32_t PingoraKeyNode(const Fixture& f, std::string_view key) {
  return PingoraNode(f, TableCrc32(key));
}
uint32_t NginxKeyNode(const Fixture& f, std::string_view key) {
  return NginxNode(f, ByteTableCrc32(key));
}

// Two random cache lines per lookup over the ring's column bytes, eight
// lookups (16 loads) issued back to back: what memory-level parallelism
// alone allows, with nothing to search.
void BM_MemoryFloor(benchmark::State& state, size_t ring, bool small_pages) {
  Fixture& f = GetFixture(ring);
  internal::AlignedArray<uint8_t> small;
  const uint8_t* buffer = f.floor_buffer.data();
  size_t bytes = f.floor_buffer.size();
  if (small_pages) {
    internal::SetHugePagesEnabled(false);
    const bool ok = small.Allocate(bytes);
    internal::SetHugePagesEnabled(true);
    if (!ok) return state.SkipWithError("out of memory");
    std::memset(small.data(), 1, bytes);
    buffer = small.data();
  }
  const uint64_t lines = bytes / 64;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  uint64_t sink = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < kOpsPerIteration; i += 8) {
      uint64_t sum = 0;
      for (int load = 0; load < 16; ++load) {
        NextXorShift(x);
        const uint64_t line = static_cast<uint64_t>((static_cast<unsigned __int128>(x >> 32) * lines) >> 32);
        sum += buffer[line * 64];
      }
      sink += sum;
    }
  }
  benchmark::DoNotOptimize(sink);
  SetPerOp(state, kOpsPerIteration);
}

// One random cache line per lookup over the ring's column bytes, each address
// depending on the value loaded before: the latency of one miss, which a
// dependent lookup (chash/dependent) is compared with.
void BM_DependentLine(benchmark::State& state, size_t ring) {
  Fixture& f = GetFixture(ring);
  const uint8_t* buffer = f.floor_buffer.data();
  const uint64_t lines = f.floor_buffer.size() / 64;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (auto _ : state) {
    for (size_t i = 0; i < kOpsPerIteration; ++i) {
      NextXorShift(x);
      x ^= buffer[((x >> 32) * lines >> 32) * 64];
    }
  }
  benchmark::DoNotOptimize(x);
  SetPerOp(state, kOpsPerIteration);
}

// The like-for-like batch baseline: branchless binary search over the sorted
// column (huge pages), groups of 32 with prefetch (BranchlessBatch).
void BM_BranchlessBatch(benchmark::State& state, size_t ring) {
  const Fixture& f = GetFixture(ring);
  std::vector<uint32_t> out(f.check_hashes.size());
  BranchlessBatch(f, f.check_hashes.data(), f.check_hashes.size(), out.data());
  if (out != f.check_expected) return state.SkipWithError("branchless batch differs");
  out.resize(kOpsPerIteration);
  size_t pos = 0;
  for (auto _ : state) {
    BranchlessBatch(f, f.hashes.data() + pos, kOpsPerIteration, out.data());
    benchmark::DoNotOptimize(out.data());
    pos = (pos + kOpsPerIteration) & (kQueryCount - 1);
  }
  SetPerOp(state, kOpsPerIteration);
}

// Keys in batches the baseline way: pingora's table CRC32 for each key, then
// the branchless batch above.
void BM_BaselineKeyBatch(benchmark::State& state, size_t ring) {
  const Fixture& f = GetFixture(ring);
  std::vector<uint32_t> hashes(kOpsPerIteration), out(kOpsPerIteration);
  const auto run = [&](size_t pos) {
    for (size_t i = 0; i < kOpsPerIteration; ++i) hashes[i] = TableCrc32(f.key_views[pos + i]);
    BranchlessBatch(f, hashes.data(), kOpsPerIteration, out.data());
  };
  for (size_t pos = 0; pos < kKeyCount; pos += kOpsPerIteration) {
    run(pos);
    for (size_t i = 0; i < kOpsPerIteration; ++i) {
      if (out[i] != f.key_expected[pos + i]) return state.SkipWithError("key batch differs");
    }
  }
  size_t pos = 0;
  for (auto _ : state) {
    run(pos);
    benchmark::DoNotOptimize(out.data());
    pos = (pos + kOpsPerIteration) & (kKeyCount - 1);
  }
  SetPerOp(state, kOpsPerIteration);
}

// ---- Layout lab: a radix table straight into the hash column -----------------------
//
// The experiment behind the README's latency and memory notes (not the
// shipped layout): CRC32 points are uniform, so a table of 2^bits entries,
// entry p = the first slot whose hash is >= p << (32 - bits), bounds the
// answer of a query of bucket p to [table[p], table[p + 1]]: one table read
// (L2/L3), then the bucket's few hash lines, loaded together with their node
// lines, then a count. The index is 4 x 2^bits bytes and nothing else.

struct RadixLab {
  std::vector<uint32_t> table;
  int shift = 32;
};

void MakeRadixLab(RadixLab& lab, const Fixture& f, int bits) {
  lab.shift = 32 - bits;
  const size_t entries = size_t{1} << bits;
  lab.table.resize(entries + 1);
  const uint32_t* h = f.sorted_hash.data();
  const size_t n = f.sorted_hash.size();
  size_t pos = 0;
  for (size_t p = 0; p < entries; ++p) {
    while (pos < n && h[pos] < (uint64_t{p} << lab.shift)) ++pos;
    lab.table[p] = static_cast<uint32_t>(pos);
  }
  lab.table[entries] = static_cast<uint32_t>(n);
}

RadixLab& GetRadixLab(Fixture& f, int bits) {
  return MadeOnce<RadixLab>(std::pair<const Fixture*, int>(&f, bits),
                            [&](RadixLab& lab) { MakeRadixLab(lab, f, bits); });
}

inline uint32_t RadixNode(const Fixture& f, const RadixLab& lab, uint32_t x) {
  const uint32_t p = x >> lab.shift;
  const uint32_t lo = lab.table[p], hi = lab.table[p + 1];
  const uint32_t* h = f.sorted_hash.data();
  // Every line of the bucket's hashes and nodes at once: one round trip.
  for (uint32_t i = lo & ~15u; i < hi; i += 16) __builtin_prefetch(h + i);
  for (uint32_t i = lo & ~31u; i <= hi; i += 32) __builtin_prefetch(f.sorted_node.data() + i);
  uint32_t count = 0;
  for (uint32_t i = lo; i < hi; ++i) count += h[i] < x;
  const size_t slot = lo + count;
  return f.sorted_node[slot == f.sorted_hash.size() ? 0 : slot];
}

template <size_t kGroup>
inline void RadixGroup(const Fixture& f, const RadixLab& lab, const uint32_t* x, uint32_t* out) {
  uint32_t lo[kGroup], hi[kGroup];
  const uint32_t* h = f.sorted_hash.data();
  for (size_t j = 0; j < kGroup; ++j) __builtin_prefetch(&lab.table[x[j] >> lab.shift]);
  for (size_t j = 0; j < kGroup; ++j) {
    const uint32_t p = x[j] >> lab.shift;
    lo[j] = lab.table[p];
    hi[j] = lab.table[p + 1];
    for (uint32_t i = lo[j] & ~15u; i < hi[j]; i += 16) __builtin_prefetch(h + i);
    for (uint32_t i = lo[j] & ~31u; i <= hi[j]; i += 32) {
      __builtin_prefetch(f.sorted_node.data() + i);
    }
  }
  for (size_t j = 0; j < kGroup; ++j) {
    uint32_t count = 0;
    for (uint32_t i = lo[j]; i < hi[j]; ++i) count += h[i] < x[j];
    const size_t slot = lo[j] + count;
    out[j] = f.sorted_node[slot == f.sorted_hash.size() ? 0 : slot];
  }
}

enum class LabShape { kSingle, kDependent, kBatch };

void BM_RadixLab(benchmark::State& state, size_t ring, int bits, LabShape shape) {
  Fixture& f = GetFixture(ring);
  const RadixLab& lab = GetRadixLab(f, bits);
  if (!CheckByHash(state, f, [&](uint32_t h) { return RadixNode(f, lab, h); })) return;
  std::vector<uint32_t> out(kOpsPerIteration);
  for (size_t i = 0; i + 32 <= kCheckCount; i += 32) {
    RadixGroup<32>(f, lab, f.check_hashes.data() + i, out.data());
    for (size_t j = 0; j < 32; ++j) {
      if (out[j] != f.check_expected[i + j]) return state.SkipWithError("radix batch differs");
    }
  }
  size_t pos = 0;
  uint32_t sink = 0, previous = 0;
  for (auto _ : state) {
    const uint32_t* q = f.hashes.data() + pos;
    if (shape == LabShape::kSingle) {
      for (size_t i = 0; i < kOpsPerIteration; ++i) sink += RadixNode(f, lab, q[i]);
    } else if (shape == LabShape::kDependent) {
      for (size_t i = 0; i < kOpsPerIteration; ++i) previous = RadixNode(f, lab, q[i] ^ previous);
    } else {
      for (size_t i = 0; i < kOpsPerIteration; i += 32) RadixGroup<32>(f, lab, q + i, out.data() + i);
      benchmark::DoNotOptimize(out.data());
    }
    pos = (pos + kOpsPerIteration) & (kQueryCount - 1);
  }
  benchmark::DoNotOptimize(sink + previous);
  state.counters["index_bytes_per_point"] =
      static_cast<double>(lab.table.size() * 4) / static_cast<double>(f.points);
  SetPerOp(state, kOpsPerIteration);
}

// ---- Layout lab: an interpolated radix entry, one 16-key window ---------------------
//
// The radix table above, but a lookup reads only the 16 hashes around where
// the answer should be: CRC32 points are uniform inside a bucket too, so the
// slot of x is about lo + (hi - lo) * (x's offset in the bucket). The window
// of 16 keys centred there holds the answer unless the guess is off by more
// than 8 (a bucket of k points: the error's deviation is at most sqrt(k) / 2);
// then the bucket is scanned. A cold lookup is two round trips: the entry,
// then the window's (one or two) hash lines with its node line.
#if defined(__x86_64__)
#include <immintrin.h>

struct InterpLab {
  internal::AlignedArray<uint32_t> table;  // 2^bits + 1 entries
  internal::AlignedArray<uint32_t> hash;   // the column, then 32 x UINT32_MAX
  internal::AlignedArray<uint16_t> node;   // the column; node[n] = node[0]
  int shift = 32;
  uint32_t n = 0;
};

void MakeInterpLab(InterpLab& lab, Fixture& f, int bits) {
  const RadixLab& radix = GetRadixLab(f, bits);
  lab.shift = radix.shift;
  lab.n = static_cast<uint32_t>(f.sorted_hash.size());
  if (!lab.table.Allocate(radix.table.size()) || !lab.hash.Allocate(lab.n + 32) ||
      !lab.node.Allocate(lab.n + 32)) {
    std::abort();
  }
  std::copy(radix.table.begin(), radix.table.end(), lab.table.data());
  std::copy(f.sorted_hash.data(), f.sorted_hash.data() + lab.n, lab.hash.data());
  std::fill(lab.hash.data() + lab.n, lab.hash.data() + lab.n + 32, UINT32_MAX);
  std::copy(f.sorted_node.data(), f.sorted_node.data() + lab.n, lab.node.data());
  std::fill(lab.node.data() + lab.n, lab.node.data() + lab.n + 32, f.sorted_node[0]);
}

InterpLab& GetInterpLab(Fixture& f, int bits) {
  return MadeOnce<InterpLab>(std::pair<const Fixture*, int>(&f, bits),
                             [&](InterpLab& lab) { MakeInterpLab(lab, f, bits); });
}

__attribute__((target("avx2,popcnt"))) inline uint32_t LabCountLess16(const uint32_t* keys,
                                                                      uint32_t x) {
  const __m256i bias = _mm256_set1_epi32(INT32_MIN);
  const __m256i vx = _mm256_xor_si256(_mm256_set1_epi32(static_cast<int>(x)), bias);
  const __m256i a =
      _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(keys)), bias);
  const __m256i b =
      _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(keys + 8)), bias);
  const unsigned lt_a = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(vx, a)));
  const unsigned lt_b = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(vx, b)));
  return static_cast<uint32_t>(__builtin_popcount(lt_a) + __builtin_popcount(lt_b));
}

template <uint32_t kWindow>
__attribute__((target("avx2,popcnt"))) inline uint32_t LabCountLess(const uint32_t* keys,
                                                                    uint32_t x) {
  uint32_t count = 0;
  for (uint32_t i = 0; i < kWindow; i += 16) count += LabCountLess16(keys + i, x);
  return count;
}

// The window's first slot: kWindow keys centred on the guess, kept inside
// [lo, max(lo, hi - kWindow)] so that a full or empty count is decisive at
// the bucket's ends.
template <uint32_t kWindow>
inline uint32_t InterpWindow(const InterpLab& lab, uint32_t x, uint32_t lo, uint32_t hi) {
  const uint32_t offset = x & ((1u << lab.shift) - 1);
  const uint32_t guess = lo + static_cast<uint32_t>((uint64_t{hi - lo} * offset) >> lab.shift);
  const uint32_t w = guess > lo + kWindow / 2 ? guess - kWindow / 2 : lo;
  const uint32_t last = hi > lo + kWindow ? hi - kWindow : lo;
  return w < last ? w : last;
}

template <uint32_t kWindow>
inline bool InterpDecisive(uint32_t c, uint32_t lo, uint32_t hi, uint32_t w) {
  return c - 1 < kWindow - 1 || (c == 0 && w == lo) || (c == kWindow && w + kWindow == hi);
}

// Misses step one window towards the answer (the guess is rarely off by
// more than one window), overlapping the last by the one slot whose side of
// x is known, so that a step never lands on a window that misses the other
// way.
template <uint32_t kWindow>
__attribute__((target("avx2,popcnt"))) inline uint32_t InterpFinish(const InterpLab& lab,
                                                                    uint32_t x, uint32_t lo,
                                                                    uint32_t hi, uint32_t w) {
  uint32_t c = LabCountLess<kWindow>(lab.hash.data() + w, x);
  while (!InterpDecisive<kWindow>(c, lo, hi, w)) [[unlikely]] {
    if (c == 0) {
      w = w > lo + kWindow - 1 ? w - (kWindow - 1) : lo;
    } else {
      const uint32_t last = hi > lo + kWindow ? hi - kWindow : lo;
      w = w + kWindow - 1 < last ? w + kWindow - 1 : last;
    }
    c = LabCountLess<kWindow>(lab.hash.data() + w, x);
  }
  return lab.node[w + c];
}

template <uint32_t kWindow>
__attribute__((target("avx2,popcnt"))) inline uint32_t InterpNode(const InterpLab& lab,
                                                                  uint32_t x) {
  const uint32_t p = x >> lab.shift;
  const uint32_t lo = lab.table[p], hi = lab.table[p + 1];
  const uint32_t w = InterpWindow<kWindow>(lab, x, lo, hi);
  __builtin_prefetch(lab.node.data() + w);
  if (kWindow > 16) __builtin_prefetch(lab.node.data() + w + kWindow - 1);
  return InterpFinish<kWindow>(lab, x, lo, hi, w);
}

template <uint32_t kWindow, size_t kGroup>
__attribute__((target("avx2,popcnt"))) inline void InterpGroup(const InterpLab& lab,
                                                               const uint32_t* x, uint32_t* out) {
  uint32_t lo[kGroup], hi[kGroup], w[kGroup];
  for (size_t j = 0; j < kGroup; ++j) __builtin_prefetch(lab.table.data() + (x[j] >> lab.shift));
  for (size_t j = 0; j < kGroup; ++j) {
    const uint32_t p = x[j] >> lab.shift;
    lo[j] = lab.table[p];
    hi[j] = lab.table[p + 1];
    w[j] = InterpWindow<kWindow>(lab, x[j], lo[j], hi[j]);
    for (uint32_t i = 0; i < kWindow; i += 16) __builtin_prefetch(lab.hash.data() + w[j] + i);
    __builtin_prefetch(lab.hash.data() + w[j] + kWindow - 1);
    __builtin_prefetch(lab.node.data() + w[j]);
  }
  for (size_t j = 0; j < kGroup; ++j) {
    out[j] = InterpFinish<kWindow>(lab, x[j], lo[j], hi[j], w[j]);
  }
}

template <uint32_t kWindow>
void BM_InterpLab(benchmark::State& state, size_t ring, int bits, LabShape shape) {
  Fixture& f = GetFixture(ring);
  const InterpLab& lab = GetInterpLab(f, bits);
  if (!CheckByHash(state, f, [&](uint32_t h) { return InterpNode<kWindow>(lab, h); })) return;
  std::vector<uint32_t> out(kOpsPerIteration);
  for (size_t i = 0; i + 32 <= kCheckCount; i += 32) {
    InterpGroup<kWindow, 32>(lab, f.check_hashes.data() + i, out.data());
    for (size_t j = 0; j < 32; ++j) {
      if (out[j] != f.check_expected[i + j]) return state.SkipWithError("interp batch differs");
    }
  }
  // How often the window misses the answer (then the bucket is scanned).
  uint64_t misses = 0;
  for (const uint32_t x : f.hashes) {
    const uint32_t p = x >> lab.shift;
    const uint32_t lo = lab.table[p], hi = lab.table[p + 1];
    const uint32_t w = InterpWindow<kWindow>(lab, x, lo, hi);
    misses += !InterpDecisive<kWindow>(LabCountLess<kWindow>(lab.hash.data() + w, x), lo, hi, w);
  }
  size_t pos = 0;
  uint32_t sink = 0, previous = 0;
  for (auto _ : state) {
    const uint32_t* q = f.hashes.data() + pos;
    if (shape == LabShape::kSingle) {
      for (size_t i = 0; i < kOpsPerIteration; ++i) sink += InterpNode<kWindow>(lab, q[i]);
    } else if (shape == LabShape::kDependent) {
      for (size_t i = 0; i < kOpsPerIteration; ++i) previous = InterpNode<kWindow>(lab, q[i] ^ previous);
    } else {
      for (size_t i = 0; i < kOpsPerIteration; i += 32) InterpGroup<kWindow, 32>(lab, q + i, out.data() + i);
      benchmark::DoNotOptimize(out.data());
    }
    pos = (pos + kOpsPerIteration) & (kQueryCount - 1);
  }
  benchmark::DoNotOptimize(sink + previous);
  state.counters["index_bytes_per_point"] =
      static_cast<double>(lab.table.size() * 4) / static_cast<double>(f.points);
  state.counters["window_miss_rate"] =
      static_cast<double>(misses) / static_cast<double>(f.hashes.size());
  SetPerOp(state, kOpsPerIteration);
}
#endif  // __x86_64__

// ---- Proxy-shaped lookups -------------------------------------------------------------
//
// A proxy looks up one key per request, between other work that pushes the
// ring out of the caches. Before each lookup this does that other work, then
// times the one lookup alone (steady_clock around it; the clock's own cost,
// measured the same way around nothing after the same work, is subtracted).
// ns_per_op is the mean. The other work is one of two kinds:
//   sweep   read one word of every cache line of a P-byte buffer (16 KiB: the
//           L1; 256 KiB: most of an L2; 4 MiB: the L2 and part of the L3):
//           it evicts the ring's lines but, being sequential and small, leaves
//           the upper levels of the ring's index and their TLB entries in the
//           larger caches;
//   random  random accesses over a working set far larger than the caches,
//           as a proxy's own tables see them: a binary search for a random
//           key in another sorted array of 20.4M 8-byte keys (164 MB), then
//           one random line of a 128 MiB buffer.

// The random other work: its arrays, shared by every proxy benchmark.
struct RandomWork {
  internal::AlignedArray<uint64_t> sorted;  // 20.4M ascending keys
  internal::AlignedArray<uint8_t> lines;    // 128 MiB
  uint64_t state = 0x2545F4914F6CDD1Dull;

  uint64_t Next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
  // One binary search and one random line; returns what they read.
  uint64_t operator()() {
    const uint64_t x = Next();
    const uint64_t* first = sorted.data();
    size_t n = sorted.size();
    while (n > 1) {
      const size_t half = n / 2;
      first = first[half - 1] < x ? first + half : first;
      n -= half;
    }
    const size_t line = ((Next() >> 32) * (lines.size() / 64)) >> 32;
    return *first + lines[line * 64];
  }
};

RandomWork& GetRandomWork() {
  static RandomWork* work = [] {
    auto* w = new RandomWork;
    constexpr size_t kSorted = 20400000, kLineBytes = size_t{128} << 20;
    if (!w->sorted.Allocate(kSorted) || !w->lines.Allocate(kLineBytes)) std::abort();
    std::mt19937_64 rng(11);
    for (size_t i = 0; i < kSorted; ++i) w->sorted[i] = rng();
    std::sort(w->sorted.data(), w->sorted.data() + kSorted);
    for (size_t i = 0; i < kLineBytes; ++i) w->lines[i] = static_cast<uint8_t>(i);
    return w;
  }();
  return *work;
}

// kRadixHash: the layout lab's radix table (2^bits entries, bits = the
// ring's base + 2: about 20 points a bucket) by hash, cold.
enum class ProxyWhat { kChashKey, kPingoraKey, kNginxKey, kChashHash, kLowerBoundHash, kLine,
                       kRadixHash, kInterp16Hash, kInterp32Hash };
constexpr int kProxyRadixExtraBits = 2;

uint32_t ProxyLookup(const Fixture& f, const RadixLab* radix, ProxyWhat what, size_t i,
                     uint64_t& x, const void* interp = nullptr) {
  const std::string_view key = f.key_views[i & (kKeyCount - 1)];
  const uint32_t hash = f.hashes[i & (kQueryCount - 1)];
  switch (what) {
    case ProxyWhat::kChashKey:
      return f.ring.FindNode(key);
    case ProxyWhat::kPingoraKey:
      return PingoraNode(f, TableCrc32(key));
    case ProxyWhat::kNginxKey:
      return NginxNode(f, ByteTableCrc32(key));
    case ProxyWhat::kChashHash:
      return f.ring.FindNodeByHash(hash);
    case ProxyWhat::kLowerBoundHash:
      return LowerBoundNode(f, hash);
    case ProxyWhat::kRadixHash:
      return RadixNode(f, *radix, hash);
#if defined(__x86_64__)
    case ProxyWhat::kInterp16Hash:
      return InterpNode<16>(*static_cast<const InterpLab*>(interp), hash);
    case ProxyWhat::kInterp32Hash:
      return InterpNode<32>(*static_cast<const InterpLab*>(interp), hash);
#else
    case ProxyWhat::kInterp16Hash:
    case ProxyWhat::kInterp32Hash:
      return 0;
#endif
    case ProxyWhat::kLine:
      NextXorShift(x);
      return f.floor_buffer[((x >> 32) * (f.floor_buffer.size() / 64) >> 32) * 64];
  }
  return 0;
}

// pollution: the sweep's P bytes, or kRandomWork.
constexpr size_t kRandomWork = SIZE_MAX;

int RadixBaseBits(size_t ring);

void BM_Proxy(benchmark::State& state, size_t ring, ProxyWhat what, size_t pollution) {
  Fixture& f = GetFixture(ring);
  const RadixLab* radix = nullptr;
  if (what == ProxyWhat::kRadixHash) {
    radix = &GetRadixLab(f, RadixBaseBits(ring) + kProxyRadixExtraBits);
    if (!CheckByHash(state, f, [&](uint32_t h) { return RadixNode(f, *radix, h); })) return;
  }
  const void* interp = nullptr;
#if defined(__x86_64__)
  if (what == ProxyWhat::kInterp16Hash || what == ProxyWhat::kInterp32Hash) {
    const InterpLab& lab = GetInterpLab(f, RadixBaseBits(ring) - 1);
    interp = &lab;
    const bool narrow = what == ProxyWhat::kInterp16Hash;
    if (!CheckByHash(state, f, [&](uint32_t h) {
          return narrow ? InterpNode<16>(lab, h) : InterpNode<32>(lab, h);
        })) {
      return;
    }
  }
#endif
  if (what == ProxyWhat::kChashKey || what == ProxyWhat::kPingoraKey ||
      what == ProxyWhat::kNginxKey) {
    uint64_t unused = 0;
    for (size_t i = 0; i < kKeyCount; i += 7) {
      if (ProxyLookup(f, nullptr, what, i, unused) != f.key_expected[i]) {
        return state.SkipWithError("proxy key lookup differs from the reference");
      }
    }
  } else if (what == ProxyWhat::kChashHash &&
             !CheckByHash(state, f, [&](uint32_t h) { return f.ring.FindNodeByHash(h); })) {
    return;
  } else if (what == ProxyWhat::kLowerBoundHash &&
             !CheckByHash(state, f, [&](uint32_t h) { return LowerBoundNode(f, h); })) {
    return;
  }
  internal::AlignedArray<uint64_t> polluter;
  const bool random_work = pollution == kRandomWork;
  RandomWork* work = random_work ? &GetRandomWork() : nullptr;
  const size_t words = random_work ? 0 : pollution / sizeof(uint64_t);
  if (words > 0) {
    if (!polluter.Allocate(words)) return state.SkipWithError("out of memory");
    for (size_t i = 0; i < words; ++i) polluter[i] = i;
  }
  const auto pollute = [&] {
    if (random_work) return (*work)();
    uint64_t sum = 0;
    for (size_t i = 0; i < words; i += 8) sum += polluter[i];
    return sum;
  };
  // About 0.1 s of pollution a repetition, at least 2,048 lookups (the
  // random work: about 1 us, so 65,536).
  const size_t lookups =
      random_work ? 65536
                  : std::clamp<size_t>((size_t{1} << 33) / std::max<size_t>(pollution, 1), 2048,
                                       65536);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  TimeColdLookups(state, lookups, pollute,
                  [&](size_t i) { return ProxyLookup(f, radix, what, i, x, interp); });
  state.counters["pollution_bytes"] = random_work ? 0 : static_cast<double>(pollution);
}

// ---- CRC32 -----------------------------------------------------------------------------

void BM_Crc32(benchmark::State& state, std::string name, size_t length) {
  std::vector<std::string> inputs(4096);
  std::mt19937_64 rng(length);
  for (std::string& s : inputs) {
    s.resize(length);
    for (char& c : s) c = static_cast<char>('!' + rng() % 94);
  }
  std::function<uint32_t(std::string_view)> crc;
  if (name == "zlib") {
    crc = [](std::string_view s) {
      return static_cast<uint32_t>(
          crc32(0, reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size())));
    };
  } else if (name == "nginx-byte-table") {
    crc = ByteTableCrc32;
  } else {
    for (const auto& implementation : internal::Crc32Implementations()) {
      if (name == implementation.name) {
        if (!implementation.supported) return state.SkipWithError("not supported here");
        const auto extend = implementation.extend;
        crc = [extend](std::string_view s) {
          return extend(0, reinterpret_cast<const uint8_t*>(s.data()), s.size());
        };
      }
    }
  }
  for (const std::string& s : inputs) {
    if (crc(s) != reference::BitwiseCrc32(0, s.data(), s.size())) {
      return state.SkipWithError("CRC differs from the bitwise reference");
    }
  }
  size_t pos = 0;
  uint32_t sink = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < 256; ++i) sink += crc(inputs[(pos + i) & 4095]);
    pos += 256;
  }
  benchmark::DoNotOptimize(sink);
  SetPerOp(state, 256);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 256 * length));
}

// chash::Crc32 as an embedder calls it, and the batch path FindNodes uses.
void BM_Crc32Api(benchmark::State& state, bool batch) {
  std::vector<std::string> inputs(4096);
  std::mt19937_64 rng(7);
  for (std::string& s : inputs) {
    s.resize(kKeyLength);
    for (char& c : s) c = static_cast<char>('!' + rng() % 94);
  }
  std::vector<std::string_view> views(inputs.begin(), inputs.end());
  std::vector<uint32_t> out(views.size());
  internal::Crc32Keys(views.data(), views.size(), out.data());
  for (size_t i = 0; i < views.size(); ++i) {
    if (out[i] != reference::BitwiseCrc32(0, views[i].data(), views[i].size()) ||
        Crc32(views[i]) != out[i]) {
      return state.SkipWithError("CRC differs from the bitwise reference");
    }
  }
  state.SetLabel(internal::Crc32ImplementationName());
  size_t pos = 0;
  uint32_t sink = 0;
  for (auto _ : state) {
    if (batch) {
      internal::Crc32Keys(views.data() + pos, 256, out.data());
      benchmark::DoNotOptimize(out.data());
    } else {
      for (size_t i = 0; i < 256; ++i) sink += Crc32(views[pos + i]);
    }
    pos = (pos + 256) & 4095;
  }
  benchmark::DoNotOptimize(sink);
  SetPerOp(state, 256);
}

// ---- Build --------------------------------------------------------------------------------

// A straightforward build of the same ring: the same point chains, std::sort
// of the same keys, the same dedup, two plain columns. No index, no layout.
struct StdSortRing {
  std::vector<uint32_t> hash;
  std::vector<uint16_t> node;
};

StdSortRing BuildWithStdSort(const RingSpec& spec) {
  std::vector<uint64_t> keys;
  keys.reserve(uint64_t{spec.nodes} * spec.weight * spec.multiple);
  std::vector<std::pair<SocketOrderKey, uint32_t>> order;
  std::vector<uint32_t> base(spec.nodes);
  for (uint32_t i = 0; i < spec.nodes; ++i) {
    const NodeAddress address = ParsePingoraAddress(NodeAddressText(i)).value();
    const std::string bytes = address.HashedBytes();
    base[i] = internal::Crc32UpdateRaw(0xFFFFFFFFu, reinterpret_cast<const uint8_t*>(bytes.data()),
                                       bytes.size());
    order.emplace_back(address.order, i);
  }
  std::sort(order.begin(), order.end());
  std::vector<uint32_t> rank(spec.nodes);
  for (uint32_t r = 0; r < spec.nodes; ++r) rank[order[r].second] = r;
  for (uint32_t i = 0; i < spec.nodes; ++i) {
    uint32_t prev = 0;
    for (uint64_t j = 0; j < uint64_t{spec.weight} * spec.multiple; ++j) {
      prev = internal::Crc32PointStep(base[i], prev);
      keys.push_back(internal::PointSortKey(prev, rank[i], i));
    }
  }
  std::sort(keys.begin(), keys.end());
  StdSortRing ring;
  ring.hash.reserve(keys.size());
  ring.node.reserve(keys.size());
  for (const uint64_t key : keys) {
    if (!ring.hash.empty() && ring.hash.back() == internal::SortKeyHash(key)) continue;
    ring.hash.push_back(internal::SortKeyHash(key));
    ring.node.push_back(internal::SortKeyNode(key));
  }
  return ring;
}

// Runs `build` in a child process and returns the bytes its resident set
// grew by at its peak (VmHWM after minus VmRSS before); 0 if that failed.
uint64_t PeakResidentGrowth(const std::function<void()>& build) {
  int fds[2];
  if (pipe(fds) != 0) return 0;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const uint64_t before = ProcStatusKb("VmRSS:");
    build();
    const uint64_t growth = (ProcStatusKb("VmHWM:") - before) * 1024;
    if (write(fds[1], &growth, sizeof growth) != sizeof growth) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  uint64_t growth = 0;
  if (pid < 0 || read(fds[0], &growth, sizeof growth) != sizeof growth) growth = 0;
  close(fds[0]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  return growth;
}

// Builds with `threads` threads (0: every hardware thread, the default).
void BM_Build(benchmark::State& state, size_t ring, bool std_sort, unsigned threads = 0) {
  struct ThreadsScope {
    explicit ThreadsScope(unsigned n) { internal::SetBuildThreads(n); }
    ~ThreadsScope() { internal::SetBuildThreads(0); }
  } threads_scope(threads);
  Fixture& f = GetFixture(ring);
  const RingSpec& spec = *f.spec;
  const double generated = double{1} * spec.nodes * spec.weight * spec.multiple;
  // Same answers as the reference: through the ring, or the sorted columns.
  if (std_sort) {
    const StdSortRing built = BuildWithStdSort(spec);
    if (!std::equal(built.hash.begin(), built.hash.end(), f.sorted_hash.data(),
                    f.sorted_hash.data() + f.sorted_hash.size()) ||
        !std::equal(built.node.begin(), built.node.end(), f.sorted_node.data(),
                    f.sorted_node.data() + f.sorted_node.size())) {
      return state.SkipWithError("std::sort build differs from the reference");
    }
  } else {
    Result<Ring> built = BuildSpec(spec);
    if (!built.ok() || !CheckBatchByHash(state, f, built.value())) return;
  }
  const uint64_t peak = PeakResidentGrowth([&] {
    if (std_sort) {
      benchmark::DoNotOptimize(BuildWithStdSort(spec).hash.data());
    } else {
      benchmark::DoNotOptimize(BuildSpec(spec).ok());
    }
  });
  state.SetLabel(std_sort ? "std::sort"
                          : std::string(internal::Crc32ImplementationName()) + " threads=" +
                                std::to_string(internal::BuildThreads()));
  for (auto _ : state) {
    if (std_sort) {
      benchmark::DoNotOptimize(BuildWithStdSort(spec).hash.data());
    } else {
      benchmark::DoNotOptimize(BuildSpec(spec).ok());
    }
  }
  state.counters["peak_rss_bytes_per_point"] = static_cast<double>(peak) / generated;
  state.counters["points_generated"] = generated;
  SetPerOp(state, 1);
}

// ---- Registration -----------------------------------------------------------------------

std::string RingName(size_t ring) { return kRingSpecs[ring].name; }
uint64_t GetPointCount(size_t ring) {
  return uint64_t{kRingSpecs[ring].nodes} * kRingSpecs[ring].weight * kRingSpecs[ring].multiple;
}
// The layout lab's smallest radix table: about 64 points a bucket.
int RadixBaseBits(size_t ring) {
  return static_cast<int>(std::bit_width(GetPointCount(ring) / 64)) - 1;
}

void RegisterAll() {
  (void)ActiveTargetName();  // the first dispatch, before listing targets
  const std::vector<std::string> targets = SupportedTargetNames();
  const size_t rings = with_204m ? std::size(kRingSpecs) : std::size(kRingSpecs) - 1;
  const auto reg = [](const std::string& name, auto fn) {
    return benchmark::RegisterBenchmark(name.c_str(), fn)->Unit(benchmark::kNanosecond);
  };
  for (size_t ring = 0; ring < rings; ++ring) {
    const std::string r = RingName(ring);
    const std::pair<const char*, void (*)(benchmark::State&, size_t)> baselines[] = {
        {"lower_bound/single/", BM_BaselineByHash<LowerBoundNode>},
        {"lower_bound/dependent/", BM_LowerBoundDependent},
        {"pingora/by_hash/", BM_BaselineByHash<PingoraNode>},
        {"pingora/key/", BM_BaselineByKey<PingoraKeyNode>},
        {"nginx/by_hash/", BM_BaselineByHash<NginxNode>},
        {"nginx/key/", BM_BaselineByKey<NginxKeyNode>},
        {"floor/", [](benchmark::State& s, size_t i) { BM_MemoryFloor(s, i, false); }},
        {"floor_dependent/", BM_DependentLine},
        {"baseline/batch1024/", BM_BranchlessBatch},
        {"baseline/key_batch1024/", BM_BaselineKeyBatch}};
    for (const auto& [name, run] : baselines) {
      reg(name + r, [ring, run = run](benchmark::State& s) { run(s, ring); });
    }
    for (const std::string& t : targets) {
      reg("chash/single/" + r + "/" + t,
          [ring, t](benchmark::State& s) { BM_ByHashSingle(s, ring, t, false); });
      reg("chash/dependent/" + r + "/" + t,
          [ring, t](benchmark::State& s) { BM_ByHashDependent(s, ring, t); });
      for (const size_t batch : {8, 64, 1024}) {
        reg("chash/batch" + std::to_string(batch) + "/" + r + "/" + t,
            [ring, t, batch](benchmark::State& s) { BM_ByHashBatch(s, ring, t, batch, false); });
      }
      reg("chash/key/" + r + "/" + t, [ring, t](benchmark::State& s) { BM_KeySingle(s, ring, t); });
      reg("chash/key_unfused/" + r + "/" + t,
          [ring, t](benchmark::State& s) { BM_KeySingle(s, ring, t, true); });
      reg("chash/key_batch1024/" + r + "/" + t,
          [ring, t](benchmark::State& s) { BM_KeyBatch(s, ring, t); });
    }
    if (ring >= kLargeRings - 1) {
      // Huge pages on (the default, above) and off, best target.
      const std::string t = targets.front();
      reg("chash/single_4k_pages/" + r + "/" + t,
          [ring, t](benchmark::State& s) { BM_ByHashSingle(s, ring, t, true); });
      reg("chash/batch1024_4k_pages/" + r + "/" + t,
          [ring, t](benchmark::State& s) { BM_ByHashBatch(s, ring, t, 1024, true); });
      reg("floor_4k_pages/" + r, [ring](benchmark::State& s) { BM_MemoryFloor(s, ring, true); });
    }
  }
  // Proxy-shaped: the rings that outgrow the caches, one lookup after each
  // pollution of the caches.
  const std::pair<ProxyWhat, const char*> proxy_whats[] = {
      {ProxyWhat::kChashKey, "chash_key"},         {ProxyWhat::kPingoraKey, "pingora_key"},
      {ProxyWhat::kNginxKey, "nginx_key"},         {ProxyWhat::kChashHash, "chash_hash"},
      {ProxyWhat::kLowerBoundHash, "lower_bound_hash"}, {ProxyWhat::kLine, "line"},
      {ProxyWhat::kRadixHash, "radix_hash"},       {ProxyWhat::kInterp16Hash, "interp16_hash"},
      {ProxyWhat::kInterp32Hash, "interp32_hash"}};
  const std::pair<size_t, const char*> pollutions[] = {
      {0, "0"},
      {size_t{16} << 10, "16K"},
      {size_t{256} << 10, "256K"},
      {size_t{4} << 20, "4M"},
      {kRandomWork, "random"}};
  for (size_t ring = kLargeRings - 1; ring < rings; ++ring) {
    for (const auto& [bytes, pname] : pollutions) {
      for (const auto& [what, wname] : proxy_whats) {
        reg(std::string("proxy/") + wname + "/" + pname + "/" + RingName(ring),
            // Init-captures: clang 14 cannot capture structured bindings.
            [ring, what = what, bytes = bytes](benchmark::State& s) {
              BM_Proxy(s, ring, what, bytes);
            })
            ->Iterations(1);
      }
    }
  }
  // The layout lab: radix tables of 2^bits entries over the large rings.
  for (size_t ring = kLargeRings - 1; ring < rings; ++ring) {
    const int base = RadixBaseBits(ring);
    for (int bits = base; bits <= base + 4; ++bits) {
      for (const auto& [shape, sname] : {std::pair{LabShape::kSingle, "single"},
                                         std::pair{LabShape::kDependent, "dependent"},
                                         std::pair{LabShape::kBatch, "batch1024"}}) {
        reg("lab/radix" + std::to_string(bits) + "/" + sname + "/" + RingName(ring),
            [ring, bits, shape = shape](benchmark::State& s) { BM_RadixLab(s, ring, bits, shape); });
      }
    }
  }
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) {
    for (size_t ring = kLargeRings - 1; ring < rings; ++ring) {
      const int base = RadixBaseBits(ring);
      for (int bits = base - 2; bits <= base + 2; ++bits) {
        for (const auto& [shape, sname] : {std::pair{LabShape::kSingle, "single"},
                                           std::pair{LabShape::kDependent, "dependent"},
                                           std::pair{LabShape::kBatch, "batch1024"}}) {
          reg("lab/interp" + std::to_string(bits) + "w16/" + sname + "/" + RingName(ring),
              [ring, bits, shape = shape](benchmark::State& s) {
                BM_InterpLab<16>(s, ring, bits, shape);
              });
          reg("lab/interp" + std::to_string(bits) + "w32/" + sname + "/" + RingName(ring),
              [ring, bits, shape = shape](benchmark::State& s) {
                BM_InterpLab<32>(s, ring, bits, shape);
              });
        }
      }
    }
  }
#endif
  std::vector<std::string> crcs = {"zlib", "nginx-byte-table"};
  for (const auto& implementation : internal::Crc32Implementations()) {
    if (implementation.supported) crcs.push_back(implementation.name);
  }
  for (const size_t length : {4, 10, 16, 30, 64, 200, 256, 1024, 4096}) {
    for (const std::string& c : crcs) {
      reg("crc32/" + c + "/" + std::to_string(length),
          [c, length](benchmark::State& s) { BM_Crc32(s, c, length); });
    }
  }
  reg("crc32/chash_api/single/30", [](benchmark::State& s) { BM_Crc32Api(s, false); });
  reg("crc32/chash_api/batch/30", [](benchmark::State& s) { BM_Crc32Api(s, true); });
  for (size_t ring = 0; ring < rings; ++ring) {
    const std::string r = RingName(ring);
    const int iterations = ring >= kLargeRings ? 2 : ring == kLargeRings - 1 ? 5 : 0;
    auto* chash_build =
        reg("build/chash/" + r, [ring](benchmark::State& s) { BM_Build(s, ring, false); });
    auto* std_build =
        reg("build/std_sort/" + r, [ring](benchmark::State& s) { BM_Build(s, ring, true); });
    auto* one_thread = reg("build/chash_1thread/" + r,
                           [ring](benchmark::State& s) { BM_Build(s, ring, false, 1); });
    for (auto* b : {chash_build, std_build, one_thread}) {
      b->Unit(benchmark::kMillisecond)->UseRealTime();
      if (iterations > 0) b->Iterations(iterations);
    }
  }
}

}  // namespace
}  // namespace chash::bench

int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--with_204m") {
      chash::bench::with_204m = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  benchmark::AddCustomContext("chash_target", std::string(chash::ActiveTargetName()));
  benchmark::AddCustomContext("chash_crc32", chash::internal::Crc32ImplementationName());
  benchmark::AddCustomContext("chash_targets", [] {
    std::string all;
    for (const std::string& t : chash::SupportedTargetNames()) all += (all.empty() ? "" : ",") + t;
    return all;
  }());
  chash::bench::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
