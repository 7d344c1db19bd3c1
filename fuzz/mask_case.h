// The failover half of the differential fuzzers (include/chash/failover.h):
// a node mask, per-node loads and a balance factor, decoded from the bytes
// after a ring or points input (so inputs without them mean "every node
// available").
//
// The oracle is the documented exactness rule: a lookup under a mask answers
// what the ring of the available nodes alone would answer. The fuzzers build
// that ring with the reference (unavailable nodes drained to weight 0, which
// keeps ids and tie-break order, or their raw points removed) and compare
// every masked, batch-masked, AvailabilityMask and bounded-load lookup with
// it (lookup_diff.cc).
//
// Format (FuzzReader), after the case's own fields:
//   U8 m   bits 0-3 which ids are available: 0 all, 1 none, 2 all but U16,
//          3 only U16, 4 a bitmap of ceil(size/8) bytes, 5 even ids, 6 odd
//          ids, 7 the first half, 8-15: U32 seed and U8 density (a
//          pseudo-random subset); bits 4-5 the mask size: 0 num_nodes, 1
//          num_nodes - 1 - U8 (floor 0), 2 num_nodes + 1 + U8, 3 zero
//   U8 l   bits 0-1 the loads' length: num_nodes, num_nodes / 2, 0,
//          num_nodes + 3; bits 2-3 their values: x % 4, x % 1000, near
//          2^64 - 1 (sums saturate), all one U16; then a U32 seed for x
//   U8 k   capacity: 0 -> 0, 1 -> 1, 2 -> 2^64 - 1, else U16
//   U8 b   balance factor: 0 -> 1.0, 1 -> NaN, 2 -> +inf, 3 -> 0.5, 4 -> -3,
//          5 -> 1e12, 6 -> 2e9, 7 -> 1 + 1e-9, 8-191 -> 1 + U16 / 1000,
//          192-223 -> 1 + U16 / 10^7 (halves of a part per million),
//          224-255 -> the double whose bits are U32 hi, U32 lo
#ifndef CHASH_FUZZ_MASK_CASE_H_
#define CHASH_FUZZ_MASK_CASE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "chash/failover.h"
#include "fuzz_data.h"

namespace chash::fuzz {

struct MaskCase {
  std::vector<bool> available;  // the mask's ids, decoded independently of NodeMask
  NodeMask mask;                // built from `available` through the NodeMask API
  std::vector<uint64_t> loads;
  uint64_t capacity = 0;
  double balance_factor = 0;

  bool IsAvailable(uint32_t node) const { return node < available.size() && available[node]; }
  // True if every node of a ring of `num_nodes` is available (the subset
  // ring is the ring itself).
  bool AllAvailable(uint32_t num_nodes) const;
  std::string Describe() const;
};

MaskCase DecodeMaskCase(FuzzReader& r, uint32_t num_nodes);

// Writes the mask fields for the seeds (`which` 0-3 and 5-7 only).
struct MaskCaseWriter {
  uint8_t which = 0;       // bits 0-3 of m
  uint8_t size_mode = 0;   // bits 4-5 of m
  uint8_t size_delta = 0;  // for size_mode 1, 2
  uint16_t id = 0;         // for which = 2, 3
  uint8_t loads_mode = 0;  // l
  uint32_t load_seed = 0;
  uint8_t capacity_mode = 0;
  uint16_t capacity = 0;
  uint8_t factor_mode = 0;
  uint16_t factor_thousandths = 0;
  std::string Bytes() const;
};

// The end of a ring or points case as the seeds write it: U8 count, the
// probe hashes (U32 each), then the mask fields. `Writer` is the case's
// writer (Hash and Mask return it, for chaining).
template <typename Writer>
class ProbesAndMaskWriter {
 public:
  Writer& Hash(uint32_t hash) {
    hashes_.push_back(hash);
    return static_cast<Writer&>(*this);
  }
  Writer& Mask(const MaskCaseWriter& mask) {
    mask_ = mask.Bytes();
    return static_cast<Writer&>(*this);
  }

 protected:
  // The case's bytes: `w` (its own fields) and this tail.
  std::string WithProbesAndMask(FuzzWriter& w) const {
    w.U8(static_cast<uint8_t>(hashes_.size()));
    for (const uint32_t hash : hashes_) w.U32(hash);
    return w.Bytes(mask_).bytes();
  }

 private:
  std::vector<uint32_t> hashes_;
  std::string mask_;
};

}  // namespace chash::fuzz

#endif  // CHASH_FUZZ_MASK_CASE_H_
