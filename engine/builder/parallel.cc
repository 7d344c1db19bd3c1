#include "builder/parallel.h"

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>
#include <vector>

namespace chash::internal {
namespace {

std::atomic<unsigned> build_threads{0};

}  // namespace

void SetBuildThreads(unsigned threads) noexcept {
  build_threads.store(threads, std::memory_order_relaxed);
}

unsigned BuildThreads() noexcept {
  const unsigned set = build_threads.load(std::memory_order_relaxed);
  if (set != 0) return set;
  return std::clamp(std::thread::hardware_concurrency(), 1u, 64u);
}

void ParallelFor(unsigned threads, unsigned tasks,
                 const std::function<void(unsigned)>& work) noexcept {
  std::atomic<unsigned> next{0};
  const auto drain = [&] {
    for (unsigned task; (task = next.fetch_add(1, std::memory_order_relaxed)) < tasks;) {
      work(task);
    }
  };
  std::vector<std::thread> pool;
  try {
    const unsigned helpers = std::min(threads, tasks) - (threads > 0 && tasks > 0 ? 1 : 0);
    pool.reserve(helpers);
    for (unsigned t = 0; t < helpers; ++t) pool.emplace_back(drain);
  } catch (...) {
    // std::system_error or std::bad_alloc: fewer threads, same work.
  }
  drain();
  for (std::thread& thread : pool) thread.join();
}

}  // namespace chash::internal
