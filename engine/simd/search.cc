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
#include "chash/crc32.h"

HWY_BEFORE_NAMESPACE();
namespace chash {
namespace HWY_NAMESPACE {

void FindNodesByHashImpl(const uint32_t* HWY_RESTRICT hash, const uint16_t* HWY_RESTRICT node,
                         uint32_t n, const uint32_t* HWY_RESTRICT hashes, size_t count,
                         uint32_t* HWY_RESTRICT out) {
  for (size_t i = 0; i < count; ++i) out[i] = NodeForHash(hash, node, n, hashes[i]);
}

void FindNodesImpl(const uint32_t* HWY_RESTRICT hash, const uint16_t* HWY_RESTRICT node,
                   uint32_t n, const std::string_view* HWY_RESTRICT keys, size_t count,
                   uint32_t* HWY_RESTRICT out) {
  for (size_t i = 0; i < count; ++i) out[i] = NodeForHash(hash, node, n, Crc32(keys[i]));
}

uint32_t LowerBoundSlotImpl(const uint32_t* HWY_RESTRICT hash, uint32_t n, uint32_t x) {
  return LowerBoundSlot(hash, n, x);
}

const char* TargetNameImpl() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace chash
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "chash/dispatch.h"

namespace chash {
HWY_EXPORT(FindNodesByHashImpl);
HWY_EXPORT(FindNodesImpl);
HWY_EXPORT(LowerBoundSlotImpl);
HWY_EXPORT(TargetNameImpl);

namespace internal {

void DispatchFindNodesByHash(const uint32_t* hash, const uint16_t* node, uint32_t n,
                             const uint32_t* hashes, size_t count, uint32_t* out) {
  HWY_DYNAMIC_DISPATCH(FindNodesByHashImpl)(hash, node, n, hashes, count, out);
}

void DispatchFindNodes(const uint32_t* hash, const uint16_t* node, uint32_t n,
                       const std::string_view* keys, size_t count, uint32_t* out) {
  HWY_DYNAMIC_DISPATCH(FindNodesImpl)(hash, node, n, keys, count, out);
}

uint32_t DispatchLowerBoundSlot(const uint32_t* hash, uint32_t n, uint32_t x) {
  return HWY_DYNAMIC_DISPATCH(LowerBoundSlotImpl)(hash, n, x);
}

}  // namespace internal

std::string_view ActiveTargetName() noexcept {
  return HWY_DYNAMIC_DISPATCH(TargetNameImpl)();
}

std::vector<std::string> SupportedTargetNames() {
  ActiveTargetName();  // dispatch once first: see toolchain.md pitfall 4
  std::vector<std::string> names;
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    names.emplace_back(hwy::TargetName(target));
  }
  return names;
}

Status ForceTarget(std::string_view name) {
  if (name.empty() || name == "best") {
    hwy::SetSupportedTargetsForTest(0);
    return Status();
  }
  ActiveTargetName();
  hwy::SetSupportedTargetsForTest(0);
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
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
