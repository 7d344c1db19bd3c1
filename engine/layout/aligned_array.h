// AlignedArray<T>: an uninitialised, cache-line aligned array for the ring
// columns. Allocation failure is reported (empty array), never thrown.
#ifndef CHASH_ENGINE_LAYOUT_ALIGNED_ARRAY_H_
#define CHASH_ENGINE_LAYOUT_ALIGNED_ARRAY_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <type_traits>
#include <utility>

namespace chash::internal {

inline constexpr size_t kCacheLineBytes = 64;

template <typename T>
class AlignedArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  AlignedArray() noexcept = default;
  AlignedArray(AlignedArray&& other) noexcept { *this = std::move(other); }
  AlignedArray& operator=(AlignedArray&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  ~AlignedArray() { std::free(data_); }

  // Allocates `size` elements, rounded up to a whole cache line; contents are
  // indeterminate. Returns false (and holds nothing) if allocation fails.
  bool Allocate(size_t size) noexcept {
    std::free(data_);
    data_ = nullptr;
    size_ = bytes_ = 0;
    if (size == 0) return true;
    const size_t bytes = (size * sizeof(T) + kCacheLineBytes - 1) / kCacheLineBytes *
                         kCacheLineBytes;
    void* memory = std::aligned_alloc(kCacheLineBytes, bytes);
    if (memory == nullptr) return false;
    data_ = static_cast<T*>(memory);
    size_ = size;
    bytes_ = bytes;
    return true;
  }

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  size_t allocated_bytes() const noexcept { return bytes_; }
  T& operator[](size_t i) noexcept { return data_[i]; }
  const T& operator[](size_t i) const noexcept { return data_[i]; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
  size_t bytes_ = 0;
};

}  // namespace chash::internal

#endif  // CHASH_ENGINE_LAYOUT_ALIGNED_ARRAY_H_
