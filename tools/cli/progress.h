// Progress of long CLI phases (ring builds, exact shares, diffs) on stderr,
// only when stderr is a terminal: one line, rewritten in place with \r,
// "chash: building pingora-v1 ring (servers.txt): 204,800,000 points... 3.2 s",
// erased when the phase ends. When stderr is not a terminal nothing is
// written, so pipes, files and tests that read stderr see no progress.
#ifndef CHASH_TOOLS_CLI_PROGRESS_H_
#define CHASH_TOOLS_CLI_PROGRESS_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace chash::cli {

// Whether progress is shown: isatty(stderr), decided once per process.
bool ProgressEnabled();

// One phase: from construction to destruction a ticker thread redraws the
// line every 200 ms with the elapsed seconds (and the fraction, once
// SetFraction is called). Without a terminal it starts no thread and costs
// nothing. Not copyable; use from one thread (SetFraction and SetDetail are
// safe from any).
class ProgressPhase {
 public:
  explicit ProgressPhase(std::string label);
  ~ProgressPhase();
  ProgressPhase(const ProgressPhase&) = delete;
  ProgressPhase& operator=(const ProgressPhase&) = delete;

  // 0..1 of the phase done, shown as a percentage.
  void SetFraction(double fraction);
  // Text after the label ("K = 64, 7 of 13").
  void SetDetail(std::string detail);

 private:
  void Run();
  void Draw();

  const bool enabled_;
  const std::string label_;
  const std::chrono::steady_clock::time_point start_;
  std::atomic<double> fraction_{-1};
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string detail_;  // guarded by mutex_
  bool stop_ = false;   // guarded by mutex_
  size_t drawn_ = 0;    // width of the last line drawn (constructor, then ticker)
  std::thread ticker_;
};

}  // namespace chash::cli

#endif  // CHASH_TOOLS_CLI_PROGRESS_H_
