#include "build/point_chains.h"

#include <algorithm>

#include "build/columns_builder.h"
#include "hash/crc32_internal.h"

namespace chash::internal {
namespace {

void GenerateOne(const PointChain& chain, uint64_t* out, uint32_t prev, uint64_t from) noexcept {
  for (uint64_t j = from; j < chain.count; ++j) {
    prev = Crc32PointStep(chain.base_state, prev);
    out[j] = PointSortKey(prev, chain.rank, chain.node);
  }
}

}  // namespace

void GeneratePointKeys(std::span<const PointChain> chains, uint64_t* keys) noexcept {
  constexpr size_t kWays = 4;
  size_t c = 0;
  for (; c + kWays <= chains.size(); c += kWays) {
    const PointChain* group = &chains[c];
    uint64_t* out[kWays];
    uint64_t common = group[0].count;
    for (size_t k = 0; k < kWays; ++k) {
      out[k] = keys;
      keys += group[k].count;
      common = std::min(common, group[k].count);
    }
    uint32_t prev[kWays] = {};
    for (uint64_t j = 0; j < common; ++j) {
      for (size_t k = 0; k < kWays; ++k) {
        prev[k] = Crc32PointStep(group[k].base_state, prev[k]);
        out[k][j] = PointSortKey(prev[k], group[k].rank, group[k].node);
      }
    }
    for (size_t k = 0; k < kWays; ++k) GenerateOne(group[k], out[k], prev[k], common);
  }
  for (; c < chains.size(); ++c) {
    GenerateOne(chains[c], keys, 0, 0);
    keys += chains[c].count;
  }
}

}  // namespace chash::internal
