// Entry points of the per-target lookup kernels. Each call dispatches once to
// the best Highway target this CPU supports (or the one forced by
// ForceTarget), then runs the whole batch there.
#ifndef CHASH_ENGINE_SIMD_SEARCH_H_
#define CHASH_ENGINE_SIMD_SEARCH_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace chash::internal {

// out[i] = node[LowerBoundSlot(hashes[i])]. n >= 1.
void DispatchFindNodesByHash(const uint32_t* hash, const uint16_t* node, uint32_t n,
                             const uint32_t* hashes, size_t count, uint32_t* out);
// The same for keys, CRC32 included.
void DispatchFindNodes(const uint32_t* hash, const uint16_t* node, uint32_t n,
                       const std::string_view* keys, size_t count, uint32_t* out);
uint32_t DispatchLowerBoundSlot(const uint32_t* hash, uint32_t n, uint32_t x);

}  // namespace chash::internal

#endif  // CHASH_ENGINE_SIMD_SEARCH_H_
