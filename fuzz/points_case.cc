#include "points_case.h"

#include <algorithm>
#include <numeric>

#include "fuzz_support.h"
#include "lookup_diff.h"
#include "reference/reference_ring.h"
#include "ring_case.h"  // kFuzzMaxPoints

namespace chash::fuzz {
namespace {

uint32_t ReadNode(FuzzReader& r, uint32_t num_nodes) {
  const uint8_t m = r.U8();
  switch (m & 3) {
    case 0:
      return r.U16() % std::max<uint32_t>(num_nodes, 1);
    case 1:
      return m >> 2;
    case 2:
      return num_nodes - 1 - (m >> 2);  // unsigned wrap below 0: out of range
    default:
      return r.U32();
  }
}

}  // namespace

PointsCase DecodePointsCase(const uint8_t* data, size_t size) {
  FuzzReader r(data, size);
  PointsCase c;
  const uint8_t modes = r.U8();
  static constexpr uint32_t kFixedCounts[8] = {0, 65536, 65537, 65535, 0, 0, 0, 0};
  // The node-limit region costs tens of milliseconds a run (the engine
  // allocates a node table of 65,536 entries): behind bit 7 and a key byte,
  // so that most runs stay fast.
  if ((modes & 0x80) && r.U8() == kNodeLimitKey) {
    switch (modes & 7) {
      case 0:
        c.num_nodes = r.U16();
        break;
      case 4:
        c.num_nodes = r.U32();
        break;
      case 5:
        c.num_nodes = 65536 - r.U8();
        break;
      case 6:
        c.num_nodes = 65536 + r.U8();
        break;
      case 7:
        c.num_nodes = r.U32() | 0x10000;
        break;
      default:
        c.num_nodes = kFixedCounts[modes & 7];
    }
  } else {
    switch (modes & 7) {
      case 0:
        c.num_nodes = 1 + r.U8() % 16;
        break;
      case 1:
        c.num_nodes = r.U8();
        break;
      case 2:
        c.num_nodes = 1 + r.U8() % 4;
        break;
      case 3:
        c.num_nodes = 0;
        break;
      case 4:
        c.num_nodes = 1;
        break;
      case 5:
        c.num_nodes = 2;
        break;
      case 6:
        c.num_nodes = 1 + r.U8() % 64;
        break;
      default:
        c.num_nodes = 256 + r.U8();
    }
  }
  // A rank for more than 65,537 nodes is never looked at (kTooManyNodes
  // comes first); keep it small rather than allocate gigabytes.
  const uint32_t rank_size = c.num_nodes <= kMaxNodes + 1 ? c.num_nodes : 1;
  switch ((modes >> 3) & 3) {
    case 0:
      break;
    case 1: {
      c.tie_rank.resize(rank_size);
      std::iota(c.tie_rank.begin(), c.tie_rank.end(), 0u);
      const uint32_t swaps = r.U8();
      for (uint32_t i = 0; i < swaps; ++i) {
        const uint32_t a = r.U16(), b = r.U16();
        if (rank_size > 0) std::swap(c.tie_rank[a % rank_size], c.tie_rank[b % rank_size]);
      }
      break;
    }
    case 2:
      c.tie_rank.resize(rank_size);
      for (uint32_t i = 0; i < rank_size; ++i) c.tie_rank[i] = rank_size - 1 - i;
      break;
    default: {
      c.tie_rank.resize(rank_size);
      std::iota(c.tie_rank.begin(), c.tie_rank.end(), 0u);
      switch (r.U8() % 4) {
        case 0:
          if (!c.tie_rank.empty()) c.tie_rank.pop_back();
          break;
        case 1:
          c.tie_rank.push_back(rank_size);
          break;
        case 2: {
          const uint32_t index = r.U16();
          if (c.tie_rank.empty()) c.tie_rank.push_back(0);
          c.tie_rank[index % c.tie_rank.size()] = rank_size + 7;
          break;
        }
        default: {  // a repeated rank (a permutation if there is one node)
          const uint32_t index = r.U16();
          if (!c.tie_rank.empty()) {
            c.tie_rank[index % c.tie_rank.size()] = c.tie_rank[(index + 1) % c.tie_rank.size()];
          }
        }
      }
    }
  }
  const int cap_mode = (modes >> 5) & 3;
  if (cap_mode == 0) c.max_points = kFuzzMaxPoints;
  if (cap_mode == 1) c.max_points = r.U8();
  if (cap_mode == 2) c.max_points = r.U16();

  auto add = [&](uint32_t hash, uint32_t node) {
    if (c.points.size() < kMaxRawPoints) c.points.push_back({hash, node});
  };
  const uint32_t op_count = r.U8();
  for (uint32_t i = 0; i < op_count && !r.empty() && c.points.size() < kMaxRawPoints; ++i) {
    switch (r.U8() & 7) {
      case kOnePoint: {
        const uint32_t hash = r.U32();
        add(hash, ReadNode(r, c.num_nodes));
        break;
      }
      case kEqualRun: {
        const uint32_t hash = r.U32();
        const uint32_t k = 2 + r.U8() % 8;
        for (uint32_t j = 0; j < k; ++j) add(hash, ReadNode(r, c.num_nodes));
        break;
      }
      case kExtreme: {
        static constexpr uint32_t kHashes[4] = {0u, 1u, 0xFFFFFFFEu, 0xFFFFFFFFu};
        const uint32_t hash = kHashes[r.U8() % 4];
        add(hash, ReadNode(r, c.num_nodes));
        break;
      }
      case kConsecutive: {
        const uint32_t base = r.U32();
        const uint32_t k = 1 + r.U8() % 16;
        for (uint32_t j = 0; j < k; ++j) add(base + j, ReadNode(r, c.num_nodes));
        break;
      }
      case kAllEqual: {
        const uint32_t hash = r.U32();
        const uint32_t k = 1 + r.U8();
        const uint32_t node = ReadNode(r, c.num_nodes);
        for (uint32_t j = 0; j < k; ++j) add(hash, node + j);
        break;
      }
      case kRandom: {
        const uint32_t k = r.U8();
        for (uint32_t j = 0; j < k; ++j) {
          const uint32_t hash = r.U32();
          add(hash, ReadNode(r, c.num_nodes));
        }
        break;
      }
      case kRepeat: {
        const uint32_t index = r.U16();
        const uint32_t node = ReadNode(r, c.num_nodes);
        if (!c.points.empty()) add(c.points[index % c.points.size()].hash, node);
        break;
      }
      default: {  // kBadNode
        const uint32_t hash = r.U32();
        static constexpr uint32_t kFixed[3] = {65535u, 65536u, 0xFFFFFFFFu};
        const uint32_t which = r.U8() % 5;
        add(hash, which == 0 ? c.num_nodes : which == 1 ? c.num_nodes + 1 : kFixed[which - 2]);
      }
    }
  }
  if (cap_mode == 3) {
    const uint8_t d = r.U8();
    const uint64_t count = c.points.size();
    c.max_points = d == 0xFF ? kHardMaxPoints + 1
                   : (d & 1) ? count - std::min<uint64_t>(count, d >> 1)
                             : count + (d >> 1);
  }
  const uint32_t hash_count = r.U8() % 17;
  for (uint32_t i = 0; i < hash_count; ++i) c.hashes.push_back(r.U32());
  // (Past 65,536 nodes the build fails first; keep the mask and loads small.)
  c.mask = DecodeMaskCase(r, std::min(c.num_nodes, kMaxNodes + 1));
  return c;
}

std::string PointsCase::Describe() const {
  std::string out = "points case: " + std::to_string(num_nodes) + " nodes, " +
                    std::to_string(points.size()) + " points, max_points " +
                    std::to_string(max_points) + ", tie_rank of " +
                    std::to_string(tie_rank.size()) + "\n";
  out += ElidedLines(points.size(), 32, [&](size_t i) {
    return "  point " + std::to_string(i) + ": " + Hex32(points[i].hash) + " node " +
           std::to_string(points[i].node) + "\n";
  });
  if (!tie_rank.empty() && tie_rank.size() <= 16) {
    out += "  tie_rank:";
    for (const uint32_t rank : tie_rank) out.append(" ").append(std::to_string(rank));
    out += "\n";
  }
  return out + "  " + mask.Describe();
}

PointsOutcome RunPointsDiff(const PointsCase& c) {
  ReachTheSingleLookupWindow();
  const std::string description = c.Describe();
  PointsOutcome outcome;
  Result<Ring> built = BuildRingFromPoints(c.num_nodes, c.points, c.tie_rank, c.max_points);
  const Result<reference::ReferenceRing> ref =
      reference::ReferenceRing::FromPoints(c.num_nodes, c.points, c.tie_rank, c.max_points);
  if (built.status().code() != ref.status().code()) {
    Fail("build status: engine " + built.status().ToString() + ", reference " +
             ref.status().ToString(),
         description);
  }
  outcome.code = built.status().code();
  if (!built.ok()) {
    CheckErrorFormat(built.status(), description);
    return outcome;
  }
  Ring ring = std::move(built).value();
  CheckMoves(ring, description);
  if (!ring.is_raw() || ring.num_nodes() != c.num_nodes ||
      ring.tie_break() != (c.tie_rank.empty() ? TieBreak::kConfigOrder : TieBreak::kExplicitRank)) {
    Fail("raw ring options differ", description);
  }
  // A raw node's weight is its number of points (ring.h).
  std::vector<uint32_t> counts(c.num_nodes, 0);
  for (const RawPoint& point : c.points) ++counts[point.node];
  for (uint32_t id = 0; id < c.num_nodes; ++id) {
    if (ring.node(id).weight != counts[id] || !ring.node(id).address.written.empty()) {
      Fail("node " + std::to_string(id) + " has weight " + std::to_string(ring.node(id).weight) +
               ", expected " + std::to_string(counts[id]),
           description);
    }
  }
  // The oracle of the failover lookups: the same points without those of
  // unavailable nodes, the same tie ranks.
  const reference::ReferenceRing* available_ref = &ref.value();
  Result<reference::ReferenceRing> subset = reference::ReferenceRing();
  if (!c.mask.AllAvailable(c.num_nodes)) {
    std::vector<RawPoint> points;
    for (const RawPoint& point : c.points) {
      if (c.mask.IsAvailable(point.node)) points.push_back(point);
    }
    subset = reference::ReferenceRing::FromPoints(c.num_nodes, points, c.tie_rank, c.max_points);
    if (!subset.ok()) Fail("the ring of the available nodes failed to build", description);
    available_ref = &subset.value();
  }
  static const std::vector<std::string> kNoKeys;
  outcome.checks = CompareRingWithReference(ring, ref.value(), kNoKeys, c.hashes, description,
                                            &c.mask, available_ref);
  outcome.points = ring.num_points();
  outcome.collisions = ring.collisions();
  return outcome;
}

// ---- PointsCaseWriter --------------------------------------------------------------

PointsCaseWriter::PointsCaseWriter(Nodes mode, uint32_t nodes, Rank rank, Cap cap,
                                   uint32_t cap_value)
    : rank_(rank), cap_(cap) {
  header_.U8(static_cast<uint8_t>(static_cast<int>(mode) | static_cast<int>(rank) << 3 |
                                  static_cast<int>(cap) << 5));
  if (static_cast<int>(mode) & 0x80) header_.U8(kNodeLimitKey);
  switch (mode) {
    case Nodes::kSmall16:
    case Nodes::kTiny4:
    case Nodes::kSmall64:
      header_.U8(static_cast<uint8_t>(nodes - 1));
      break;
    case Nodes::kU8:
      header_.U8(static_cast<uint8_t>(nodes));
      break;
    case Nodes::k256Plus:
      header_.U8(static_cast<uint8_t>(nodes - 256));
      break;
    case Nodes::kU16:
      header_.U16(static_cast<uint16_t>(nodes));
      break;
    case Nodes::kU32:
    case Nodes::kU32Over:
      header_.U32(nodes);
      break;
    case Nodes::k65536Minus:
      header_.U8(static_cast<uint8_t>(65536 - nodes));
      break;
    case Nodes::k65536Plus:
      header_.U8(static_cast<uint8_t>(nodes - 65536));
      break;
    default:
      break;
  }
  cap_tail_.clear();
  if (cap == Cap::kU8) cap_tail_ = FuzzWriter().U8(static_cast<uint8_t>(cap_value)).bytes();
  if (cap == Cap::kU16) cap_tail_ = FuzzWriter().U16(static_cast<uint16_t>(cap_value)).bytes();
}

PointsCaseWriter& PointsCaseWriter::Swap(uint16_t a, uint16_t b) {
  swaps_.emplace_back(a, b);
  return *this;
}

PointsCaseWriter& PointsCaseWriter::BrokenRank(uint8_t kind, uint16_t index) {
  FuzzWriter w;
  w.U8(kind);
  if (kind >= 2) w.U16(index);
  broken_ = w.bytes();
  return *this;
}

void PointsCaseWriter::Node(FuzzWriter& w, uint32_t node) {
  if (node < 64) {
    w.U8(static_cast<uint8_t>(1 | node << 2));
  } else {
    w.U8(3).U32(node);
  }
}

PointsCaseWriter& PointsCaseWriter::Op(PointOp op, const FuzzWriter& fields,
                                       const std::vector<uint32_t>& nodes) {
  FuzzWriter w;
  w.U8(op).Bytes(fields.bytes());
  for (const uint32_t node : nodes) Node(w, node);
  ops_.push_back(w.bytes());
  return *this;
}

PointsCaseWriter& PointsCaseWriter::One(uint32_t hash, uint32_t node) {
  return Op(kOnePoint, FuzzWriter().U32(hash), {node});
}

PointsCaseWriter& PointsCaseWriter::EqualRun(uint32_t hash, const std::vector<uint32_t>& nodes) {
  return Op(kEqualRun, FuzzWriter().U32(hash).U8(static_cast<uint8_t>(nodes.size() - 2)), nodes);
}

PointsCaseWriter& PointsCaseWriter::Extreme(uint8_t which, uint32_t node) {
  return Op(kExtreme, FuzzWriter().U8(which), {node});
}

PointsCaseWriter& PointsCaseWriter::Consecutive(uint32_t base, const std::vector<uint32_t>& nodes) {
  return Op(kConsecutive, FuzzWriter().U32(base).U8(static_cast<uint8_t>(nodes.size() - 1)), nodes);
}

PointsCaseWriter& PointsCaseWriter::AllEqual(uint32_t hash, uint32_t count, uint32_t first_node) {
  return Op(kAllEqual, FuzzWriter().U32(hash).U8(static_cast<uint8_t>(count - 1)), {first_node});
}

PointsCaseWriter& PointsCaseWriter::Repeat(uint16_t index, uint32_t node) {
  return Op(kRepeat, FuzzWriter().U16(index), {node});
}

PointsCaseWriter& PointsCaseWriter::BadNode(uint32_t hash, uint8_t which) {
  return Op(kBadNode, FuzzWriter().U32(hash).U8(which), {});
}

PointsCaseWriter& PointsCaseWriter::CapDelta(uint8_t delta) {
  cap_tail_ = FuzzWriter().U8(delta).bytes();
  return *this;
}

std::string PointsCaseWriter::Bytes() const {
  FuzzWriter w;
  w.Bytes(header_.bytes());
  if (rank_ == Rank::kSwaps) {
    w.U8(static_cast<uint8_t>(swaps_.size()));
    for (const auto& [a, b] : swaps_) w.U16(a).U16(b);
  }
  if (rank_ == Rank::kBroken) w.Bytes(broken_.empty() ? std::string(1, '\0') : broken_);
  if (cap_ == Cap::kU8 || cap_ == Cap::kU16) w.Bytes(cap_tail_);
  w.U8(static_cast<uint8_t>(ops_.size()));
  for (const std::string& op : ops_) w.Bytes(op);
  if (cap_ == Cap::kRelative) w.Bytes(cap_tail_.empty() ? std::string(1, '\0') : cap_tail_);
  return WithProbesAndMask(w);
}

}  // namespace chash::fuzz
