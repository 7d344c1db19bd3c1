// Sorting generated point keys on several threads, and laying out rings
// that keep every point (the other programs' flavors: HAProxy's tree,
// Varnish's circle, libmemcached's and twemproxy's continuums keep colliding
// points, in their insertion order, and so do their chash rings).
#ifndef CHASH_ENGINE_BUILD_SORTED_KEYS_H_
#define CHASH_ENGINE_BUILD_SORTED_KEYS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "chash/status.h"
#include "layout/columns.h"

namespace chash::internal {

// Sorts the `count` keys of `in` into `out` (a distinct array of `count`),
// ascending, on up to `threads` threads: one pass counts the keys of each
// bucket (the top bits of a key; point hashes are uniform, so buckets are
// even), one scatters them, then every bucket is sorted on its own (Highway
// VQSort, one sorter a thread). A set of u64 keys has one sorted order, so
// `out` is bit-identical whatever the thread count. False: out of memory.
bool SortKeysInto(const uint64_t* in, uint64_t* out, uint64_t count, unsigned threads) noexcept;

// The scatter of a bucketed sort: `cursor` holds, for each of `threads`
// runs, its count of keys in each of `buckets` buckets (cursor[t * buckets
// + b]); each becomes where run t writes its first key of bucket b, so that
// the buckets are in order and, within one, the runs in order. Returns the
// buckets' starts, buckets + 1 of them (the last is the total). Throws
// std::bad_alloc.
std::vector<uint64_t> CountsToWriteOffsets(std::vector<uint64_t>& cursor, unsigned threads,
                                           size_t buckets);

// The sort of a bucketed sort: every bucket of `keys` (its starts as
// CountsToWriteOffsets returns them) sorted on its own, by `threads` threads
// taking buckets in turn, one VQSort a thread; then `sorted(b, bucket,
// size)`, if given, on the thread that sorted bucket b, while it is in
// cache. False: out of memory.
bool SortEachBucket(uint64_t* keys, const std::vector<uint64_t>& bucket_start, unsigned threads,
                    const std::function<void(size_t, const uint64_t*, uint64_t)>& sorted) noexcept;

// Sorts `keys` in place on one thread (VQSort). False: out of memory.
bool SortKeysInPlace(uint64_t* keys, uint64_t count) noexcept;

// What a ring answers past its last point: its first point's node (the
// wrap of every ring but Varnish's), or its last point's (varnish-shard).
enum class PastTheEnd : uint8_t { kFirstPoint, kLastPoint };

// Lays out `count` sorted PointSortKeys as the columns (columns.h), every
// key a point, equal hashes included, then the search index. `keys` may be
// the memory of columns.hash (a PointKeyBuffer's): its hash column is then
// written over the keys. The sentinel slot's node follows `past`.
// kOutOfMemory if the columns cannot be allocated.
Status LayOutEveryKey(uint64_t* keys, size_t count, Columns& columns, PastTheEnd past);

}  // namespace chash::internal

#endif  // CHASH_ENGINE_BUILD_SORTED_KEYS_H_
