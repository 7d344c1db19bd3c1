#include "builder/sorted_keys.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <new>
#include <vector>

#include "builder/columns_builder.h"
#include "builder/parallel.h"
#include "hwy/contrib/sort/vqsort.h"

namespace chash::internal {
namespace {

// As point_chains.cc's: buckets of about 2^15 keys, at most 2^10 of them.
int BucketBits(uint64_t total) noexcept {
  return std::min(10, static_cast<int>(std::bit_width(total >> 15)));
}

}  // namespace

std::vector<uint64_t> CountsToWriteOffsets(std::vector<uint64_t>& cursor, unsigned threads,
                                           size_t buckets) {
  std::vector<uint64_t> bucket_start(buckets + 1);
  uint64_t offset = 0;
  for (size_t b = 0; b < buckets; ++b) {
    bucket_start[b] = offset;
    for (unsigned t = 0; t < threads; ++t) {
      const uint64_t n = cursor[t * buckets + b];
      cursor[t * buckets + b] = offset;
      offset += n;
    }
  }
  bucket_start[buckets] = offset;
  return bucket_start;
}

bool SortKeysInPlace(uint64_t* keys, uint64_t count) noexcept {
  if (count < 2) return true;
  try {
    const hwy::Sorter sorter;
    sorter(keys, count, hwy::SortAscending());
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

bool SortEachBucket(uint64_t* keys, const std::vector<uint64_t>& bucket_start, unsigned threads,
                    const std::function<void(size_t, const uint64_t*, uint64_t)>& sorted) noexcept {
  const size_t buckets = bucket_start.size() - 1;
  std::atomic<size_t> next_bucket{0};
  std::atomic<bool> failed{false};
  ParallelFor(threads, threads, [&](unsigned) {
    try {
      const hwy::Sorter sorter;
      for (size_t b; (b = next_bucket.fetch_add(1, std::memory_order_relaxed)) < buckets;) {
        uint64_t* bucket = keys + bucket_start[b];
        const uint64_t size = bucket_start[b + 1] - bucket_start[b];
        if (size > 1) sorter(bucket, size, hwy::SortAscending());
        if (sorted) sorted(b, bucket, size);
      }
    } catch (const std::bad_alloc&) {
      failed.store(true, std::memory_order_relaxed);
    }
  });
  return !failed.load(std::memory_order_relaxed);
}

bool SortKeysInto(const uint64_t* in, uint64_t* out, uint64_t count, unsigned threads) noexcept {
  try {
    const int bits = BucketBits(count);
    threads = std::max(1u, threads);
    if (bits == 0) {
      std::copy_n(in, count, out);
      return SortKeysInPlace(out, count);
    }
    const int shift = 64 - bits;
    const size_t buckets = size_t{1} << bits;
    // Thread t counts and scatters keys [count * t / threads, count * (t + 1) / threads).
    const auto begin = [&](unsigned t) { return count * t / threads; };
    // cursor[t * buckets + b]: thread t's keys in bucket b, then where it
    // writes its next one.
    std::vector<uint64_t> cursor(size_t{threads} * buckets, 0);
    ParallelFor(threads, threads, [&](unsigned t) {
      uint64_t* counts = cursor.data() + size_t{t} * buckets;
      for (uint64_t i = begin(t); i < begin(t + 1); ++i) ++counts[in[i] >> shift];
    });
    const std::vector<uint64_t> bucket_start = CountsToWriteOffsets(cursor, threads, buckets);
    ParallelFor(threads, threads, [&](unsigned t) {
      uint64_t* next = cursor.data() + size_t{t} * buckets;
      for (uint64_t i = begin(t); i < begin(t + 1); ++i) out[next[in[i] >> shift]++] = in[i];
    });
    return SortEachBucket(out, bucket_start, threads, nullptr);
  } catch (const std::bad_alloc&) {
    return false;
  }
}

Status LayOutEveryKey(uint64_t* keys, size_t count, Columns& columns, PastTheEnd past) {
  columns.size = static_cast<uint32_t>(count);
  if (count == 0) {
    columns.hash.Allocate(0);
    columns.node.Allocate(0);
    return Status();
  }
  const bool in_place =
      columns.hash.is_os_mapping() && reinterpret_cast<uint64_t*>(columns.hash.data()) == keys;
  const size_t hash_slots = HashColumnSlots(count);
  const size_t node_slots = NodeColumnSlots(count);
  const auto out_of_memory = [count] {
    return Status(StatusCode::kOutOfMemory,
                  "out of memory allocating ring columns (" + std::to_string(count) + " points)");
  };
  if (!columns.node.Allocate(node_slots)) return out_of_memory();
  if (!in_place && !columns.hash.Allocate(hash_slots)) return out_of_memory();
  unsigned char* hash_bytes = reinterpret_cast<unsigned char*>(in_place ? keys : nullptr);
  if (!in_place) hash_bytes = reinterpret_cast<unsigned char*>(columns.hash.data());
  uint16_t* node = columns.node.data();
  // Slot i's 4 bytes land at byte 4i of the keys' memory, over key i / 2,
  // read already: memcpy keeps the two views apart.
  for (size_t i = 0; i < count; ++i) {
    uint64_t key;
    std::memcpy(&key, keys + i, sizeof key);
    const uint32_t hash = SortKeyHash(key);
    std::memcpy(hash_bytes + i * sizeof hash, &hash, sizeof hash);
    node[i] = SortKeyNode(key);
  }
  if (in_place) {
    AlignedArray<uint32_t> memory = std::move(columns.hash);
    columns.hash.AdoptMemory(std::move(memory), hash_slots);
  }
  uint32_t* hash = columns.hash.data();
  std::fill(hash + count, hash + hash_slots, UINT32_MAX);
  const uint16_t past_node = past == PastTheEnd::kLastPoint ? node[count - 1] : node[0];
  std::fill(node + count, node + node_slots, past_node);
  if (!BuildColumnsIndex(columns)) return out_of_memory();
  return Status();
}

}  // namespace chash::internal
