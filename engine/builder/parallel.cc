#include "builder/parallel.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace chash::internal {
namespace {

std::atomic<unsigned> build_threads{0};

// The cgroup v2 CPU quota of this process ("max" or "QUOTA PERIOD" in
// cpu.max of its own cgroup, then of each parent up to the root), or v1's
// cfs_quota_us / cfs_period_us, rounded up; 0 if there is none. Reads a few
// small files under /proc and /sys: called once per process.
unsigned CgroupCpuQuota() noexcept {
  try {
    std::ifstream cgroups("/proc/self/cgroup");
    std::string line;
    std::string v2_path;
    std::string v1_path;
    while (std::getline(cgroups, line)) {
      if (line.rfind("0::", 0) == 0) v2_path = line.substr(3);
      const size_t cpu = line.find(":cpu,");
      const size_t cpu_only = line.find(":cpu:");
      if (cpu != std::string::npos || cpu_only != std::string::npos) {
        v1_path = line.substr(line.find(':', line.find(':') + 1) + 1);
      }
    }
    unsigned best = 0;
    const auto consider = [&best](double quota, double period) {
      if (quota <= 0 || period <= 0) return;
      const unsigned cpus = static_cast<unsigned>(std::max(1.0, std::ceil(quota / period)));
      best = best == 0 ? cpus : std::min(best, cpus);
    };
    if (!v2_path.empty()) {
      for (std::string path = v2_path;; path = path.substr(0, path.rfind('/'))) {
        std::ifstream max("/sys/fs/cgroup" + path + "/cpu.max");
        std::string quota;
        double period = 0;
        if (max >> quota >> period && quota != "max") consider(std::stod(quota), period);
        if (path.empty() || path == "/") break;
      }
    }
    if (!v1_path.empty()) {
      for (const std::string root : {"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"}) {
        std::ifstream quota_file(root + v1_path + "/cpu.cfs_quota_us");
        std::ifstream period_file(root + v1_path + "/cpu.cfs_period_us");
        double quota = 0, period = 0;
        if (quota_file >> quota && period_file >> period) consider(quota, period);
      }
    }
    return best;
  } catch (...) {
    return 0;  // no quota known: the affinity mask alone bounds the threads
  }
}

}  // namespace

unsigned UsableCpus() noexcept {
  unsigned cpus = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = static_cast<unsigned>(CPU_COUNT(&set));
  if (cpus == 0) cpus = std::thread::hardware_concurrency();
  if (const unsigned quota = CgroupCpuQuota(); quota != 0) cpus = std::min(cpus, quota);
  return std::clamp(cpus, 1u, kMaxDefaultThreads);
}

unsigned DefaultThreads() noexcept {
  static const unsigned threads = UsableCpus();
  return threads;
}

void SetBuildThreads(unsigned threads) noexcept {
  build_threads.store(threads, std::memory_order_relaxed);
}

unsigned BuildThreads() noexcept {
  const unsigned set = build_threads.load(std::memory_order_relaxed);
  return set != 0 ? set : DefaultThreads();
}

unsigned ThreadsFor(uint32_t requested) noexcept {
  return requested != 0 ? std::min<uint32_t>(requested, kMaxThreads) : BuildThreads();
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
