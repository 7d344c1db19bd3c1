// AlignedArray<T>: an uninitialised, cache-line aligned array for the ring
// columns. Allocation failure is reported (empty array), never thrown.
//
// Arrays of kHugePageThreshold bytes or more are mapped directly from the OS,
// 2 MiB-aligned and advised as transparent huge pages (madvise MADV_HUGEPAGE):
// a lookup in a 100 MB ring then costs no page walk that misses the TLB (2
// MiB pages: 60 entries for 120 MB; 4 KiB pages: 30,000). The mapping ends at
// the array's last 4 KiB page, so the kernel never backs a 2 MiB page past
// the end. Smaller arrays come from aligned_alloc (the process allocator:
// mimalloc in the tools and benchmarks).
#ifndef CHASH_ENGINE_LAYOUT_ALIGNED_ARRAY_H_
#define CHASH_ENGINE_LAYOUT_ALIGNED_ARRAY_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <type_traits>
#include <utility>

namespace chash::internal {

inline constexpr size_t kCacheLineBytes = 64;
inline constexpr size_t kHugePageBytes = size_t{2} << 20;
inline constexpr size_t kHugePageThreshold = size_t{4} << 20;

// Whether large arrays are advised as huge pages (default true). A knob for
// benchmarks that measure with and without; affects later allocations only.
void SetHugePagesEnabled(bool enabled) noexcept;
bool HugePagesEnabled() noexcept;

// Fault injection (tests/alloc_failure_test.cc): when set, called before
// each block allocation; true makes that allocation fail as if the memory
// could not be had. The blocks come from aligned_alloc or mmap, which a
// test's operator new cannot see. Null by default (one relaxed load an
// allocation).
using BlockAllocationFailureHook = bool (*)() noexcept;
void SetBlockAllocationFailureHook(BlockAllocationFailureHook hook) noexcept;

// Raw storage behind AlignedArray. `bytes` is a multiple of kCacheLineBytes.
struct AlignedBlock {
  void* data = nullptr;
  size_t bytes = 0;         // usable bytes
  size_t mapped_bytes = 0;  // > 0: an OS mapping of this many bytes
  bool borrowed = false;    // memory owned elsewhere (a mapped snapshot): not freed
};
AlignedBlock AllocateAlignedBlock(size_t bytes) noexcept;
void FreeAlignedBlock(AlignedBlock& block) noexcept;
// Gives the pages of a mapped block past `bytes` back to the OS; a no-op for
// heap blocks, which keep their size.
void ShrinkAlignedBlock(AlignedBlock& block, size_t bytes) noexcept;

template <typename T>
class AlignedArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  AlignedArray() noexcept = default;
  AlignedArray(AlignedArray&& other) noexcept { *this = std::move(other); }
  AlignedArray& operator=(AlignedArray&& other) noexcept {
    std::swap(block_, other.block_);
    std::swap(size_, other.size_);
    return *this;
  }
  ~AlignedArray() { FreeAlignedBlock(block_); }

  // Allocates `size` elements, rounded up to a whole cache line; contents are
  // indeterminate. Returns false (and holds nothing) if allocation fails.
  bool Allocate(size_t size) noexcept {
    FreeAlignedBlock(block_);
    size_ = 0;
    if (size == 0) return true;
    block_ = AllocateAlignedBlock(RoundedBytes(size));
    if (block_.data == nullptr) return false;
    size_ = size;
    return true;
  }

  // Takes over the memory of `other` (an array of another element type) as
  // `size` elements of T, giving back what lies past them when the memory is
  // an OS mapping. The caller has written every element it will read.
  template <typename U>
  void AdoptMemory(AlignedArray<U>&& other, size_t size) noexcept {
    FreeAlignedBlock(block_);
    block_ = other.ReleaseBlock();
    size_ = size;
    ShrinkAlignedBlock(block_, RoundedBytes(size));
  }

  // Points at `size` elements owned by someone else (the pages of a mapped
  // snapshot file, read-only: the ring never writes its columns after the
  // build). Freed by nobody here; the owner outlives this array.
  void Borrow(const T* data, size_t size) noexcept {
    FreeAlignedBlock(block_);
    block_.data = const_cast<T*>(data);
    block_.bytes = RoundedBytes(size);
    block_.borrowed = true;
    size_ = size;
  }

  AlignedBlock ReleaseBlock() noexcept {
    const AlignedBlock block = block_;
    block_ = AlignedBlock();
    size_ = 0;
    return block;
  }

  T* data() noexcept { return static_cast<T*>(block_.data); }
  const T* data() const noexcept { return static_cast<const T*>(block_.data); }
  size_t size() const noexcept { return size_; }
  // Bytes this array holds: whole cache lines, or for an OS mapping whole 4
  // KiB pages.
  size_t allocated_bytes() const noexcept {
    return block_.mapped_bytes ? block_.mapped_bytes : block_.bytes;
  }
  bool is_os_mapping() const noexcept { return block_.mapped_bytes != 0; }
  T& operator[](size_t i) noexcept { return data()[i]; }
  const T& operator[](size_t i) const noexcept { return data()[i]; }

 private:
  static size_t RoundedBytes(size_t size) noexcept {
    return (size * sizeof(T) + kCacheLineBytes - 1) / kCacheLineBytes * kCacheLineBytes;
  }

  AlignedBlock block_;
  size_t size_ = 0;
};

}  // namespace chash::internal

#endif  // CHASH_ENGINE_LAYOUT_ALIGNED_ARRAY_H_
