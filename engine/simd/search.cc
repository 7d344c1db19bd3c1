// Highway dispatch skeleton for the lookups: foreach_target.h compiles this
// file once per target; HWY_EXPORT builds the table and HWY_DYNAMIC_DISPATCH
// picks the entry for the running CPU (once per call, not per key).
#include "simd/search.h"

#include <string>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "simd/search.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "simd/search-inl.h"
#include "hash/crc32_internal.h"

HWY_BEFORE_NAMESPACE();
namespace chash {
namespace HWY_NAMESPACE {

uint32_t LowerBoundSlotImpl(const internal::SearchView& view, uint32_t x) {
  return LowerBoundSlot(view, x);
}

void FindNodesByHashImpl(const internal::SearchView& view, const uint32_t* HWY_RESTRICT hashes,
                         size_t count, uint32_t* HWY_RESTRICT out) {
  FindNodesByHashSpan(view, hashes, count, out);
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

const char* TargetNameImpl() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace chash
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "chash/dispatch.h"

namespace chash {
HWY_EXPORT(LowerBoundSlotImpl);
HWY_EXPORT(FindNodesByHashImpl);
HWY_EXPORT(FindNodesImpl);
HWY_EXPORT(TargetNameImpl);

namespace internal {

namespace {
// The first lookup (and the first after ForceTarget) resolves the target.
uint32_t ResolveAndLowerBoundSlot(const SearchView& view, uint32_t x) {
  ActiveTargetName();  // makes Highway choose, so the table index is final
  const LowerBoundSlotFunction kernel = &HWY_DYNAMIC_DISPATCH(LowerBoundSlotImpl);
  lower_bound_slot_kernel.store(kernel, std::memory_order_relaxed);
  return kernel(view, x);
}
}  // namespace

std::atomic<LowerBoundSlotFunction> lower_bound_slot_kernel{&ResolveAndLowerBoundSlot};

void DispatchFindNodesByHash(const SearchView& view, const uint32_t* hashes, size_t count,
                             uint32_t* out) {
  HWY_DYNAMIC_DISPATCH(FindNodesByHashImpl)(view, hashes, count, out);
}

void DispatchFindNodes(const SearchView& view, const std::string_view* keys, size_t count,
                       uint32_t* out) {
  HWY_DYNAMIC_DISPATCH(FindNodesImpl)(view, keys, count, out);
}

}  // namespace internal

std::string_view ActiveTargetName() noexcept {
  return HWY_DYNAMIC_DISPATCH(TargetNameImpl)();
}

namespace {

// The CPU's targets, best first, found once. hwy::SupportedTargets() (1.0.3)
// answers the forced target while one is forced, and, when none is, re-detects
// the CPU and sets the chosen target to the detected set *before* it adds the
// vector-length targets (SVE_256, SVE2_128), relying on its dispatch caller
// to choose again: called directly, it left an SVE_256 CPU dispatching SVE2.
// So it is called once, before any ForceTarget (which needs this list), and
// the next dispatch is made to choose again from the full set.
const std::vector<int64_t>& CpuTargets() {
  static const std::vector<int64_t> targets = [] {
    ActiveTargetName();  // dispatch once first: see toolchain.md pitfall 4
    std::vector<int64_t> found = hwy::SupportedAndGeneratedTargets();
    hwy::GetChosenTarget().DeInit();
    return found;
  }();
  return targets;
}

}  // namespace

std::vector<std::string> SupportedTargetNames() {
  std::vector<std::string> names;
  for (const int64_t target : CpuTargets()) names.emplace_back(hwy::TargetName(target));
  return names;
}

Status ForceTarget(std::string_view name) {
  internal::lower_bound_slot_kernel.store(&internal::ResolveAndLowerBoundSlot,
                                          std::memory_order_relaxed);
  const std::vector<int64_t>& targets = CpuTargets();
  hwy::SetSupportedTargetsForTest(0);
  if (name.empty() || name == "best") return Status();
  for (const int64_t target : targets) {
    if (name == hwy::TargetName(target)) {
      hwy::SetSupportedTargetsForTest(target);
      return Status();
    }
  }
  std::string supported;
  for (const std::string& target : SupportedTargetNames()) {
    supported += supported.empty() ? "" : ", ";
    supported += target;
  }
  return Status(StatusCode::kBadArgument, "target '" + std::string(name) +
                                              "' is not supported here (supported: " +
                                              supported + ")");
}

}  // namespace chash
#endif  // HWY_ONCE
