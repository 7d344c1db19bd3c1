#include "builder/point_chains.h"

#include <algorithm>
#include <bit>
#include <new>
#include <vector>

#include "builder/parallel.h"

#include "builder/columns_builder.h"
#include "builder/sorted_keys.h"
#include "hash/crc32_internal.h"

namespace chash::internal {
namespace {

void GenerateOne(const PointChain& chain, uint64_t* out, uint32_t prev, uint64_t from) noexcept {
  for (uint64_t j = from; j < chain.count; ++j) {
    prev = Crc32PointStep(chain.base_state, prev);
    out[j] = PointSortKey(prev, chain.rank, chain.node);
  }
}

// Calls sink(key) for every point of the chains (in no particular order),
// four chains hashed interleaved as in GeneratePointKeys.
template <typename Sink>
void ForEachPointKey(std::span<const PointChain> chains, Sink&& sink) noexcept {
  constexpr size_t kWays = 4;
  size_t c = 0;
  for (; c + kWays <= chains.size(); c += kWays) {
    const PointChain* group = &chains[c];
    uint64_t common = group[0].count;
    for (size_t k = 1; k < kWays; ++k) common = std::min(common, group[k].count);
    uint32_t prev[kWays] = {};
    for (uint64_t j = 0; j < common; ++j) {
      for (size_t k = 0; k < kWays; ++k) {
        prev[k] = Crc32PointStep(group[k].base_state, prev[k]);
        sink(PointSortKey(prev[k], group[k].rank, group[k].node));
      }
    }
    for (size_t k = 0; k < kWays; ++k) {
      for (uint64_t j = common; j < group[k].count; ++j) {
        prev[k] = Crc32PointStep(group[k].base_state, prev[k]);
        sink(PointSortKey(prev[k], group[k].rank, group[k].node));
      }
    }
  }
  for (; c < chains.size(); ++c) {
    uint32_t prev = 0;
    for (uint64_t j = 0; j < chains[c].count; ++j) {
      prev = Crc32PointStep(chains[c].base_state, prev);
      sink(PointSortKey(prev, chains[c].rank, chains[c].node));
    }
  }
}

// Buckets of about 2^15 keys (a quarter of a 1 MiB L2 as u64), at most 2^10
// of them: the writing pass keeps one partly written line per bucket in each
// thread's cache, and 2^10 lines (64 KiB) stay in an L2 where 2^13 (512 KiB)
// did not; the 204.8M-point build took 0.5-0.8 s less to write and 0.3-0.5 s
// more to sort its 200K-key buckets (1.6 MB, in the L3). Rings of up to 2^25
// points are unchanged.
int BucketBits(uint64_t total) noexcept {
  return std::min(10, static_cast<int>(std::bit_width(total >> 15)));
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

bool GenerateSortedPointKeys(std::span<const PointChain> chains, uint64_t* keys, uint64_t total,
                             unsigned threads, SortedKeyParts& parts) noexcept {
  try {
    const int bits = BucketBits(total);
    threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(chains.size())));
    if (bits == 0) {
      GeneratePointKeys(chains, keys);
      if (!SortKeysInPlace(keys, total)) return false;
      parts = OnePart(total, CountDistinctHashes(keys, total));
      return true;
    }
    const int shift = 64 - bits;
    const size_t buckets = size_t{1} << bits;
    // Run t: chains [first[t], first[t + 1]), about total / threads points.
    std::vector<size_t> first(threads + 1, chains.size());
    first[0] = 0;
    uint64_t seen = 0;
    for (size_t c = 0, t = 1; c < chains.size() && t < threads; ++c) {
      seen += chains[c].count;
      if (seen * threads >= total * t) first[t++] = c + 1;
    }
    for (unsigned t = 1; t <= threads; ++t) first[t] = std::max(first[t], first[t - 1]);
    const auto run = [&](unsigned t) {
      return chains.subspan(first[t], first[t + 1] - first[t]);
    };
    // cursor[t * buckets + b]: run t's points in bucket b, then where run t
    // writes its next point of bucket b.
    std::vector<uint64_t> cursor(threads * buckets, 0);
    ParallelFor(threads, threads, [&](unsigned t) {
      uint64_t* count = cursor.data() + t * buckets;
      ForEachPointKey(run(t), [&](uint64_t key) { ++count[key >> shift]; });
    });
    const std::vector<uint64_t> bucket_start = CountsToWriteOffsets(cursor, threads, buckets);
    ParallelFor(threads, threads, [&](unsigned t) {
      uint64_t* next = cursor.data() + t * buckets;
      ForEachPointKey(run(t), [&](uint64_t key) { keys[next[key >> shift]++] = key; });
    });
    // Equal hashes share their top bits, so each run of them lies in one
    // bucket: the buckets' distinct counts add up, counted while in cache,
    // and a cut between buckets never splits a run.
    std::vector<uint64_t> bucket_distinct(buckets, 0);
    if (!SortEachBucket(keys, bucket_start, threads,
                        [&](size_t b, const uint64_t* bucket, uint64_t size) {
                          bucket_distinct[b] = CountDistinctHashes(bucket, size);
                        })) {
      return false;
    }
    // One part a thread, each cut at the first bucket boundary at or past
    // its share of the keys.
    parts.key_begin.assign(1, 0);
    parts.slot_begin.assign(1, 0);
    uint64_t slots = 0;
    for (size_t b = 0, t = 1; b < buckets; ++b) {
      if (t < threads && bucket_start[b] * threads >= total * t) {
        parts.key_begin.push_back(bucket_start[b]);
        parts.slot_begin.push_back(slots);
        ++t;
      }
      slots += bucket_distinct[b];
    }
    parts.key_begin.push_back(total);
    parts.slot_begin.push_back(slots);
    return true;
  } catch (const std::bad_alloc&) {
    return false;
  }
}

}  // namespace chash::internal
