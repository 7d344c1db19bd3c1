// The proxy-shaped timing of bench_chash and bench_programs: one lookup at
// a time between sweeps of other memory (what a proxy's request work does
// to the caches), each timed on its own with steady_clock; every fourth,
// the clock around nothing, whose mean is subtracted. Samples over 20 us
// are a preemption on a shared machine, not a lookup: they leave the means
// and are counted in `dropped`.
#ifndef CHASH_BENCH_COLD_LOOKUPS_H_
#define CHASH_BENCH_COLD_LOOKUPS_H_

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace chash::bench {

// pollute() and lookup(i) return a value folded into a sink (so neither is
// optimized away); i counts lookups across iterations. Sets the counters
// ns_per_op (mean lookup minus the clock), clock_ns, median_ns and dropped.
template <class Pollute, class Lookup>
void TimeColdLookups(benchmark::State& state, size_t lookups, Pollute&& pollute, Lookup&& lookup) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> lookup_ns;
  std::vector<double> clock_ns;
  lookup_ns.reserve(lookups);
  clock_ns.reserve(lookups / 4 + 1);
  uint64_t sink = 0;
  size_t base = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < lookups; ++i) {
      sink += pollute();
      const auto t0 = Clock::now();
      sink += lookup(base + i);
      const auto t1 = Clock::now();
      lookup_ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
      if ((i & 3) == 0) {
        sink += pollute();
        const auto c0 = Clock::now();
        const auto c1 = Clock::now();
        clock_ns.push_back(std::chrono::duration<double, std::nano>(c1 - c0).count());
      }
    }
    base += lookups;
  }
  benchmark::DoNotOptimize(sink);
  double dropped = 0;
  const auto mean = [&dropped](const std::vector<double>& v) {
    double sum = 0;
    size_t kept = 0;
    for (const double ns : v) {
      if (ns < 20000) {
        sum += ns;
        ++kept;
      }
    }
    dropped += static_cast<double>(v.size() - kept);
    return kept ? sum / static_cast<double>(kept) : 0;
  };
  const double clock = mean(clock_ns);
  state.counters["ns_per_op"] = mean(lookup_ns) - clock;
  state.counters["clock_ns"] = clock;
  state.counters["dropped"] = dropped;
  if (lookup_ns.empty()) return;
  std::nth_element(lookup_ns.begin(), lookup_ns.begin() + lookup_ns.size() / 2, lookup_ns.end());
  state.counters["median_ns"] = lookup_ns[lookup_ns.size() / 2] - clock;
}

}  // namespace chash::bench

#endif  // CHASH_BENCH_COLD_LOOKUPS_H_
