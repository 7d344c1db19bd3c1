#include "layout/aligned_array.h"

#include <atomic>
#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#define CHASH_HAVE_MMAP 1
#else
#define CHASH_HAVE_MMAP 0
#endif

namespace chash::internal {
namespace {

std::atomic<bool> huge_pages_enabled{true};
std::atomic<BlockAllocationFailureHook> block_failure_hook{nullptr};

constexpr size_t kPageBytes = 4096;

constexpr size_t RoundUp(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace

void SetHugePagesEnabled(bool enabled) noexcept {
  huge_pages_enabled.store(enabled, std::memory_order_relaxed);
}
bool HugePagesEnabled() noexcept { return huge_pages_enabled.load(std::memory_order_relaxed); }

void SetBlockAllocationFailureHook(BlockAllocationFailureHook hook) noexcept {
  block_failure_hook.store(hook, std::memory_order_relaxed);
}

AlignedBlock AllocateAlignedBlock(size_t bytes) noexcept {
  AlignedBlock block;
  if (const BlockAllocationFailureHook fail = block_failure_hook.load(std::memory_order_relaxed);
      fail != nullptr && fail()) {
    return block;
  }
#if CHASH_HAVE_MMAP
  if (bytes >= kHugePageThreshold) {
    // Over-map by one huge page, then trim both ends so that the block starts
    // on a 2 MiB boundary and ends on the page holding its last byte.
    const size_t mapped = RoundUp(bytes, kPageBytes);
    const size_t reserve = mapped + kHugePageBytes;
    void* raw = mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (raw == MAP_FAILED) return block;
    const uintptr_t start = RoundUp(reinterpret_cast<uintptr_t>(raw), kHugePageBytes);
    const uintptr_t end = start + mapped;
    const uintptr_t raw_end = reinterpret_cast<uintptr_t>(raw) + reserve;
    if (start > reinterpret_cast<uintptr_t>(raw)) {
      munmap(raw, start - reinterpret_cast<uintptr_t>(raw));
    }
    if (raw_end > end) munmap(reinterpret_cast<void*>(end), raw_end - end);
    if (HugePagesEnabled()) madvise(reinterpret_cast<void*>(start), mapped, MADV_HUGEPAGE);
    block.data = reinterpret_cast<void*>(start);
    block.bytes = bytes;
    block.mapped_bytes = mapped;
    return block;
  }
#endif
  block.data = std::aligned_alloc(kCacheLineBytes, bytes);
  if (block.data != nullptr) block.bytes = bytes;
  return block;
}

void FreeAlignedBlock(AlignedBlock& block) noexcept {
  if (block.borrowed) {
    block = AlignedBlock();
    return;
  }
#if CHASH_HAVE_MMAP
  if (block.mapped_bytes != 0) {
    munmap(block.data, block.mapped_bytes);
    block = AlignedBlock();
    return;
  }
#endif
  std::free(block.data);
  block = AlignedBlock();
}

void ShrinkAlignedBlock(AlignedBlock& block, size_t bytes) noexcept {
  if (bytes >= block.bytes || block.borrowed) return;
#if CHASH_HAVE_MMAP
  if (block.mapped_bytes != 0) {
    const size_t keep = RoundUp(bytes, kPageBytes);
    if (keep == 0) {
      FreeAlignedBlock(block);
      return;
    }
    if (keep < block.mapped_bytes) {
      munmap(static_cast<char*>(block.data) + keep, block.mapped_bytes - keep);
      block.mapped_bytes = keep;
    }
    block.bytes = bytes;
  }
#endif
}

}  // namespace chash::internal
