// DiffRings: a merge of the two rings' sorted points (see include/chash/diff.h).
#include "chash/diff.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <unordered_map>

#include "chash/identity.h"
#include "fleet/hash_runs.h"
#include "identity/throwing_cores.h"
#include "util/out_of_memory.h"
#include "ring/ring_state.h"

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

using internal::Wide;

// Whether a key gets one hash on both rings (then the diff is exact): the
// rings' key hashes are the same function (CRC-32 for nginx, pingora and
// resty, and for HAProxy's crc32 without avalanche).
bool SameKeyHash(const Ring& a, const Ring& b) {
  const internal::RingState* sa = internal::RingFactory::StateOf(a);
  const internal::RingState* sb = internal::RingFactory::StateOf(b);
  if (sa == nullptr || sb == nullptr) return true;  // an empty ring answers nothing anywhere
  return sa->key_hasher == sb->key_hasher && internal::SpaceBits(a) == internal::SpaceBits(b);
}

// Per-backend sums in hashes of the rings' space, then given in units of
// 2^32 hashes (ScaleShares: each total still exact to one unit).
struct WideTally {
  explicit WideTally(size_t backends)
      : old_hashes(backends), new_hashes(backends), moved_out(backends), moved_in(backends) {}
  std::vector<Wide> old_hashes, new_hashes, moved_out, moved_in;
  Wide moved = 0;

  void Add(uint32_t from, uint32_t to, Wide length) {
    if (from != kNone) old_hashes[from] += length;
    if (to != kNone) new_hashes[to] += length;
    if (from != to) {
      moved += length;
      if (from != kNone) moved_out[from] += length;
      if (to != kNone) moved_in[to] += length;
    }
  }
  void Into(RingDiff& diff, uint32_t space_bits) const {
    const std::vector<uint64_t> o = internal::ScaleShares(old_hashes, space_bits);
    const std::vector<uint64_t> n = internal::ScaleShares(new_hashes, space_bits);
    const std::vector<uint64_t> out = internal::ScaleShares(moved_out, space_bits);
    const std::vector<uint64_t> in = internal::ScaleShares(moved_in, space_bits);
    for (size_t i = 0; i < diff.nodes.size(); ++i) {
      diff.nodes[i].old_hashes = o[i];
      diff.nodes[i].new_hashes = n[i];
      diff.nodes[i].moved_out = out[i];
      diff.nodes[i].moved_in = in[i];
    }
    diff.moved_hashes = static_cast<uint64_t>(moved >> (space_bits - 32));
  }
};

void MergeRuns(const Ring& old_ring, const Ring& new_ring, const std::vector<uint32_t>& old_index,
               const std::vector<uint32_t>& new_index, RingDiff& diff) {
  internal::HashRunReader old_runs(old_ring), new_runs(new_ring);
  WideTally tally(diff.nodes.size());
  internal::HashRun a, b;
  bool more = old_runs.Next(a) && new_runs.Next(b);
  uint64_t start = 0;
  while (more) {
    const uint64_t end = std::min(a.last, b.last);
    const uint32_t from = a.node == kNone ? kNone : old_index[a.node];
    const uint32_t to = b.node == kNone ? kNone : new_index[b.node];
    tally.Add(from, to, Wide{end} - start + 1);
    if (end == old_runs.top()) break;
    start = end + 1;
    if (a.last == end) more = old_runs.Next(a);
    if (b.last == end) more = more && new_runs.Next(b);
  }
  tally.Into(diff, internal::SpaceBits(old_ring));
}

// Two Maglev tables of one size: entry by entry.
void MergeTables(const Ring& old_ring, const Ring& new_ring, const std::vector<uint32_t>& old_index,
                 const std::vector<uint32_t>& new_index, RingDiff& diff) {
  WideTally tally(diff.nodes.size());
  const uint64_t size = old_ring.num_points();
  for (uint64_t entry = 0; entry < size; ++entry) {
    tally.Add(old_index[old_ring.At(entry).node()], new_index[new_ring.At(entry).node()],
              internal::TableEntryHashes(size, entry));
  }
  tally.Into(diff, 64);
}

// Rings that hash a key differently (or a table against a ring, or tables
// of two sizes): a key's two answers are taken as independent, each drawn
// with the backend's exact share on its ring. Expected values, so
// diff.exact is false.
void EstimateIndependent(const Ring& old_ring, const Ring& new_ring,
                         const std::vector<uint32_t>& old_index,
                         const std::vector<uint32_t>& new_index, RingDiff& diff) {
  diff.exact = false;
  const auto backend_shares = [&](const Ring& ring, const std::vector<uint32_t>& index) {
    std::vector<Wide> shares(diff.nodes.size(), 0);
    const std::vector<Wide> exact = internal::ExactNodeShares(ring);
    for (size_t id = 0; id < exact.size(); ++id) shares[index[id]] += exact[id];
    return shares;
  };
  const std::vector<Wide> old_shares = backend_shares(old_ring, old_index);
  const std::vector<Wide> new_shares = backend_shares(new_ring, new_index);
  const std::vector<uint64_t> old_scaled =
      internal::ScaleShares(old_shares, internal::SpaceBits(old_ring));
  const std::vector<uint64_t> new_scaled =
      internal::ScaleShares(new_shares, internal::SpaceBits(new_ring));
  const long double unit = static_cast<long double>(kKeySpace);
  long double same = 0;
  for (size_t i = 0; i < diff.nodes.size(); ++i) {
    const long double p = static_cast<long double>(old_scaled[i]) / unit;
    const long double q = static_cast<long double>(new_scaled[i]) / unit;
    same += p * q;
    NodeDiff& node = diff.nodes[i];
    node.old_hashes = old_scaled[i];
    node.new_hashes = new_scaled[i];
    node.moved_out = static_cast<uint64_t>(std::llround(p * (1 - q) * unit));
    node.moved_in = static_cast<uint64_t>(std::llround(q * (1 - p) * unit));
  }
  const bool old_empty = old_ring.empty(), new_empty = new_ring.empty();
  diff.moved_hashes =
      old_empty && new_empty ? 0 : static_cast<uint64_t>(std::llround((1 - same) * unit));
}

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
  if (internal::UsesHashRuns(old_ring) || internal::UsesHashRuns(new_ring)) {
    if (SameKeyHash(old_ring, new_ring)) {
      const bool old_table = old_ring.lookup_rule() == LookupRule::kTable;
      const bool new_table = new_ring.lookup_rule() == LookupRule::kTable;
      if (!old_table && !new_table) {
        MergeRuns(old_ring, new_ring, old_index, new_index, diff);
        return diff;
      }
      if (old_table && new_table && old_ring.num_points() == new_ring.num_points()) {
        MergeTables(old_ring, new_ring, old_index, new_index, diff);
        return diff;
      }
    }
    EstimateIndependent(old_ring, new_ring, old_index, new_index, diff);
    return diff;
  }

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
