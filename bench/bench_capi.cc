// What the C API costs over the C++ one, in one run: the same lookups through
// chash_ring_* (chash_c.h) and through chash::Ring, both called across
// libchash.so as an embedding program calls them (this benchmark links the
// shared library only).
//
//   single by hash   chash_ring_find_hash       vs Ring::FindNodeByHash
//   single by key    chash_ring_find            vs Ring::FindNode        (30-byte keys)
//   batch of keys    chash_ring_find_keys       vs Ring::FindNodes       (1,024 a call)
//   batch of hashes  chash_ring_find_hashes     vs Ring::FindNodesByHash (1,024 a call)
//
// Rings: pingora-v2, multiple 16, of 100 nodes x weight 10 (16,000 points:
// cache-resident, where a call's own overhead shows most) and 2,048 nodes x
// weight 625 (20,480,000 points, the README's fleet). Each fixture first
// checks that both APIs answer the same node for every probe
// (SkipWithError otherwise).
//
//   taskset -c 1 build/bench/bench_capi --benchmark_repetitions=5
//       --benchmark_enable_random_interleaving=true --benchmark_min_time=0.2
//       > bench/results/$(tools/dev/lib/cpu-slug)/bench_capi.txt
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chash/chash.h"
#include "chash/chash_c.h"

namespace {

constexpr size_t kProbes = 1 << 16;  // a power of two: probes are indexed by a mask
constexpr size_t kBatch = 1024;

struct Fixture {
  chash::Ring cpp;
  chash_ring* c = nullptr;
  std::vector<uint32_t> hashes;
  std::vector<std::string> key_storage;
  std::vector<std::string_view> keys;
  std::vector<const char*> key_pointers;
  std::vector<size_t> key_lengths;
  std::string error;  // why the fixture is unusable, "" if it is fine
};

Fixture* Get(uint32_t nodes, uint32_t weight) {
  static std::map<std::pair<uint32_t, uint32_t>, Fixture> fixtures;
  const auto [it, inserted] = fixtures.try_emplace({nodes, weight});
  Fixture& f = it->second;
  if (!inserted) return &f;

  chash::RingBuilder builder({.flavor = chash::Flavor::kPingoraV2, .point_multiple = 16});
  chash_builder* c_builder = nullptr;
  if (chash_builder_new(CHASH_FLAVOR_PINGORA_V2, 16, &c_builder) != CHASH_OK) {
    f.error = "chash_builder_new failed";
    return &f;
  }
  for (uint32_t i = 0; i < nodes; ++i) {
    const std::string address = "10." + std::to_string(i / 65536) + "." +
                                std::to_string(i / 256 % 256) + "." + std::to_string(i % 256) +
                                ":443";
    if (!builder.Add(address, weight).ok() ||
        chash_builder_add(c_builder, address.data(), address.size(), weight) != CHASH_OK) {
      f.error = "add failed";
    }
  }
  chash::Result<chash::Ring> ring = std::move(builder).Build();
  if (!ring.ok() || chash_builder_build(c_builder, &f.c) != CHASH_OK) {
    f.error = "build failed";
    return &f;
  }
  f.cpp = std::move(ring).value();

  std::mt19937_64 rng(42);
  for (size_t i = 0; i < kProbes; ++i) {
    f.hashes.push_back(static_cast<uint32_t>(rng()));
    char key[31];
    std::snprintf(key, sizeof(key), "/objects/%016llx/%04u", static_cast<unsigned long long>(rng()),
                  static_cast<unsigned>(i % 10000));
    f.key_storage.emplace_back(key, 30);
  }
  for (const std::string& key : f.key_storage) {
    f.keys.emplace_back(key);
    f.key_pointers.push_back(key.data());
    f.key_lengths.push_back(key.size());
  }
  // Both APIs answer alike for every probe, single and batched.
  std::vector<uint32_t> c_batch(kProbes), cpp_batch(kProbes);
  chash_ring_find_keys(f.c, f.key_pointers.data(), f.key_lengths.data(), kProbes, c_batch.data());
  f.cpp.FindNodes(f.keys, cpp_batch);
  for (size_t i = 0; i < kProbes && f.error.empty(); ++i) {
    const uint32_t by_hash = f.cpp.FindNodeByHash(f.hashes[i]);
    if (chash_ring_find_hash(f.c, f.hashes[i]) != by_hash ||
        chash_ring_find(f.c, f.keys[i].data(), f.keys[i].size()) != cpp_batch[i] ||
        c_batch[i] != cpp_batch[i] || by_hash == chash::Ring::kNoNode) {
      f.error = "the C and C++ APIs disagree at probe " + std::to_string(i);
    }
  }
  return &f;
}

// The fixture of the benchmark's {nodes, weight}, or null (the benchmark
// then fails) when it is unusable.
const Fixture* Usable(benchmark::State& state) {
  const Fixture* f =
      Get(static_cast<uint32_t>(state.range(0)), static_cast<uint32_t>(state.range(1)));
  if (f->error.empty()) return f;
  state.SkipWithError(f->error.c_str());
  return nullptr;
}

// Registers NAME: lookup(fixture, probe index), one probe an iteration.
template <typename Lookup>
benchmark::internal::Benchmark* Single(const char* name, Lookup lookup) {
  return benchmark::RegisterBenchmark(name, [lookup](benchmark::State& state) {
    const Fixture* f = Usable(state);
    if (f == nullptr) return;
    size_t i = 0;
    for (auto _ : state) benchmark::DoNotOptimize(lookup(*f, i++ & (kProbes - 1)));
    state.SetItemsProcessed(state.iterations());
  });
}

// Registers NAME: batch(fixture, first probe, out), kBatch probes an
// iteration.
template <typename Batch>
benchmark::internal::Benchmark* Batches(const char* name, Batch batch) {
  return benchmark::RegisterBenchmark(name, [batch](benchmark::State& state) {
    const Fixture* f = Usable(state);
    if (f == nullptr) return;
    std::vector<uint32_t> out(kBatch);
    size_t begin = 0;
    for (auto _ : state) {
      batch(*f, begin, out.data());
      benchmark::DoNotOptimize(out.data());
      begin = (begin + kBatch) & (kProbes - 1);
    }
    state.SetItemsProcessed(state.iterations() * kBatch);
  });
}

// Each lookup through C++ (_Cpp) and through C (_C), on each ring: {nodes,
// weight} of 16,000 and 20,480,000 points.
void RegisterAll() {
  using F = const Fixture&;  // the lookups' first parameter
  std::vector<benchmark::internal::Benchmark*> all = {
      Single("BM_Hash_Cpp", [](F f, size_t i) { return f.cpp.FindNodeByHash(f.hashes[i]); }),
      Single("BM_Hash_C", [](F f, size_t i) { return chash_ring_find_hash(f.c, f.hashes[i]); }),
      Single("BM_Key_Cpp", [](F f, size_t i) { return f.cpp.FindNode(f.keys[i]); }),
      Single("BM_Key_C",
             [](F f, size_t i) {
               return chash_ring_find(f.c, f.key_pointers[i], f.key_lengths[i]);
             }),
      Batches("BM_KeyBatch_Cpp",
              [](F f, size_t begin, uint32_t* out) {
                f.cpp.FindNodes(std::span(f.keys).subspan(begin, kBatch), std::span(out, kBatch));
              }),
      Batches("BM_KeyBatch_C",
              [](F f, size_t begin, uint32_t* out) {
                chash_ring_find_keys(f.c, f.key_pointers.data() + begin,
                                     f.key_lengths.data() + begin, kBatch, out);
              }),
      Batches("BM_HashBatch_Cpp",
              [](F f, size_t begin, uint32_t* out) {
                f.cpp.FindNodesByHash(std::span(f.hashes).subspan(begin, kBatch),
                                      std::span(out, kBatch));
              }),
      Batches("BM_HashBatch_C",
              [](F f, size_t begin, uint32_t* out) {
                chash_ring_find_hashes(f.c, f.hashes.data() + begin, kBatch, out);
              }),
  };
  for (benchmark::internal::Benchmark* b : all) {
    b->ArgNames({"nodes", "weight"})->Args({100, 10})->Args({2048, 625});
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
