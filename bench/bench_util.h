// The plumbing bench_chash, bench_programs and bench_snapshot share:
// fixtures made once and kept for the whole run, the ns_per_op counter, a
// forced Highway target, and the loops that time lookups over a table of
// inputs. Header-only.
#ifndef CHASH_BENCH_BENCH_UTIL_H_
#define CHASH_BENCH_BENCH_UTIL_H_

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chash/chash.h"
#include "dispatch_control.h"
#include "reference/reference_ring.h"

namespace chash::bench {

// The Value of `key`, made by make(value) on its first use and kept for the
// whole run (every benchmark of a ring shares its fixture). Each call site
// keeps its own values: `make` is a lambda, of a type of its own.
template <typename Value, typename Key, typename Make>
Value& MadeOnce(const Key& key, Make make) {
  static std::map<Key, std::unique_ptr<Value>> made;
  std::unique_ptr<Value>& slot = made[key];
  if (!slot) {
    slot = std::make_unique<Value>();
    make(*slot);
  }
  return *slot;
}

// Server i of the rings of bench_chash and bench_snapshot.
inline std::string NodeAddressText(uint32_t i) {
  return "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ":443";
}

// Servers 0 .. nodes - 1, each of `weight`: chash's ring of them (up to
// kHardMaxPoints points), and the reference's.
inline Result<Ring> BuildNodes(Flavor flavor, uint32_t multiple, uint32_t nodes, uint32_t weight) {
  RingBuilder builder({.flavor = flavor, .point_multiple = multiple, .max_points = kHardMaxPoints});
  for (uint32_t i = 0; i < nodes; ++i) {
    if (Status status = builder.Add(NodeAddressText(i), weight); !status.ok()) return status;
  }
  return std::move(builder).Build();
}
inline Result<reference::ReferenceRing> BuildReferenceNodes(Flavor flavor, uint32_t multiple,
                                                           uint32_t nodes, uint32_t weight) {
  std::vector<reference::Server> servers;
  for (uint32_t i = 0; i < nodes; ++i) servers.push_back({NodeAddressText(i), weight});
  return reference::ReferenceRing::Build(flavor, multiple, servers, kHardMaxPoints);
}

// The next value of a xorshift64 generator (13, 7, 17): random addresses
// for the memory floors, cheaper than any lookup.
inline uint64_t NextXorShift(uint64_t& x) {
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return x;
}

// Reports time per operation (ns) in the JSON, beside items_per_second.
inline void SetPerOp(benchmark::State& state, size_t ops_per_iteration) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * ops_per_iteration));
  state.counters["ns_per_op"] = benchmark::Counter(
      static_cast<double>(ops_per_iteration) * 1e-9,
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// Forces a Highway target for one benchmark, labelled with the target's
// name and `label_suffix`.
class TargetScope {
 public:
  TargetScope(benchmark::State& state, const std::string& target,
              const std::string& label_suffix = "") {
    ok_ = ForceTarget(target).ok() && ActiveTargetName() == target;
    if (!ok_) state.SkipWithError(("cannot force target " + target).c_str());
    state.SetLabel(target + label_suffix);
  }
  ~TargetScope() { (void)ForceTarget(""); }
  TargetScope(const TargetScope&) = delete;
  TargetScope& operator=(const TargetScope&) = delete;
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
};

// Times lookup(input), `ops` inputs an iteration, walking `inputs` (a power
// of two of them) round and round; the answers go into a sink.
template <typename Input, typename Lookup>
void TimeEach(benchmark::State& state, const std::vector<Input>& inputs, size_t ops,
              Lookup lookup) {
  const size_t mask = inputs.size() - 1;
  size_t pos = 0;
  uint32_t sink = 0;
  for (auto _ : state) {
    const Input* q = inputs.data() + pos;
    for (size_t i = 0; i < ops; ++i) sink += lookup(q[i]);
    pos = (pos + ops) & mask;
  }
  benchmark::DoNotOptimize(sink);
  SetPerOp(state, ops);
}

// batch(inputs, out) on all of `inputs` must answer `expected` (else the
// benchmark fails with `mismatch`); then it is timed on windows of `ops`
// inputs, walking `inputs` (a power of two of them) round and round.
template <typename Input, typename Batch>
void TimeBatches(benchmark::State& state, const std::vector<Input>& inputs,
                 const std::vector<uint32_t>& expected, size_t ops, const char* mismatch,
                 Batch batch) {
  std::vector<uint32_t> out(inputs.size());
  batch(std::span<const Input>(inputs), std::span<uint32_t>(out));
  if (out != expected) return state.SkipWithError(mismatch);
  const size_t mask = inputs.size() - 1;
  size_t pos = 0;
  for (auto _ : state) {
    batch(std::span<const Input>(inputs).subspan(pos, ops), std::span<uint32_t>(out).first(ops));
    benchmark::DoNotOptimize(out.data());
    pos = (pos + ops) & mask;
  }
  SetPerOp(state, ops);
}

}  // namespace chash::bench

#endif  // CHASH_BENCH_BENCH_UTIL_H_
