#include "progress.h"

#include <unistd.h>

#include <cstdio>

namespace chash::cli {
namespace {

void WriteStderr(const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) return;  // a closed terminal: progress is best effort
    done += static_cast<size_t>(n);
  }
}

}  // namespace

bool ProgressEnabled() {
  static const bool enabled = ::isatty(STDERR_FILENO) == 1;
  return enabled;
}

ProgressPhase::ProgressPhase(std::string label)
    : enabled_(ProgressEnabled()),
      label_(std::move(label)),
      start_(std::chrono::steady_clock::now()) {
  if (!enabled_) return;
  Draw();  // now, on this thread: even a phase shorter than a tick is shown
  ticker_ = std::thread([this] { Run(); });
}

ProgressPhase::~ProgressPhase() {
  if (!enabled_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  ticker_.join();
}

void ProgressPhase::SetFraction(double fraction) { fraction_.store(fraction); }

void ProgressPhase::SetDetail(std::string detail) {
  std::lock_guard<std::mutex> lock(mutex_);
  detail_ = std::move(detail);
}

void ProgressPhase::Draw() {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line = "chash: " + label_;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!detail_.empty()) line += ", " + detail_;
  }
  char tail[64];
  const double fraction = fraction_.load();
  if (fraction >= 0) {
    std::snprintf(tail, sizeof tail, "... %.0f%%, %.1f s", 100 * fraction, seconds);
  } else {
    std::snprintf(tail, sizeof tail, "... %.1f s", seconds);
  }
  line += tail;
  const size_t width = line.size();
  if (width < drawn_) line.append(drawn_ - width, ' ');  // cover the longer previous line
  drawn_ = width;
  line.insert(line.begin(), '\r');  // (not "\r" + line: g++ 12 warns -Wrestrict there)
  WriteStderr(line);
}

void ProgressPhase::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stop_; })) {
    lock.unlock();
    Draw();
    lock.lock();
  }
  // Erase the line: the phase's result is the command's own output.
  std::string erase(drawn_ + 2, ' ');
  erase.front() = erase.back() = '\r';
  WriteStderr(erase);
}

}  // namespace chash::cli
