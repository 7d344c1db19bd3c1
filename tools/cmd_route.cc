// chash route: stream keys (one a line) to "KEY,ADDR" lines.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cli_common.h"
#include "commands.h"

namespace chash::cli {
namespace {

constexpr size_t kBatch = 1024;
constexpr size_t kReadChunk = size_t{1} << 20;

class OutputBuffer {
 public:
  ~OutputBuffer() { Flush(); }
  void Append(std::string_view bytes) {
    buffer_.append(bytes.data(), bytes.size());
    if (buffer_.size() >= kReadChunk) Flush();
  }
  void Append(char c) { buffer_.push_back(c); }
  void Flush() {
    if (!buffer_.empty()) std::fwrite(buffer_.data(), 1, buffer_.size(), stdout);
    buffer_.clear();
  }

 private:
  std::string buffer_;
};

// Routes a batch of keys and appends their output lines.
void RouteBatch(const Ring& ring, const std::vector<std::string_view>& keys,
                std::vector<uint32_t>& nodes, OutputBuffer& out) {
  nodes.resize(keys.size());
  ring.FindNodes(keys, nodes);
  for (size_t i = 0; i < keys.size(); ++i) {
    out.Append(keys[i]);
    out.Append(',');
    out.Append(ring.node(nodes[i]).address.written);
    out.Append('\n');
  }
}

}  // namespace

int RunRoute(const Args& args) {
  Result<Options> options = Options::Parse(args, {"servers", "mode", "multiple", "keys"}, {});
  if (!options.ok()) return Fail("route", options.status().message());
  Result<Ring> ring = LoadRingFromOptions(options.value());
  if (!ring.ok()) return Fail("route", ring.status().message());
  if (ring.value().empty()) {
    return Fail("route", "the ring has no points (no servers, or every weight is 0)");
  }

  int fd = STDIN_FILENO;
  std::string keys_name = "stdin";
  if (const auto path = options.value().Get("keys")) {
    fd = open(path->c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Fail("route", *path + ": " + std::strerror(errno));
    keys_name = *path;
  }

  // Lines may span reads: `pending` holds the unfinished tail of the last
  // read, and keys of a batch point into `buffer` until the batch is routed.
  std::string buffer;
  std::vector<std::string_view> keys;
  std::vector<uint32_t> nodes;
  OutputBuffer out;
  size_t consumed = 0;  // bytes of `buffer` already routed
  bool eof = false;
  while (!eof) {
    buffer.erase(0, consumed);
    consumed = 0;
    const size_t old_size = buffer.size();
    buffer.resize(old_size + kReadChunk);
    const ssize_t got = read(fd, buffer.data() + old_size, kReadChunk);
    if (got < 0) {
      if (errno == EINTR) {
        buffer.resize(old_size);
        continue;
      }
      return Fail("route", keys_name + ": " + std::strerror(errno));
    }
    buffer.resize(old_size + static_cast<size_t>(got));
    eof = got == 0;
    size_t line_start = 0;
    while (true) {
      const size_t newline = buffer.find('\n', line_start);
      if (newline == std::string::npos) break;
      keys.emplace_back(buffer.data() + line_start, newline - line_start);
      line_start = newline + 1;
      if (keys.size() == kBatch) {
        RouteBatch(ring.value(), keys, nodes, out);
        keys.clear();
      }
    }
    if (eof && line_start < buffer.size()) {  // a last line without '\n'
      keys.emplace_back(buffer.data() + line_start, buffer.size() - line_start);
      line_start = buffer.size();
    }
    RouteBatch(ring.value(), keys, nodes, out);
    keys.clear();
    consumed = line_start;
  }
  if (fd != STDIN_FILENO) close(fd);
  out.Flush();
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    return Fail("route", std::string("writing output: ") + std::strerror(errno));
  }
  return 0;
}

}  // namespace chash::cli
