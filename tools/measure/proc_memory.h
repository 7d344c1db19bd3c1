// How the benchmarks (bench/) and `chash bench`/`chash demo` (tools/cli/)
// read this process's memory: one "Name:   N kB" field of a /proc/self
// file, in KiB, 0 if absent (Linux only). Header-only, for tools: not part
// of the library.
#ifndef CHASH_TOOLS_MEASURE_PROC_MEMORY_H_
#define CHASH_TOOLS_MEASURE_PROC_MEMORY_H_

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace chash::measure {

inline uint64_t ProcFieldKb(const char* file, const char* field) {
  std::ifstream status(file);
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(status, line)) {
    if (line.compare(0, n, field) == 0) return std::strtoull(line.c_str() + n, nullptr, 10);
  }
  return 0;
}

// /proc/self/status: "VmRSS:", "VmHWM:" (the peak resident set), "RssAnon:",
// "RssFile:", ...
inline uint64_t ProcStatusKb(const char* field) { return ProcFieldKb("/proc/self/status", field); }

// How much anonymous memory the kernel backs with 2 MiB pages.
inline uint64_t AnonHugePagesKb() {
  return ProcFieldKb("/proc/self/smaps_rollup", "AnonHugePages:");
}

}  // namespace chash::measure

#endif  // CHASH_TOOLS_MEASURE_PROC_MEMORY_H_
