// A program ring's answers over its whole key-hash space, as runs of
// consecutive hashes with one answer: what the exact shares (stats.h) and
// the exact diff (diff.h) of the rings after resty are made of. Private to
// the engine.
//
// The space is [0, 2^32) for the 32-bit rings and [0, 2^64) for envoy-ring;
// an envoy-maglev table is no ring of intervals (its answer is table[h mod
// M]): TableEntryHashes counts each entry's hashes instead.
//
// Every rule's answer is constant between two breakpoints: the points'
// values, and for the nearest rule (HAProxy) the middle of each gap. Runs
// are read group by group (a group: the points sharing one value), with a
// hash equal to a group's value answered by the ring itself (FindNodeByHash64:
// Varnish's bisection and the other programs' ties decide it), the hashes
// between two groups by the rule:
//   successor            (v_j, v_{j+1})  -> the first node of group j+1;
//                        past the last group -> the first node of group 0
//   successor clamped    as successor, but past the last group -> the last
//                        point's node; a ring of two points (Varnish's
//                        bisection) answers its second point for every hash
//   nearest              (v_j, v_j + floor(d/2)] -> the last node of group j,
//                        the rest of the gap -> the first node of group j+1,
//                        d = v_{j+1} - v_j (the gap past the last group wraps)
#ifndef CHASH_ENGINE_FLEET_HASH_RUNS_H_
#define CHASH_ENGINE_FLEET_HASH_RUNS_H_

#include <cstdint>
#include <vector>

#include "chash/ring.h"

namespace chash::internal {

using Wide = unsigned __int128;

struct HashRun {
  uint64_t first = 0;  // inclusive
  uint64_t last = 0;   // inclusive
  uint32_t node = Ring::kNoNode;
  Wide length() const noexcept { return Wide{last} - first + 1; }
};

// The runs of a non-table ring, in hash order, covering its space exactly
// once (an empty ring: one run of kNoNode). O(1) memory; each Next is O(1)
// but for a hash several points share (a lookup, O(log n)).
class HashRunReader {
 public:
  explicit HashRunReader(const Ring& ring) noexcept;
  // The next run; false past the end of the space.
  bool Next(HashRun& run) noexcept;
  // The largest hash of the space: 2^32 - 1, or 2^64 - 1 on envoy-ring.
  uint64_t top() const noexcept { return top_; }

 private:
  struct Group {
    uint64_t value = 0;
    uint32_t first_node = Ring::kNoNode;
    uint32_t last_node = Ring::kNoNode;
    uint64_t size = 0;
  };
  bool ReadGroup(Group& group) noexcept;
  uint32_t Hit(const Group& group) const noexcept;
  void Push(Wide first, Wide last, uint32_t node) noexcept;
  void Refill() noexcept;
  void Start() noexcept;
  // The wrapping gap after the last group: where the hashes stop going to
  // the last point (nearest rule), as an offset in [last value, last value
  // + space).
  Wide WrapSplit() const noexcept;

  const Ring& ring_;
  PointCursor cursor_;
  uint64_t remaining_ = 0;  // points the cursor has not read
  LookupRule rule_;
  uint64_t top_;
  Wide space_;
  bool started_ = false;
  bool finished_ = false;
  Group previous_;
  Group first_group_;
  uint64_t last_value_ = 0;  // of the ring's last point
  uint32_t last_node_ = Ring::kNoNode;
  HashRun queue_[4];
  int queued_ = 0;
  int next_ = 0;
};

// envoy-maglev: how many of the 2^64 key hashes land on each entry
// (floor(2^64 / M), one more for the entries below 2^64 mod M).
Wide TableEntryHashes(uint64_t table_size, uint64_t entry) noexcept;

// Exact per-node shares of the ring's key-hash space (2^32 or 2^64 in all),
// one per node id. Throws std::bad_alloc.
std::vector<Wide> ExactNodeShares(const Ring& ring);

// Shares of a space of 2^`space_bits` hashes in units of 2^32 hashes
// (space_bits 32: as they are), rounded so that they still sum to 2^32:
// share i is floor(S_i / 2^(space_bits - 32)) - floor(S_(i-1) / ...), S_i
// the running sum. Each is within one unit of its exact value.
std::vector<uint64_t> ScaleShares(const std::vector<Wide>& shares, uint32_t space_bits);

// The key-hash space's width of a ring: 64 on envoy-ring and envoy-maglev,
// else 32.
uint32_t SpaceBits(const Ring& ring) noexcept;

// Whether the ring is one of the other programs' (not raw): its shares and
// diffs take the runs above; nginx, pingora and resty rings keep their own
// scans.
bool UsesHashRuns(const Ring& ring) noexcept;

}  // namespace chash::internal

#endif  // CHASH_ENGINE_FLEET_HASH_RUNS_H_
