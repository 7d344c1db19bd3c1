// DiffRings: a merge of the two rings' sorted points (see include/chash/diff.h).
#include "chash/diff.h"

#include <algorithm>
#include <new>
#include <unordered_map>

#include "chash/identity.h"
#include "ops/ops_internal.h"
#include "out_of_memory.h"

namespace chash {
namespace {

constexpr uint32_t kNone = Ring::kNoNode;

// One ring's answers in hash order: for the hashes up to end() the answer is
// node(); past its last point the ring wraps to its first point's node.
class Answers {
 public:
  explicit Answers(const Ring& ring)
      : cursor_(ring.Begin()),
        remaining_(ring.num_points()),
        wrap_node_(ring.empty() ? kNone : cursor_.node()) {}

  // Inclusive end of the current run of equal answers (in 64 bits, so that
  // the last run ends at 2^32 - 1 without overflow).
  uint64_t end() const noexcept { return remaining_ > 0 ? cursor_.hash() : kKeySpace - 1; }
  uint32_t node() const noexcept { return remaining_ > 0 ? cursor_.node() : wrap_node_; }
  void AdvancePast(uint64_t hash) noexcept {
    if (remaining_ > 0 && cursor_.hash() == hash) {
      cursor_.Advance();
      --remaining_;
    }
  }

 private:
  PointCursor cursor_;
  uint64_t remaining_;
  uint32_t wrap_node_;
};

}  // namespace

namespace {

RingDiff DiffRingsOrThrow(const Ring& old_ring, const Ring& new_ring) {
  RingDiff diff;
  std::unordered_map<std::string, uint32_t> by_backend;
  // index[id] = the entry of node id's backend; each ring's first node of a
  // backend is that side's id; new backends are appended.
  auto index_nodes = [&](const Ring& ring, uint32_t NodeDiff::*side) {
    std::vector<uint32_t> index(ring.num_nodes());
    for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
      std::string backend = internal::BackendIdentityOrThrow(ring.node(id), id);
      const auto [it, inserted] =
          by_backend.emplace(backend, static_cast<uint32_t>(diff.nodes.size()));
      if (inserted) {
        diff.nodes.push_back(
            {.backend = std::move(backend), .address = ring.node(id).address.written});
      }
      NodeDiff& entry = diff.nodes[it->second];
      if (entry.*side == kNone) entry.*side = id;
      index[id] = it->second;
    }
    return index;
  };
  const std::vector<uint32_t> old_index = index_nodes(old_ring, &NodeDiff::old_node);
  const std::vector<uint32_t> new_index = index_nodes(new_ring, &NodeDiff::new_node);

  Answers old_answers(old_ring), new_answers(new_ring);
  for (uint64_t start = 0; start < kKeySpace;) {
    const uint64_t end = std::min(old_answers.end(), new_answers.end());
    const uint64_t length = end - start + 1;
    const uint32_t old_node = old_answers.node(), new_node = new_answers.node();
    const uint32_t from = old_node == kNone ? kNone : old_index[old_node];
    const uint32_t to = new_node == kNone ? kNone : new_index[new_node];
    if (from != kNone) diff.nodes[from].old_hashes += length;
    if (to != kNone) diff.nodes[to].new_hashes += length;
    if (from != to) {
      diff.moved_hashes += length;
      if (from != kNone) diff.nodes[from].moved_out += length;
      if (to != kNone) diff.nodes[to].moved_in += length;
    }
    old_answers.AdvancePast(end);
    new_answers.AdvancePast(end);
    start = end + 1;
  }
  return diff;
}

}  // namespace

Result<RingDiff> DiffRings(const Ring& old_ring, const Ring& new_ring) {
  return internal::CatchOutOfMemory("diffing two rings", [&]() -> Result<RingDiff> {
    return DiffRingsOrThrow(old_ring, new_ring);
  });
}

}  // namespace chash
