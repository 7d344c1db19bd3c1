// The raw-points differential: (hash, node) lists biased toward collisions
// and boundaries go to BuildRingFromPoints and ReferenceRing::FromPoints,
// which must agree on acceptance and StatusCode; then every lookup is
// compared on every SIMD target (lookup_diff.h), at every point hash, +-1,
// 0, 2^32-1 and the wrap-around.
//
// Input format (FuzzReader; PointsCaseWriter writes it):
//   U8 modes: bits 0-2 and 7 node count, 3-4 tie rank, 5-6 cap (see below)
//   node count  bit 7 clear: 0: 1+U8%16  1: U8  2: 1+U8%4  3: 0  4: 1  5: 2
//                 6: 1+U8%64  7: 256+U8
//               bit 7 set, then U8 0xA5 (else as if bit 7 were clear; the node
//               limit, slower runs): 0: U16  1: 65,536
//                 2: 65,537  3: 65,535  4: U32  5: 65,536-U8  6: 65,536+U8
//                 7: U32 | 0x10000
//   tie rank    0: none (configuration order: the smaller node id wins)
//               1: a permutation: identity, then U8 swaps of (U16, U16)
//               2: reversed (the larger id wins)
//               3: broken: U8 kind % 4 (0: one entry short, 1: one too many,
//                  2: an entry out of range, 3: a repeated entry; 2 and 3
//                  then read a U16 index)
//   cap         0: kFuzzMaxPoints  1: U8  2: U16  3: after the ops, U8 d:
//               the point count + d/2 (d even) or - d/2 (d odd; floor 0);
//               d = 255: kHardMaxPoints + 1
//   U8 op count, then ops (U8 % 8, PointOp) until the count or the input ends
//   [cap byte for cap mode 3]
//   U8 extra probe hash count (% 17), each U32
//   the failover fields of mask_case.h (node mask, loads, balance factor)
// A node id is U8 m: m%4 == 0: U16 % count; 1: m/4; 2: count - 1 - m/4
// (wraps past 0 to ids far out of range); 3: U32.
#ifndef CHASH_FUZZ_POINTS_CASE_H_
#define CHASH_FUZZ_POINTS_CASE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "chash/ring.h"
#include "fuzz_data.h"
#include "mask_case.h"

namespace chash::fuzz {

inline constexpr size_t kMaxRawPoints = 50000;
inline constexpr uint8_t kNodeLimitKey = 0xA5;

enum PointOp : uint8_t {
  kOnePoint = 0,     // U32 hash, node
  kEqualRun = 1,     // U32 hash, k = 2 + U8%8, k nodes: a k-way collision
  kExtreme = 2,      // U8%4 -> hash 0, 1, 2^32-2, 2^32-1; node
  kConsecutive = 3,  // U32 base, k = 1 + U8%16, k nodes at base, base+1, ...
  kAllEqual = 4,     // U32 hash, k = 1 + U8, node n: nodes n, n+1, ... n+k-1
  kRandom = 5,       // k = U8, k times (U32 hash, node)
  kRepeat = 6,       // U16 index of an earlier point, node: the same hash again
  kBadNode = 7,      // U32 hash, U8%5 -> node count, count + 1, 65,535,
                     // 65,536, 2^32-1
};

struct PointsCase {
  uint32_t num_nodes = 0;
  std::vector<RawPoint> points;
  std::vector<uint32_t> tie_rank;
  uint64_t max_points = 0;
  std::vector<uint32_t> hashes;
  MaskCase mask;

  std::string Describe() const;
};

PointsCase DecodePointsCase(const uint8_t* data, size_t size);

struct PointsOutcome {
  StatusCode code = StatusCode::kOk;
  uint64_t points = 0;  // kept
  uint64_t collisions = 0;
  uint64_t checks = 0;
};

// Fail()s (aborts) on any difference.
PointsOutcome RunPointsDiff(const PointsCase& points_case);

class PointsCaseWriter : public ProbesAndMaskWriter<PointsCaseWriter> {
 public:
  enum class Nodes : uint8_t {
    kSmall16 = 0,
    kU8 = 1,
    kTiny4 = 2,
    kZero = 3,
    kOne = 4,
    kTwo = 5,
    kSmall64 = 6,
    k256Plus = 7,
    kU16 = 0x80,
    k65536 = 0x81,
    k65537 = 0x82,
    k65535 = 0x83,
    kU32 = 0x84,
    k65536Minus = 0x85,
    k65536Plus = 0x86,
    kU32Over = 0x87,
  };
  enum class Rank : uint8_t { kNone = 0, kSwaps = 1, kReversed = 2, kBroken = 3 };
  enum class Cap : uint8_t { kFuzzDefault = 0, kU8 = 1, kU16 = 2, kRelative = 3 };

  // `nodes`: the node count, for the modes that read one.
  PointsCaseWriter(Nodes mode, uint32_t nodes, Rank rank = Rank::kNone, Cap cap = Cap::kFuzzDefault,
                   uint32_t cap_value = 0);
  PointsCaseWriter& Swap(uint16_t a, uint16_t b);                  // Rank::kSwaps
  PointsCaseWriter& BrokenRank(uint8_t kind, uint16_t index = 0);  // Rank::kBroken
  // Node ids are written in the literal form (m%4 == 1, ids < 64) or raw U32.
  PointsCaseWriter& One(uint32_t hash, uint32_t node);
  PointsCaseWriter& EqualRun(uint32_t hash, const std::vector<uint32_t>& nodes);
  PointsCaseWriter& Extreme(uint8_t which, uint32_t node);
  PointsCaseWriter& Consecutive(uint32_t base, const std::vector<uint32_t>& nodes);
  PointsCaseWriter& AllEqual(uint32_t hash, uint32_t count, uint32_t first_node);
  PointsCaseWriter& Repeat(uint16_t index, uint32_t node);
  PointsCaseWriter& BadNode(uint32_t hash, uint8_t which);
  PointsCaseWriter& CapDelta(uint8_t delta);  // Cap::kRelative
  // Hash(uint32_t) and Mask(const MaskCaseWriter&): ProbesAndMaskWriter.
  std::string Bytes() const;

 private:
  void Node(FuzzWriter& w, uint32_t node);
  // Ends an op: its byte, `fields`, then `nodes` as Node() writes them.
  PointsCaseWriter& Op(PointOp op, const FuzzWriter& fields, const std::vector<uint32_t>& nodes);
  FuzzWriter header_;
  std::vector<std::pair<uint16_t, uint16_t>> swaps_;
  std::string broken_;
  std::vector<std::string> ops_;
  std::string cap_tail_;
  Rank rank_;
  Cap cap_;
};

}  // namespace chash::fuzz

#endif  // CHASH_FUZZ_POINTS_CASE_H_
