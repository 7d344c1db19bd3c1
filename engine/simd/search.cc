// The lookup kernels of every Highway target, and chash's own dispatch
// among them: foreach_target.h compiles this file once per target (each in
// its namespace N_<TARGET>); below, a constant table lists each compiled
// target's kernels, and one atomic pointer names the target lookups run on.
// Single lookups read a cached function pointer; a batch reads the target
// once and runs every key of the batch there.
//
// Highway's own dispatch (HWY_DYNAMIC_DISPATCH and its global chosen
// target) is not used: forcing a target through it meant
// hwy::SetSupportedTargetsForTest and GetChosenTarget().DeInit(), which
// rewrite process-wide state that other threads' lookups (and VQSort) read.
// Here forcing a target is two atomic stores, safe while lookups run.
#include "simd/search.h"

#include <iterator>
#include <string>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/search.cc"
// clang-format off: foreach_target.h first, then the -inl headers it re-includes
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "simd/search-inl.h"
#include "hash/md5_lanes-inl.h"
// clang-format on
#include "chash/crc32.h"
#include "hash/crc32_internal.h"
#include "hash/crc32_pclmul.h"

HWY_BEFORE_NAMESPACE();
namespace chash {
namespace HWY_NAMESPACE {

CHASH_LINE_ALIGNED uint32_t LowerBoundSlotImpl(const internal::SearchView& view, uint32_t x) {
  return LowerBoundSlot(view, x);
}

// A key's CRC32 inside the kernel: the target's instruction set includes
// PCLMULQDQ from SSE4 on (Highway's SSE4 target requires it), so short keys
// fold inline; long ones (and other targets) call the best implementation.
HWY_INLINE uint32_t KeyCrc32(const char* data, size_t len) {
#if HWY_ARCH_X86_64 && HWY_TARGET <= HWY_SSE4 && !defined(HWY_DISABLE_PCLMUL_AES)
  if (len < internal::pclmul::kVpclmulMinBytes) {
    return ~internal::pclmul::PclmulUpdate(0xFFFFFFFFu, reinterpret_cast<const uint8_t*>(data),
                                           len);
  }
#endif
  return Crc32Extend(0, data, len);
}

CHASH_LINE_ALIGNED uint32_t FindNodeByKeyImpl(const internal::SearchView& view, const char* data,
                                              size_t len) {
  return view.node[LowerBoundSlot(view, KeyCrc32(data, len))];
}

void FindNodesByHashImpl(const internal::SearchView& view, const uint32_t* HWY_RESTRICT hashes,
                         size_t count, uint32_t* HWY_RESTRICT out) {
  FindNodesByHashSpan(view, hashes, count, out);
}

void FindSlotsByHashImpl(const internal::SearchView& view, const uint32_t* HWY_RESTRICT hashes,
                         size_t count, uint32_t* HWY_RESTRICT out) {
  FindNodesByHashSpan</*kSlots=*/true>(view, hashes, count, out);
}

// CRCs a chunk of keys at a time (interleaved, see Crc32Keys), then descends
// with them as with FindNodesByHash.
void FindNodesImpl(const internal::SearchView& view, const std::string_view* HWY_RESTRICT keys,
                   size_t count, uint32_t* HWY_RESTRICT out) {
  constexpr size_t kChunk = 64;
  uint32_t hashes[kChunk];
  for (size_t i = 0; i < count; i += kChunk) {
    const size_t chunk = count - i < kChunk ? count - i : kChunk;
    internal::Crc32Keys(keys + i, chunk, hashes);
    FindNodesByHashSpan(view, hashes, chunk, out + i);
  }
}

void Md5MessagesImpl(const std::string_view* HWY_RESTRICT messages, size_t count,
                     uint32_t* HWY_RESTRICT words) {
  md5::Md5Messages(messages, count, words);
}

}  // namespace HWY_NAMESPACE
}  // namespace chash
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "chash/dispatch.h"
#include "dispatch_control.h"

namespace chash {
namespace internal {

namespace {

using FindNodesByHashFunction = void (*)(const SearchView&, const uint32_t*, size_t, uint32_t*);
using FindNodesFunction = void (*)(const SearchView&, const std::string_view*, size_t,
                                   uint32_t*);
using Md5MessagesFunction = void (*)(const std::string_view*, size_t, uint32_t*);

struct TargetKernels {
  int64_t target;  // a Highway target bit (HWY_AVX2, ...)
  LowerBoundSlotFunction lower_bound_slot;
  FindNodeByKeyFunction find_node_by_key;
  FindNodesByHashFunction find_nodes_by_hash;
  FindNodesFunction find_nodes;
  FindNodesByHashFunction find_slots_by_hash;
  Md5MessagesFunction md5_messages;
};

#define CHASH_TARGET_KERNELS(TARGET, NS) \
  {TARGET,                               \
   &NS::LowerBoundSlotImpl,              \
   &NS::FindNodeByKeyImpl,               \
   &NS::FindNodesByHashImpl,             \
   &NS::FindNodesImpl,                   \
   &NS::FindSlotsByHashImpl,             \
   &NS::Md5MessagesImpl},

// Every compiled target, best first (Highway numbers better targets with
// lower bits). Constant: listing a target runs none of its code.
constexpr TargetKernels kCompiled[] = {
#if HWY_TARGETS & HWY_AVX3_DL
    CHASH_TARGET_KERNELS(HWY_AVX3_DL, N_AVX3_DL)
#endif
#if HWY_TARGETS & HWY_AVX3
    CHASH_TARGET_KERNELS(HWY_AVX3, N_AVX3)
#endif
#if HWY_TARGETS & HWY_AVX2
    CHASH_TARGET_KERNELS(HWY_AVX2, N_AVX2)
#endif
#if HWY_TARGETS & HWY_SSE4
    CHASH_TARGET_KERNELS(HWY_SSE4, N_SSE4)
#endif
#if HWY_TARGETS & HWY_SSSE3
    CHASH_TARGET_KERNELS(HWY_SSSE3, N_SSSE3)
#endif
#if HWY_TARGETS & HWY_SVE2_128
    CHASH_TARGET_KERNELS(HWY_SVE2_128, N_SVE2_128)
#endif
#if HWY_TARGETS & HWY_SVE_256
    CHASH_TARGET_KERNELS(HWY_SVE_256, N_SVE_256)
#endif
#if HWY_TARGETS & HWY_SVE2
    CHASH_TARGET_KERNELS(HWY_SVE2, N_SVE2)
#endif
#if HWY_TARGETS & HWY_SVE
    CHASH_TARGET_KERNELS(HWY_SVE, N_SVE)
#endif
#if HWY_TARGETS & HWY_NEON
    CHASH_TARGET_KERNELS(HWY_NEON, N_NEON)
#endif
#if HWY_TARGETS & HWY_EMU128
    CHASH_TARGET_KERNELS(HWY_EMU128, N_EMU128)
#endif
#if HWY_TARGETS & HWY_SCALAR
    CHASH_TARGET_KERNELS(HWY_SCALAR, N_SCALAR)
#endif
};
#undef CHASH_TARGET_KERNELS

constexpr int64_t kListedTargets = HWY_AVX3_DL | HWY_AVX3 | HWY_AVX2 | HWY_SSE4 | HWY_SSSE3 |
                                   HWY_SVE2_128 | HWY_SVE_256 | HWY_SVE2 | HWY_SVE | HWY_NEON |
                                   HWY_EMU128 | HWY_SCALAR;
static_assert((HWY_TARGETS & ~kListedTargets) == 0,
              "Highway compiles a target that kCompiled does not list: add it");

// The compiled targets this CPU supports, best first; found once.
struct CpuTargets {
  const TargetKernels* supported[sizeof(kCompiled) / sizeof(kCompiled[0])] = {};
  size_t count = 0;
};

const CpuTargets& Cpu() noexcept {
  static const CpuTargets cpu = [] {
    CpuTargets found;
    const int64_t bits = hwy::SupportedTargets();
    for (const TargetKernels& kernels : kCompiled) {
      if ((bits & kernels.target) != 0) found.supported[found.count++] = &kernels;
    }
    // The last compiled target is the baseline (SSSE3 and up are checked;
    // SCALAR/EMU128 run anywhere): never leave lookups without one.
    if (found.count == 0) found.supported[found.count++] = &kCompiled[std::size(kCompiled) - 1];
    return found;
  }();
  return cpu;
}

const TargetKernels* Best() noexcept { return Cpu().supported[0]; }

uint32_t ResolveAndLowerBoundSlot(const SearchView& view, uint32_t x);
uint32_t ResolveAndFindNodeByKey(const SearchView& view, const char* data, size_t len);

// The target batches run on (null until the first lookup resolves it).
std::atomic<const TargetKernels*> active_kernels{nullptr};

const TargetKernels& ActiveKernels() noexcept {
  const TargetKernels* kernels = active_kernels.load(std::memory_order_relaxed);
  if (kernels != nullptr) [[likely]] {
    return *kernels;
  }
  // First use: the best target, unless ForceTarget got there first.
  const TargetKernels* expected = nullptr;
  const TargetKernels* best = Best();
  active_kernels.compare_exchange_strong(expected, best, std::memory_order_relaxed);
  LowerBoundSlotFunction unresolved = &ResolveAndLowerBoundSlot;
  lower_bound_slot_kernel.compare_exchange_strong(unresolved, best->lower_bound_slot,
                                                  std::memory_order_relaxed);
  FindNodeByKeyFunction unresolved_key = &ResolveAndFindNodeByKey;
  find_node_by_key_kernel.compare_exchange_strong(unresolved_key, best->find_node_by_key,
                                                  std::memory_order_relaxed);
  return *active_kernels.load(std::memory_order_relaxed);
}

uint32_t ResolveAndLowerBoundSlot(const SearchView& view, uint32_t x) {
  return ActiveKernels().lower_bound_slot(view, x);
}

uint32_t ResolveAndFindNodeByKey(const SearchView& view, const char* data, size_t len) {
  return ActiveKernels().find_node_by_key(view, data, len);
}

void Activate(const TargetKernels* kernels) noexcept {
  active_kernels.store(kernels, std::memory_order_relaxed);
  lower_bound_slot_kernel.store(kernels->lower_bound_slot, std::memory_order_relaxed);
  find_node_by_key_kernel.store(kernels->find_node_by_key, std::memory_order_relaxed);
}

}  // namespace

// The first single lookup resolves the target, then calls its kernel directly.
std::atomic<LowerBoundSlotFunction> lower_bound_slot_kernel{&ResolveAndLowerBoundSlot};
std::atomic<FindNodeByKeyFunction> find_node_by_key_kernel{&ResolveAndFindNodeByKey};

void DispatchFindNodesByHash(const SearchView& view, const uint32_t* hashes, size_t count,
                             uint32_t* out) {
  ActiveKernels().find_nodes_by_hash(view, hashes, count, out);
}

void DispatchFindNodes(const SearchView& view, const std::string_view* keys, size_t count,
                       uint32_t* out) {
  ActiveKernels().find_nodes(view, keys, count, out);
}

void DispatchFindSlotsByHash(const SearchView& view, const uint32_t* hashes, size_t count,
                             uint32_t* out) {
  ActiveKernels().find_slots_by_hash(view, hashes, count, out);
}

void DispatchMd5Messages(const std::string_view* messages, size_t count, uint32_t* words) {
  ActiveKernels().md5_messages(messages, count, words);
}

}  // namespace internal

std::string_view ActiveTargetName() noexcept {
  return hwy::TargetName(internal::ActiveKernels().target);
}

std::vector<std::string> SupportedTargetNames() {
  const internal::CpuTargets& cpu = internal::Cpu();
  std::vector<std::string> names;
  for (size_t i = 0; i < cpu.count; ++i) names.emplace_back(hwy::TargetName(cpu.supported[i]->target));
  return names;
}

Status ForceTarget(std::string_view name) {
  const internal::CpuTargets& cpu = internal::Cpu();
  if (name.empty() || name == "best") {
    internal::Activate(internal::Best());
    return Status();
  }
  for (size_t i = 0; i < cpu.count; ++i) {
    if (name == hwy::TargetName(cpu.supported[i]->target)) {
      internal::Activate(cpu.supported[i]);
      return Status();
    }
  }
  internal::Activate(internal::Best());
  std::string supported;
  for (size_t i = 0; i < cpu.count; ++i) {
    supported += supported.empty() ? "" : ", ";
    supported += hwy::TargetName(cpu.supported[i]->target);
  }
  return Status(StatusCode::kBadArgument, "target '" + std::string(name) +
                                              "' is not supported here (supported: " +
                                              supported + ")");
}

}  // namespace chash
#endif  // HWY_ONCE
