#include "config_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace chash::cli {

Result<std::string> ReadConfigFile(const std::string& path, size_t max_bytes, int& os_error) {
  os_error = 0;
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    os_error = errno;
    return Status(StatusCode::kIoError, std::strerror(os_error));
  }
  struct stat info {};
  Status status;
  std::string text;
  if (fstat(fd, &info) != 0) {
    status = Status(StatusCode::kIoError, std::strerror(errno));
  } else if (!S_ISREG(info.st_mode)) {
    status = Status(StatusCode::kBadArgument,
                    "not a regular file: chash reads only regular config files");
  } else if (static_cast<uint64_t>(info.st_size) > max_bytes) {
    status = Status(StatusCode::kBadArgument, "larger than " + std::to_string(max_bytes >> 20) +
                                                  " MiB: chash reads config files up to that size");
  } else {
    text.resize(static_cast<size_t>(info.st_size));
    size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        status = Status(StatusCode::kIoError, std::strerror(errno));
        break;
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    text.resize(got);
  }
  close(fd);
  if (!status.ok()) return status;
  return text;
}

}  // namespace chash::cli
