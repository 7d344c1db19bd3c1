// Ring methods that are the same on every target: lookups hand whole batches
// to the dispatched kernels (simd/search.cc); walks step through the columns,
// which are in ring order.
#include <algorithm>

#include "chash/crc32.h"
#include "chash/ring.h"
#include "ring_state.h"
#include "simd/search.h"

namespace chash {

// ---- PointCursor --------------------------------------------------------------

uint32_t PointCursor::node() const noexcept { return size_ == 0 ? Ring::kNoNode : nodes_[slot_]; }
uint32_t PointCursor::hash() const noexcept { return size_ == 0 ? 0 : hashes_[slot_]; }

void PointCursor::Advance() noexcept {
  if (size_ == 0) return;
  slot_ = slot_ + 1 == size_ ? 0 : slot_ + 1;
}

uint32_t PointCursor::Next() noexcept {
  if (size_ == 0) return Ring::kNoNode;
  const uint32_t current = nodes_[slot_];
  Advance();
  return current;
}

// ---- DistinctNodeWalk ---------------------------------------------------------

DistinctNodeWalk::DistinctNodeWalk(PointCursor cursor, uint32_t nodes_with_points,
                                   uint64_t points) noexcept
    : cursor_(cursor), remaining_nodes_(nodes_with_points), remaining_points_(points) {}

uint32_t DistinctNodeWalk::Next() noexcept {
  while (remaining_nodes_ > 0 && remaining_points_ > 0) {
    const uint32_t node = cursor_.Next();
    --remaining_points_;
    uint64_t& word = seen_[node / 64];
    const uint64_t bit = uint64_t{1} << (node % 64);
    if ((word & bit) == 0) {
      word |= bit;
      --remaining_nodes_;
      return node;
    }
  }
  return Ring::kNoNode;
}

// ---- Ring ----------------------------------------------------------------------

Ring::Ring() noexcept = default;
Ring::Ring(Ring&& other) noexcept { *this = std::move(other); }
Ring& Ring::operator=(Ring&& other) noexcept {
  state_ = std::move(other.state_);
  hashes_ = other.hashes_;
  nodes_ = other.nodes_;
  view_ = other.view_;
  size_ = other.size_;
  other.hashes_ = nullptr;
  other.nodes_ = nullptr;
  other.view_ = nullptr;
  other.size_ = 0;
  return *this;
}
Ring::~Ring() = default;

Ring::Ring(std::unique_ptr<internal::RingState> state) noexcept : state_(std::move(state)) {
  CacheColumns();
}

void Ring::CacheColumns() noexcept {
  internal::Columns& columns = state_->columns;
  state_->view = columns.index.View(columns.hash.data(), columns.node.data(), columns.size);
  hashes_ = columns.hash.data();
  nodes_ = columns.node.data();
  view_ = &state_->view;
  size_ = columns.size;
}

uint32_t Ring::FindNodeByHash(uint32_t hash) const noexcept {
  if (size_ == 0) return kNoNode;
  return internal::DispatchFindNodeByHash(*view_, hash);
}

uint32_t Ring::FindNode(std::string_view key) const noexcept {
  if (size_ == 0) return kNoNode;
  return internal::DispatchFindNodeByKey(*view_, key);
}

size_t Ring::FindNodesByHash(std::span<const uint32_t> hashes,
                             std::span<uint32_t> out) const noexcept {
  const size_t count = std::min(hashes.size(), out.size());
  if (size_ == 0) {
    std::fill_n(out.begin(), count, kNoNode);
    return count;
  }
  internal::DispatchFindNodesByHash(*view_, hashes.data(), count, out.data());
  return count;
}

size_t Ring::FindNodes(std::span<const std::string_view> keys,
                       std::span<uint32_t> out) const noexcept {
  const size_t count = std::min(keys.size(), out.size());
  if (size_ == 0) {
    std::fill_n(out.begin(), count, kNoNode);
    return count;
  }
  internal::DispatchFindNodes(*view_, keys.data(), count, out.data());
  return count;
}

PointCursor Ring::WalkFromHash(uint32_t hash) const noexcept {
  if (size_ == 0) return PointCursor();
  uint32_t slot = internal::DispatchLowerBoundSlot(*view_, hash);
  if (slot == size_) slot = 0;  // wrap-around
  return PointCursor(hashes_, nodes_, size_, slot);
}

PointCursor Ring::At(uint64_t position) const noexcept {
  if (position >= size_) return PointCursor();
  return PointCursor(hashes_, nodes_, size_, static_cast<uint32_t>(position));
}

PointCursor Ring::Walk(std::string_view key) const noexcept {
  return WalkFromHash(Crc32(key));
}

DistinctNodeWalk Ring::WalkDistinctFromHash(uint32_t hash) const noexcept {
  return DistinctNodeWalk(WalkFromHash(hash), nodes_with_points(), size_);
}

DistinctNodeWalk Ring::WalkDistinct(std::string_view key) const noexcept {
  return WalkDistinctFromHash(Crc32(key));
}

namespace {
// The default-constructed (and moved-from) ring has no state: it reads as
// this empty one.
const internal::RingState& StateOf(const std::unique_ptr<internal::RingState>& state) {
  static const internal::RingState kEmpty;
  return state ? *state : kEmpty;
}
}  // namespace

uint32_t Ring::num_nodes() const noexcept {
  return static_cast<uint32_t>(StateOf(state_).nodes.size());
}
uint64_t Ring::points_generated() const noexcept { return StateOf(state_).points_generated; }
uint32_t Ring::nodes_with_points() const noexcept { return StateOf(state_).nodes_with_points; }
bool Ring::owns_points(uint32_t id) const noexcept {
  const std::vector<uint64_t>& bits = StateOf(state_).owns_points;
  return id / 64 < bits.size() && ((bits[id / 64] >> (id % 64)) & 1) != 0;
}
bool Ring::has_points(uint32_t id) const noexcept {
  const std::vector<uint64_t>& bits = StateOf(state_).has_points;
  return id / 64 < bits.size() && ((bits[id / 64] >> (id % 64)) & 1) != 0;
}
CollisionLosers Ring::collision_losers() const noexcept {
  const internal::CollisionTable& losers = StateOf(state_).losers;
  return {losers.hashes(), losers.nodes()};
}
Flavor Ring::flavor() const noexcept { return StateOf(state_).flavor; }
uint32_t Ring::point_multiple() const noexcept { return StateOf(state_).point_multiple; }
TieBreak Ring::tie_break() const noexcept { return StateOf(state_).tie_break; }
bool Ring::is_raw() const noexcept { return StateOf(state_).raw; }
double Ring::build_seconds() const noexcept { return StateOf(state_).build_seconds; }
const NodeInfo& Ring::node(uint32_t id) const noexcept {
  static const NodeInfo kNoNodeInfo;  // empty strings: constant-initialized
  const std::vector<NodeInfo>& nodes = StateOf(state_).nodes;
  return id < nodes.size() ? nodes[id] : kNoNodeInfo;
}

MemoryUsage Ring::memory_usage() const noexcept {
  MemoryUsage usage;
  if (!state_) return usage;
  usage.column_bytes = state_->columns.allocated_bytes();
  usage.collision_table_bytes = state_->losers.allocated_bytes();
  usage.index_bytes = state_->columns.index.allocated_bytes();
  uint64_t other = sizeof(*this) + sizeof(internal::RingState) +
                   state_->nodes.capacity() * sizeof(NodeInfo) +
                   (state_->owns_points.capacity() + state_->has_points.capacity()) *
                       sizeof(uint64_t);
  for (const NodeInfo& info : state_->nodes) {
    // Heap blocks of strings beyond the small-string buffer.
    for (const std::string* text : {&info.address.written, &info.address.host,
                                    &info.address.port}) {
      if (text->capacity() > 15) other += text->capacity() + 1;
    }
  }
  usage.other_bytes = other;
  return usage;
}


}  // namespace chash
