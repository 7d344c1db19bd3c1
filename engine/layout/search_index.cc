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

size_t SearchIndex::LevelKeyCount(uint32_t n, int& levels) noexcept {
  size_t len = n + size_t{1};
  size_t total = 0;
  levels = 0;
  while (len > kBlockKeys) {
    len = BlocksFor(len);
    total += PaddedLevelKeys(len);
    ++levels;
  }
  return total;
}

const char* SearchIndex::AdoptStored(const uint32_t* hash, uint32_t n, const uint32_t* keys,
                                     size_t key_count, uint32_t entry_level,
                                     uint32_t table_bits, const uint32_t* table,
                                     size_t table_entries) noexcept {
  size_t len[kMaxIndexLevels + 1] = {n + size_t{1}};
  int levels = 0;
  while (len[levels] > kBlockKeys) {
    len[levels + 1] = BlocksFor(len[levels]);
    ++levels;
  }
  size_t offset[kMaxIndexLevels + 1] = {};
  size_t total = 0;
  for (int l = levels; l >= 1; --l) {
    offset[l] = total;
    total += PaddedLevelKeys(len[l]);
  }
  if (key_count != total) return "the levels do not have the length the points imply";
  const uint32_t* below = hash;
  for (int l = 1; l <= levels; ++l) {
    const uint32_t* level = keys + offset[l];
    for (size_t j = 0; j < len[l]; ++j) {
      if (level[j] != below[kBlockKeys * j + kBlockKeys - 1]) {
        return "a level key is not the last key of its block below";
      }
    }
    for (size_t j = len[l]; j < PaddedLevelKeys(len[l]); ++j) {
      if (level[j] != UINT32_MAX) return "a level's padding is not 2^32 - 1";
    }
    below = level;
  }
  if (table_bits == 0) {
    if (entry_level != static_cast<uint32_t>(levels) || table_entries != 1 || table[0] != 0) {
      return "no prefix table, but not the root entry {0}";
    }
  } else {
    if (table_bits > kMaxTableBits || entry_level < 1 ||
        entry_level >= static_cast<uint32_t>(levels) ||
        table_entries != size_t{1} << table_bits) {
      return "the prefix table's entry level or size is out of range";
    }
    const uint32_t* entry_keys = keys + offset[entry_level];
    const size_t entry_len = len[entry_level];
    const int shift = 32 - static_cast<int>(table_bits);
    size_t pos = 0;
    for (size_t p = 0; p < table_entries; ++p) {
      const uint64_t bucket_start = uint64_t{p} << shift;
      while (pos < entry_len && entry_keys[pos] < bucket_start) ++pos;
      if (table[p] != pos) return "a prefix table entry is not its bucket's first position";
    }
    for (size_t p = 0; p < table_entries; ++p) {
      const size_t bucket_end = p + 1 < table_entries ? table[p + 1] : entry_len - 1;
      if (bucket_end - table[p] >= kBlockKeys) return "a prefix table bucket holds 16 keys or more";
    }
  }
  keys_.Borrow(keys, key_count);
  for (int l = 1; l <= levels; ++l) level_offset_[l] = offset[l];
  levels_ = levels;
  table_.Borrow(table, table_entries);
  entry_level_ = static_cast<int>(entry_level);
  table_shift_ = static_cast<uint32_t>(32 - table_bits);
  return nullptr;
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
