// A field of /proc/self/status in KiB ("VmRSS:", "VmHWM:", "RssAnon:", ...),
// 0 if absent: the benchmarks' memory figures (Linux only).
#ifndef CHASH_BENCH_PROC_STATUS_H_
#define CHASH_BENCH_PROC_STATUS_H_

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace chash::bench {

inline uint64_t ProcStatusKb(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(status, line)) {
    if (line.compare(0, n, field) == 0) return std::strtoull(line.c_str() + n + 1, nullptr, 10);
  }
  return 0;
}

}  // namespace chash::bench

#endif  // CHASH_BENCH_PROC_STATUS_H_
