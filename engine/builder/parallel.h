// Threads for builds: how many, and a fork-join loop that never throws.
#ifndef CHASH_ENGINE_BUILD_PARALLEL_H_
#define CHASH_ENGINE_BUILD_PARALLEL_H_

#include <functional>

namespace chash::internal {

// Threads a build may use: the CPU's hardware threads unless set (a knob for
// tests and benchmarks; 0 restores the default). Rings come out bit-identical
// whatever the count.
void SetBuildThreads(unsigned threads) noexcept;
unsigned BuildThreads() noexcept;

// Runs work(0) .. work(tasks - 1), each once, on up to `threads` threads (the
// caller's included) and returns when all are done. If a thread cannot be
// started, its tasks run on the calling thread: never an exception. `work`
// must not throw.
void ParallelFor(unsigned threads, unsigned tasks, const std::function<void(unsigned)>& work) noexcept;

}  // namespace chash::internal

#endif  // CHASH_ENGINE_BUILD_PARALLEL_H_
