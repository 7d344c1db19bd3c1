// Owners of an operating-system resource (a file descriptor, a memory
// mapping), released on every path out: errors, early returns, exceptions.
// Move-only; nothing here allocates or throws.
#ifndef CHASH_ENGINE_UTIL_OS_HANDLES_H_
#define CHASH_ENGINE_UTIL_OS_HANDLES_H_

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <utility>

namespace chash::internal {

// One file descriptor, -1 when it holds none.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  // Closes what it held (a close error is lost: use Close where it matters)
  // and holds `fd`.
  void Reset(int fd = -1) noexcept {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }
  // Closes now and answers close's errno, 0 on success: for a file just
  // written, whose failed close can mean lost data.
  int Close() noexcept {
    const int fd = std::exchange(fd_, -1);
    return fd < 0 || close(fd) == 0 ? 0 : errno;
  }

 private:
  int fd_ = -1;
};

// One mmap'ed range, empty (data() == nullptr) when it holds none.
class UniqueMapping {
 public:
  UniqueMapping() = default;
  UniqueMapping(UniqueMapping&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  UniqueMapping& operator=(UniqueMapping&& other) noexcept {
    if (this != &other) {
      Reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  UniqueMapping(const UniqueMapping&) = delete;
  UniqueMapping& operator=(const UniqueMapping&) = delete;
  ~UniqueMapping() { Reset(); }

  void* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  // Unmaps what it held and holds mmap's answer `data` of `size` bytes;
  // MAP_FAILED is taken as nothing.
  void Reset(void* data = nullptr, size_t size = 0) noexcept {
    if (data_ != nullptr) munmap(data_, size_);
    data_ = data == MAP_FAILED ? nullptr : data;
    size_ = data_ == nullptr ? 0 : size;
  }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace chash::internal

#endif  // CHASH_ENGINE_UTIL_OS_HANDLES_H_
