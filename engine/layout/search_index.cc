#include "layout/search_index.h"

#include <algorithm>
#include <bit>

namespace chash::internal {
namespace {

constexpr size_t BlocksFor(size_t keys) { return (keys + kBlockKeys - 1) / kBlockKeys; }
// Whole blocks plus one block of UINT32_MAX for windows that start late.
constexpr size_t PaddedLevelKeys(size_t keys) { return (BlocksFor(keys) + 1) * kBlockKeys; }
constexpr int kMaxTableBits = 24;
// Extra bits tried when some bucket holds more than 15 entry-level keys.
constexpr int kTableRetries = 2;

}  // namespace

bool SearchIndex::Build(const uint32_t* hash, uint32_t n, size_t table_budget_bytes) noexcept {
  // len[l]: meaningful keys of level l; level 0 holds the n points and the
  // sentinel.
  size_t len[kMaxIndexLevels + 1] = {n + size_t{1}};
  int levels = 0;
  while (len[levels] > kBlockKeys) {
    len[levels + 1] = BlocksFor(len[levels]);
    ++levels;
  }
  levels_ = levels;
  size_t total = 0;
  for (int l = levels; l >= 1; --l) {
    level_offset_[l] = total;
    total += PaddedLevelKeys(len[l]);
  }
  if (!keys_.Allocate(total)) return false;
  const uint32_t* below = hash;
  for (int l = 1; l <= levels; ++l) {
    uint32_t* level = keys_.data() + level_offset_[l];
    for (size_t j = 0; j < len[l]; ++j) level[j] = below[kBlockKeys * j + kBlockKeys - 1];
    std::fill(level + len[l], level + PaddedLevelKeys(len[l]), UINT32_MAX);
    below = level;
  }

  const size_t budget = std::max(table_budget_bytes, kSmallTableBytes);
  for (int entry = 1; entry < levels; ++entry) {
    const int base_bits = std::max(1, static_cast<int>(std::bit_width(len[entry] / 2)));
    for (int bits = base_bits; bits <= std::min(base_bits + kTableRetries, kMaxTableBits);
         ++bits) {
      if ((sizeof(uint32_t) << bits) > budget) break;
      if (!BuildTable(keys_.data() + level_offset_[entry], len[entry], bits)) {
        if (table_.size() == 0) return false;  // out of memory
        continue;                              // a bucket too full
      }
      entry_level_ = entry;
      table_shift_ = static_cast<uint32_t>(32 - bits);
      return true;
    }
  }
  // No table: enter at the root, whose 16-key window starts at position 0.
  if (!table_.Allocate(1)) return false;
  table_[0] = 0;
  entry_level_ = levels;
  table_shift_ = 32;
  return true;
}

bool SearchIndex::BuildTable(const uint32_t* keys, size_t len, int bits) noexcept {
  const size_t entries = size_t{1} << bits;
  if (!table_.Allocate(entries)) return false;
  const int shift = 32 - bits;
  uint32_t* table = table_.data();
  size_t pos = 0;
  for (size_t p = 0; p < entries; ++p) {
    const uint64_t bucket_start = uint64_t{p} << shift;
    while (pos < len && keys[pos] < bucket_start) ++pos;
    table[p] = static_cast<uint32_t>(pos);
  }
  // The answer for a query of bucket p lies in [table[p], table[p + 1]]; the
  // last key (the sentinel's block max, UINT32_MAX) bounds the last bucket.
  for (size_t p = 0; p < entries; ++p) {
    const size_t bucket_end = p + 1 < entries ? table[p + 1] : len - 1;
    if (bucket_end - table[p] >= kBlockKeys) {
      table_.Allocate(1);  // keeps size() > 0 to tell "too full" from OOM
      return false;
    }
  }
  return true;
}

SearchView SearchIndex::View(const uint32_t* hash, const uint16_t* node,
                             uint32_t n) const noexcept {
  SearchView view = {};
  view.level[0] = hash;
  for (int l = 1; l <= levels_; ++l) view.level[l] = keys_.data() + level_offset_[l];
  view.node = node;
  view.table = table_.data();
  view.entry_level = static_cast<uint32_t>(entry_level_);
  view.table_shift = table_shift_;
  view.size = n;
  return view;
}

}  // namespace chash::internal
