// The other programs' rings in chash (haproxy, ketama-md5 as libmemcached
// and twemproxy build it, varnish-shard, envoy-ring, envoy-maglev): what a
// key costs, warm and cold, what a build costs, and chash's ketama-md5
// against libmemcached's own memcached_generate_hash on the same servers
// and keys (when Debian's libmemcached-dev was found at configure time).
//
//   fleets    "1000": 1,000 servers of weight 1 with each program's
//             defaults (HAProxy 16K points, libmemcached and twemproxy 160K,
//             Varnish 67K, Envoy's ring 2,000, Maglev 65,537 entries);
//             "large": HAProxy 2,048 servers of weight 256 (8.4M points),
//             libmemcached 65,536 servers (10.5M points: its weights are
//             shares, so 160 points a server is its most, and 65,536 is
//             chash's node limit), Varnish 2,048 backends of weight 100
//             (13.7M), Envoy's ring at its maximum of 8,388,608 entries;
//   program/  warm lookups: a key (30 bytes) or a hash, single and 1,024 a
//             batch, on every Highway target for the keys;
//   proxy/    cold: one key lookup after a sweep of 256 KiB or 4 MiB (as
//             bench_chash's proxy rows), the clock's own cost subtracted;
//   build/    RingBuilder, the large fleets;
//   memory/   each fleet's bytes a point in chash and in the program (its
//             sources' structures, computed), and the resident growth of
//             building and holding the ring (measured);
//   libmemcached/  100 servers (Debian's libmemcached asserts past 100 in
//             KETAMA_WEIGHTED), MD5 keys: memcached_generate_hash one key at
//             a time against chash's FindNode and FindNodes.
//
// Every fixture checks chash's answers against the reference model
// (tests/reference/reference_programs.h) before anything is timed, and
// libmemcached's against chash's.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "chash/chash.h"
#include "cold_lookups.h"
#include "dispatch_control.h"
#include "layout/aligned_array.h"
#include "proc_memory.h"
#include "reference/reference_programs.h"

#if CHASH_BENCH_LIBMEMCACHED
#include <libmemcached/memcached.h>
#endif

namespace chash::bench {
namespace {

constexpr size_t kKeyCount = 1 << 16;
constexpr size_t kOps = 1024;

struct FleetSpec {
  const char* flavor;  // row name
  const char* fleet;
  RingOptions options;
  uint32_t servers;
  uint32_t weight;
};

const std::vector<FleetSpec>& Specs() {
  static const std::vector<FleetSpec> specs = {
      {"haproxy", "1000", {.flavor = Flavor::kHaproxy}, 1000, 1},
      {"ketama-md5", "1000", {.flavor = Flavor::kKetamaMd5}, 1000, 1},
      {"twemproxy", "1000",
       {.flavor = Flavor::kKetamaMd5, .ketama = {.variant = KetamaVariant::kTwemproxy}}, 1000, 1},
      {"varnish-shard", "1000", {.flavor = Flavor::kVarnishShard}, 1000, 1},
      {"envoy-ring", "1000", {.flavor = Flavor::kEnvoyRing}, 1000, 1},
      {"envoy-maglev", "1000", {.flavor = Flavor::kEnvoyMaglev}, 1000, 1},
      {"pingora-v2", "1000", {.flavor = Flavor::kPingoraV2}, 1000, 1},
      {"haproxy", "large", {.flavor = Flavor::kHaproxy}, 2048, 256},
      {"ketama-md5", "large", {.flavor = Flavor::kKetamaMd5}, 65536, 1},
      {"varnish-shard", "large", {.flavor = Flavor::kVarnishShard}, 2048, 100},
      {"envoy-ring", "large",
       {.flavor = Flavor::kEnvoyRing,
        .envoy_ring = {.minimum_ring_size = 8388608, .maximum_ring_size = 8388608}},
       1000, 1},
  };
  return specs;
}

std::string Address(uint32_t i) {
  return "10." + std::to_string(i >> 16) + "." + std::to_string((i >> 8) & 255) + "." +
         std::to_string(i & 255) + ":11212";
}

Result<Ring> BuildFleet(const FleetSpec& spec) {
  RingOptions options = spec.options;
  options.max_points = kHardMaxPoints;
  RingBuilder builder(options);
  for (uint32_t i = 0; i < spec.servers; ++i) {
    if (Status s = builder.Add(Address(i), spec.weight); !s.ok()) return s;
  }
  return std::move(builder).Build();
}

std::vector<std::string> Keys(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> keys(kKeyCount);
  for (std::string& key : keys) {
    char text[31];
    std::snprintf(text, sizeof text, "/object/%016llx/%04x",
                  static_cast<unsigned long long>(rng()), static_cast<unsigned>(rng() & 0xffff));
    key.assign(text, 30);
  }
  return keys;
}

struct Fixture {
  const FleetSpec* spec = nullptr;
  Ring ring;
  std::vector<std::string> keys;
  std::vector<std::string_view> views;
  std::vector<uint64_t> hashes;  // KeyHash of each key
  std::vector<uint32_t> expected;
  std::string error;
};

void MakeFixture(Fixture& f, size_t index) {
  f.spec = &Specs()[index];
  Result<Ring> ring = BuildFleet(*f.spec);
  if (!ring.ok()) {
    f.error = ring.status().ToString();
    return;
  }
  f.ring = std::move(ring).value();
  f.keys = Keys(index + 1);
  f.views.assign(f.keys.begin(), f.keys.end());
  f.hashes.resize(kKeyCount);
  f.expected.resize(kKeyCount);
  for (size_t i = 0; i < kKeyCount; ++i) {
    f.hashes[i] = f.ring.KeyHash(f.keys[i]);
    f.expected[i] = f.ring.FindNode(f.keys[i]);
  }
  // The answers against the reference model (the program's own loops), on
  // a sample of the keys; pingora-v2 is bench_chash's business.
  if (f.spec->options.flavor != Flavor::kPingoraV2) {
    std::vector<reference::ProgramServer> servers;
    for (uint32_t i = 0; i < f.spec->servers; ++i) {
      servers.push_back({Address(i), f.spec->weight, 0, ""});
    }
    RingOptions options = f.spec->options;
    options.max_points = kHardMaxPoints;
    Result<reference::ProgramRing> model = reference::ProgramRing::Build(options, servers);
    if (!model.ok()) {
      f.error = "reference: " + model.status().ToString();
      return;
    }
    for (size_t i = 0; i < kKeyCount; i += 61) {
      if (model.value().FindNode(f.keys[i]) != f.expected[i]) {
        f.error = "differs from the reference model for key " + f.keys[i];
        return;
      }
    }
  }
}

Fixture& GetFixture(size_t index) {
  return MadeOnce<Fixture>(index, [index](Fixture& f) { MakeFixture(f, index); });
}

bool Usable(benchmark::State& state, const Fixture& f) {
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return false;
  }
  return true;
}

// ---- Warm lookups ------------------------------------------------------------------------

void BM_Key(benchmark::State& state, size_t index, std::string target) {
  Fixture& f = GetFixture(index);
  const TargetScope scope(state, target);
  if (!Usable(state, f) || !scope.ok()) return;
  TimeEach(state, f.views, kOps, [&f](std::string_view key) { return f.ring.FindNode(key); });
}

void BM_KeyBatch(benchmark::State& state, size_t index, std::string target) {
  Fixture& f = GetFixture(index);
  const TargetScope scope(state, target);
  if (!Usable(state, f) || !scope.ok()) return;
  TimeBatches(state, f.views, f.expected, kOps, "batch answers differ from single ones",
              [&f](std::span<const std::string_view> keys, std::span<uint32_t> out) {
                f.ring.FindNodes(keys, out);
              });
}

void BM_Hash(benchmark::State& state, size_t index) {
  Fixture& f = GetFixture(index);
  if (!Usable(state, f)) return;
  TimeEach(state, f.hashes, kOps, [&f](uint64_t hash) { return f.ring.FindNodeByHash64(hash); });
}

void BM_HashBatch(benchmark::State& state, size_t index) {
  Fixture& f = GetFixture(index);
  if (!Usable(state, f)) return;
  TimeBatches(state, f.hashes, f.expected, kOps, "hash batch answers differ from the keys'",
              [&f](std::span<const uint64_t> hashes, std::span<uint32_t> out) {
                f.ring.FindNodesByHash64(hashes, out);
              });
}

// ---- Cold: one key after a sweep --------------------------------------------------------

void BM_Proxy(benchmark::State& state, size_t index, size_t pollution) {
  Fixture& f = GetFixture(index);
  if (!Usable(state, f)) return;
  internal::AlignedArray<uint64_t> polluter;
  const size_t words = pollution / sizeof(uint64_t);
  if (!polluter.Allocate(words)) return state.SkipWithError("out of memory");
  for (size_t i = 0; i < words; ++i) polluter[i] = i;
  const auto pollute = [&] {
    uint64_t sum = 0;
    for (size_t i = 0; i < words; i += 8) sum += polluter[i];
    return sum;
  };
  const size_t lookups = std::clamp<size_t>((size_t{1} << 33) / pollution, 2048, 65536);
  TimeColdLookups(state, lookups, pollute, [&f](size_t i) -> uint64_t {
    return f.ring.FindNode(f.views[i & (kKeyCount - 1)]);
  });
}

// ---- Builds -----------------------------------------------------------------------------

void BM_Build(benchmark::State& state, size_t index) {
  const FleetSpec& spec = Specs()[index];
  uint64_t points = 0;
  for (auto _ : state) {
    Result<Ring> ring = BuildFleet(spec);
    if (!ring.ok()) return state.SkipWithError(ring.status().ToString().c_str());
    points = ring.value().num_points();
    benchmark::DoNotOptimize(points);
  }
  state.counters["points"] = static_cast<double>(points);
  state.counters["ns_per_point"] = benchmark::Counter(
      static_cast<double>(points) * 1e-9,
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// What a built ring holds: chash's bytes a point (columns, index, node
// table), the program's own for the same ring (RingStats::program_bytes,
// computed from its sources, not measured), and the process's resident
// growth while the ring is held (measured: includes what the builder's
// scratch left mapped in the allocator, so an upper bound on the ring's).
uint64_t ResidentBytes() { return measure::ProcStatusKb("VmRSS:") * 1024; }

void BM_Memory(benchmark::State& state, size_t index) {
  const FleetSpec& spec = Specs()[index];
  for (auto _ : state) {
    const uint64_t before = ResidentBytes();
    Result<Ring> ring = BuildFleet(spec);
    if (!ring.ok()) return state.SkipWithError(ring.status().ToString().c_str());
    const uint64_t after = ResidentBytes();
    const RingStats stats = ComputeRingStats(ring.value());
    const double points = static_cast<double>(stats.points > 0 ? stats.points : 1);
    state.counters["points"] = static_cast<double>(stats.points);
    state.counters["chash_column_bytes_per_point"] = stats.bytes_per_point;
    state.counters["chash_bytes_per_point"] =
        static_cast<double>(stats.column_bytes + stats.index_bytes + stats.other_bytes +
                            stats.collision_table_bytes) /
        points;
    state.counters["program_bytes_per_point"] = stats.program_bytes_per_point;
    state.counters["rss_growth_bytes_per_point"] =
        static_cast<double>(after > before ? after - before : 0) / points;
  }
}

// ---- libmemcached -------------------------------------------------------------------------

#if CHASH_BENCH_LIBMEMCACHED
struct Memcached {
  memcached_st* m = nullptr;
  Ring ring;
  std::vector<std::string> keys;
  std::vector<std::string_view> views;
  std::string error;
  ~Memcached() {
    if (m != nullptr) memcached_free(m);
  }
};

constexpr uint32_t kMemcachedServers = 100;

Memcached& GetMemcached() {
  static Memcached* fixture = [] {
    auto* f = new Memcached;
    f->m = memcached_create(nullptr);
    memcached_behavior_set(f->m, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1);
    RingBuilder builder({.flavor = Flavor::kKetamaMd5});
    for (uint32_t i = 0; i < kMemcachedServers; ++i) {
      const std::string host = "10.20." + std::to_string(i / 250) + "." + std::to_string(i % 250);
      memcached_server_add_with_weight(f->m, host.c_str(), 11212, 1);
      if (!builder.Add(host + ":11212", 1).ok()) f->error = "add";
    }
    Result<Ring> ring = std::move(builder).Build();
    if (!ring.ok()) {
      f->error = ring.status().ToString();
      return f;
    }
    f->ring = std::move(ring).value();
    f->keys = Keys(99);
    f->views.assign(f->keys.begin(), f->keys.end());
    for (size_t i = 0; i < kKeyCount; i += 3) {
      if (memcached_generate_hash(f->m, f->keys[i].data(), f->keys[i].size()) !=
          f->ring.FindNode(f->keys[i])) {
        f->error = "libmemcached and chash answer differently for " + f->keys[i];
        break;
      }
    }
    return f;
  }();
  return *fixture;
}

void BM_Libmemcached(benchmark::State& state) {
  Memcached& f = GetMemcached();
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  TimeEach(state, f.keys, kOps, [&f](const std::string& key) {
    return memcached_generate_hash(f.m, key.data(), key.size());
  });
}

void BM_LibmemcachedChash(benchmark::State& state, bool batch, std::string target) {
  Memcached& f = GetMemcached();
  const TargetScope scope(state, target);
  if (!f.error.empty()) return state.SkipWithError(f.error.c_str());
  if (!scope.ok()) return;
  std::vector<uint32_t> out(kOps);
  size_t pos = 0;
  uint32_t sink = 0;
  for (auto _ : state) {
    if (batch) {
      f.ring.FindNodes(std::span(f.views).subspan(pos, kOps), out);
      benchmark::DoNotOptimize(out.data());
    } else {
      for (size_t i = 0; i < kOps; ++i) sink += f.ring.FindNode(f.views[pos + i]);
    }
    pos = (pos + kOps) & (kKeyCount - 1);
  }
  benchmark::DoNotOptimize(sink);
  SetPerOp(state, kOps);
}
#endif

void RegisterAll() {
  const std::vector<std::string> targets = SupportedTargetNames();
  const auto reg = [](const std::string& name, auto fn) {
    return benchmark::RegisterBenchmark(name.c_str(), fn)->Unit(benchmark::kNanosecond);
  };
  const std::vector<FleetSpec>& specs = Specs();
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string row = std::string(specs[i].flavor) + "/" + specs[i].fleet;
    for (const std::string& t : targets) {
      reg("program/key/" + row + "/" + t, [i, t](benchmark::State& s) { BM_Key(s, i, t); });
      reg("program/key_batch1024/" + row + "/" + t,
          [i, t](benchmark::State& s) { BM_KeyBatch(s, i, t); });
    }
    reg("program/by_hash/" + row, [i](benchmark::State& s) { BM_Hash(s, i); });
    reg("program/by_hash_batch1024/" + row, [i](benchmark::State& s) { BM_HashBatch(s, i); });
    for (const auto& [bytes, name] :
         {std::pair{size_t{256} << 10, "256K"}, std::pair{size_t{4} << 20, "4M"}}) {
      reg("proxy/key/" + std::string(name) + "/" + row,
          [i, bytes = bytes](benchmark::State& s) { BM_Proxy(s, i, bytes); })
          ->Iterations(1);
    }
    reg("memory/" + row, [i](benchmark::State& s) { BM_Memory(s, i); })
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
    if (std::string(specs[i].fleet) == "large") {
      reg("build/" + row, [i](benchmark::State& s) { BM_Build(s, i); })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->Iterations(3);
    }
  }
#if CHASH_BENCH_LIBMEMCACHED
  reg("libmemcached/memcached_generate_hash/100", [](benchmark::State& s) { BM_Libmemcached(s); });
  for (const std::string& t : targets) {
    reg("libmemcached/chash_key/100/" + t,
        [t](benchmark::State& s) { BM_LibmemcachedChash(s, false, t); });
    reg("libmemcached/chash_key_batch1024/100/" + t,
        [t](benchmark::State& s) { BM_LibmemcachedChash(s, true, t); });
  }
#endif
}

}  // namespace
}  // namespace chash::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("chash_target", std::string(chash::ActiveTargetName()));
  chash::bench::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
