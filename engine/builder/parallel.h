// Threads for builds and loads: how many, and a fork-join loop that never
// throws.
#ifndef CHASH_ENGINE_BUILD_PARALLEL_H_
#define CHASH_ENGINE_BUILD_PARALLEL_H_

#include <cstdint>
#include <functional>

namespace chash::internal {

// The most threads a default may take, and the most a caller may ask for.
inline constexpr unsigned kMaxDefaultThreads = 64;
inline constexpr unsigned kMaxThreads = 256;

// The CPUs this process may run on: its affinity mask, bounded by its
// cgroup's CPU quota (v2 cpu.max up the hierarchy, or v1 cfs_quota_us),
// 1..kMaxDefaultThreads. Computed once per process (a few small reads of
// /proc and /sys at the first call); a container limited to 2 CPUs on a
// 64-core host gets 2, not 64.
unsigned DefaultThreads() noexcept;
// The same count, computed now (not cached): for tests that change the
// affinity mask.
unsigned UsableCpus() noexcept;

// Threads a build or load may use: the count SetBuildThreads set (a knob for
// tests and benchmarks; 0 restores the default), else DefaultThreads().
// Rings and digests come out bit-identical whatever the count.
void SetBuildThreads(unsigned threads) noexcept;
unsigned BuildThreads() noexcept;
// A caller's explicit count (1..kMaxThreads; more counts as kMaxThreads),
// or BuildThreads() for 0.
unsigned ThreadsFor(uint32_t requested) noexcept;

// Runs work(0) .. work(tasks - 1), each once, on up to `threads` threads (the
// caller's included) and returns when all are done. If a thread cannot be
// started, its tasks run on the calling thread: never an exception. `work`
// must not throw.
void ParallelFor(unsigned threads, unsigned tasks, const std::function<void(unsigned)>& work) noexcept;

}  // namespace chash::internal

#endif  // CHASH_ENGINE_BUILD_PARALLEL_H_
