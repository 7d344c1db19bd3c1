#include "layout/search_index.h"

#include "layout/columns.h"

#include <algorithm>
#include <atomic>
#include <bit>

namespace chash::internal {
namespace {

std::atomic<uint32_t> interpolation_min_points{kInterpolationMinPoints};

constexpr size_t BlocksFor(size_t keys) { return (keys + kBlockKeys - 1) / kBlockKeys; }
// Whole blocks plus one block of UINT32_MAX for windows that start late.
constexpr size_t PaddedLevelKeys(size_t keys) { return (BlocksFor(keys) + 1) * kBlockKeys; }
constexpr int kMaxTableBits = 24;
// A bucket of about 128-256 points: the guess's error stays well inside half
// a window (search_index.h), and the table within 1/32 byte a point.
constexpr int kPointsPerBucketBits = 7;
constexpr int kSmallTableBits = 13;  // 2^13 entries: kSmallTableBytes
// Half of a 512 KiB L2 (see EntryLevelOfTable).
constexpr size_t kLevelOneCachedBytes = 256 << 10;
static_assert((sizeof(uint32_t) << kSmallTableBits) == kSmallTableBytes);

// Fills table[0 .. 2^bits] with the slots of the buckets' first hashes.
void FillSlotTable(const uint32_t* hash, uint32_t n, int bits, uint32_t* table) {
  const size_t entries = size_t{1} << bits;
  const int shift = 32 - bits;
  size_t slot = 0;
  for (size_t p = 0; p < entries; ++p) {
    const uint64_t bucket_start = uint64_t{p} << shift;
    while (slot < n && hash[slot] < bucket_start) ++slot;
    table[p] = static_cast<uint32_t>(slot);
  }
  table[entries] = n;
}

}  // namespace

void SetInterpolationMinPoints(uint32_t points) noexcept {
  interpolation_min_points.store(points, std::memory_order_relaxed);
}

int SearchIndex::TableBitsFor(uint32_t n) noexcept {
  const int by_size = static_cast<int>(std::bit_width(n >> kPointsPerBucketBits)) - 1;
  const int small = std::min(kSmallTableBits, static_cast<int>(std::bit_width(n)));
  return std::clamp(std::max(by_size, small), 1, kMaxTableBits);
}

int SearchIndex::EntryLevelOfTable(uint32_t n) const noexcept {
  const size_t buckets = table_.size() - 1;
  const uint32_t* table = table_.data();
  // Level 0 is the hash column, which has no padding block for a window
  // that starts late: a ring with levels enters at level 1 or above. A
  // batch loads its entry windows before it prefetches anything, so a ring
  // whose level 1 outgrows kLevelOneCachedBytes (1/16 of its hash column,
  // which other work evicts) enters at level 2 or above, whose keys stay
  // cached; the misses below are the prefetched passes'.
  const size_t level_one_bytes = sizeof(uint32_t) * BlocksFor(n + size_t{1});
  const int lowest = levels_ == 0 ? 0 : level_one_bytes > kLevelOneCachedBytes ? 2 : 1;
  for (int level = std::min(lowest, levels_); level < levels_; ++level) {
    const int shift = 4 * level;
    bool fits = true;
    for (size_t p = 0; p < buckets && fits; ++p) {
      const uint32_t end = p + 1 < buckets ? table[p + 1] : n;
      fits = (end >> shift) - (table[p] >> shift) < kBlockKeys;
    }
    if (fits) return level;
  }
  return levels_;  // the root: at most 16 keys, a window from 0 holds them all
}

bool SearchIndex::Build(const uint32_t* hash, uint32_t n) noexcept {
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
  const int bits = TableBitsFor(n);
  if (!table_.Allocate((size_t{1} << bits) + 1)) return false;
  FillSlotTable(hash, n, bits, table_.data());
  table_shift_ = static_cast<uint32_t>(32 - bits);
  entry_level_ = EntryLevelOfTable(n);
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
                                     size_t key_count, uint32_t table_bits,
                                     const uint32_t* table, size_t table_entries) noexcept {
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
  if (table_bits != static_cast<uint32_t>(TableBitsFor(n)) ||
      table_entries != (size_t{1} << table_bits) + 1) {
    return "the slot table's size is not the one its points imply";
  }
  // Entry p is the slot of the first hash >= p << shift: at or after the
  // previous entry, a hash there at least that large, the one before below.
  const int shift = 32 - static_cast<int>(table_bits);
  uint32_t previous = 0;
  for (size_t p = 0; p + 1 < table_entries; ++p) {
    const uint64_t bucket_start = uint64_t{p} << shift;
    const uint32_t slot = table[p];
    if (slot < previous || slot > n || (slot < n && hash[slot] < bucket_start) ||
        (slot > 0 && hash[slot - 1] >= bucket_start)) {
      return "a slot table entry is not the slot of its bucket's first hash";
    }
    previous = slot;
  }
  if (table[table_entries - 1] != n) {
    return "the slot table's last entry is not the point count";
  }
  keys_.Borrow(keys, key_count);
  for (int l = 1; l <= levels; ++l) level_offset_[l] = offset[l];
  levels_ = levels;
  table_.Borrow(table, table_entries);
  table_shift_ = static_cast<uint32_t>(shift);
  entry_level_ = EntryLevelOfTable(n);
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
  // A ring without levels (n + 1 <= 16) enters at its one block, from 0.
  view.entry_shift = levels_ == 0 ? 4 : 4 * view.entry_level;
  view.entry_last = levels_ == 0 ? n : n >> view.entry_shift;
  view.table_shift = table_shift_;
  view.offset_mask = static_cast<uint32_t>((uint64_t{1} << table_shift_) - 1);
  const size_t slots = HashColumnSlots(n);
  view.interpolate = slots >= kWindowKeys &&
                     n >= interpolation_min_points.load(std::memory_order_relaxed);
  view.window_last = view.interpolate ? static_cast<uint32_t>(slots - kWindowKeys) : 0;
  view.size = n;
  return view;
}

}  // namespace chash::internal
