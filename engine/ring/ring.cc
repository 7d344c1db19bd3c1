// Ring methods that are the same on every target: lookups hand whole batches
// to the dispatched kernels (simd/search.cc); walks step through the columns,
// which are in ring order.
#include "chash/ring.h"

#include <algorithm>

#include "chash/crc32.h"
#include "flavors.h"
#include "hash/program_hashes.h"
#include "ring/ring_state.h"
#include "routing/distinct_walk.h"
#include "routing/lookup_rules.h"
#include "simd/search.h"

namespace chash {

// ---- PointCursor --------------------------------------------------------------

uint32_t PointCursor::node() const noexcept { return size_ == 0 ? Ring::kNoNode : nodes_[slot_]; }
uint32_t PointCursor::hash() const noexcept {
  if (size_ == 0) return 0;
  return hashes_ != nullptr ? hashes_[slot_] : slot_;
}
uint64_t PointCursor::hash64() const noexcept {
  if (size_ == 0) return 0;
  if (hashes_ == nullptr) return slot_;
  if (low_ != nullptr) return (uint64_t{hashes_[slot_]} << 32) | low_[slot_];
  return hashes_[slot_];
}

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
  return internal::NextUnseenNode(cursor_, seen_.data(), kMaxNodes, remaining_points_,
                                  remaining_nodes_);
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
  fused_crc32_size_ = other.fused_crc32_size_;
  column_lookup_size_ = other.column_lookup_size_;
  wide_ = other.wide_;
  other.hashes_ = nullptr;
  other.nodes_ = nullptr;
  other.view_ = nullptr;
  other.size_ = 0;
  other.fused_crc32_size_ = 0;
  other.column_lookup_size_ = 0;
  return *this;
}
Ring::~Ring() = default;

Ring::Ring(std::unique_ptr<internal::RingState> state) noexcept : state_(std::move(state)) {
  CacheColumns();
}

namespace {
// The default-constructed (and moved-from) ring has no state: it reads as
// this empty one.
const internal::RingState& StateOf(const std::unique_ptr<internal::RingState>& state) {
  static const internal::RingState kEmpty;
  return state ? *state : kEmpty;
}

const uint32_t* LowOf(const internal::RingState& state) { return state.columns.low.data(); }
}  // namespace

void Ring::CacheColumns() noexcept {
  internal::RingState& state = *state_;
  // Rings made outside RingBuilder (snapshots) know their flavor and
  // multiple; their options say the same.
  // (Not the other programs' flavors: their options keep the multiple at
  // 160 while point_multiple reports their own, and a snapshot sets them.)
  if (!state.raw && static_cast<uint8_t>(state.flavor) <= static_cast<uint8_t>(Flavor::kResty)) {
    state.options.flavor = state.flavor;
    state.options.point_multiple = state.point_multiple;
  }
  internal::Columns& columns = state.columns;
  state.view = columns.index.View(columns.hash.data(), columns.node.data(), columns.size);
  hashes_ = columns.hash.data();
  nodes_ = columns.node.data();
  view_ = &state.view;
  size_ = columns.size;
  wide_ = key_hash_bits() == 64;
  const bool by_column =
      !wide_ && (state.rule == LookupRule::kSuccessor ||
                 (state.rule == LookupRule::kSuccessorClamped && !state.varnish_bisection));
  column_lookup_size_ = by_column ? size_ : 0;
  fused_crc32_size_ =
      by_column && state.rule == LookupRule::kSuccessor && state.key_hasher == internal::KeyHasher{}
          ? size_
          : 0;
}

CHASH_LINE_ALIGNED uint32_t Ring::FindNodeByHash(uint32_t hash) const noexcept {
  if (column_lookup_size_ == 0) [[unlikely]] {
    return FindNodeByHashAndRule(hash);
  }
  return internal::DispatchFindNodeByHash(*view_, hash);
}

namespace {
// The slot a 32-bit ring answers `x` with, from x's lower bound `slot`, by
// the rules the node column does not answer alone.
uint32_t ResolveSlot(const internal::RingState& state, const internal::SearchView& view, uint32_t x,
                     uint32_t slot) {
  if (state.rule == LookupRule::kNearest) return internal::NearestOfSlot(view, x, slot);
  if (state.rule == LookupRule::kSuccessorClamped) {
    return internal::VarnishSlot(view.level[0], view.size, x, slot);
  }
  return slot == view.size ? 0 : slot;
}
}  // namespace

uint32_t Ring::FindNodeByHashAndRule(uint32_t hash) const noexcept {
  if (size_ == 0 || wide_) return kNoNode;
  return nodes_[ResolveSlot(*state_, *view_, hash, internal::DispatchLowerBoundSlot(*view_, hash))];
}

CHASH_LINE_ALIGNED uint32_t Ring::FindNode(std::string_view key) const noexcept {
  if (fused_crc32_size_ == 0) [[unlikely]] {
    return FindNodeByKeyHashAndRule(key);
  }
  return internal::DispatchFindNodeByKey(*view_, key);
}

uint32_t Ring::FindNodeByKeyHashAndRule(std::string_view key) const noexcept {
  if (size_ == 0) return kNoNode;
  return FindNodeByHash64(KeyHash(key));
}

uint32_t Ring::FindNodeOther(std::string_view key) const noexcept {
  return FindNodeByKeyHashAndRule(key);
}

uint32_t Ring::FindNodeByHashOther(uint32_t hash) const noexcept {
  return FindNodeByHashAndRule(hash);
}

uint64_t Ring::KeyHash(std::string_view key) const noexcept {
  return internal::HashKey(StateOf(state_).key_hasher, key.data(), key.size());
}

uint32_t Ring::FindNodeByHash64(uint64_t hash) const noexcept {
  if (size_ == 0) return kNoNode;
  const internal::RingState& state = *state_;
  if (state.rule == LookupRule::kTable) return nodes_[hash % size_];
  if (!wide_) {
    return hash > UINT32_MAX ? kNoNode : FindNodeByHash(static_cast<uint32_t>(hash));
  }
  return nodes_[internal::DispatchLowerBoundSlot64(*view_, LowOf(state), hash)];
}

size_t Ring::FindNodesByHash(std::span<const uint32_t> hashes,
                             std::span<uint32_t> out) const noexcept {
  const size_t count = std::min(hashes.size(), out.size());
  if (column_lookup_size_ != 0) [[likely]] {
    internal::DispatchFindNodesByHash(*view_, hashes.data(), count, out.data());
    return count;
  }
  if (size_ == 0 || wide_) {
    std::fill_n(out.begin(), count, kNoNode);
    return count;
  }
  // haproxy (and Varnish's bisection): the lower bounds in one batch, then
  // the rule.
  internal::DispatchFindSlotsByHash(*view_, hashes.data(), count, out.data());
  for (size_t i = 0; i < count; ++i) {
    out[i] = nodes_[ResolveSlot(*state_, *view_, hashes[i], out[i])];
  }
  return count;
}

size_t Ring::FindNodesByHash64(std::span<const uint64_t> hashes,
                               std::span<uint32_t> out) const noexcept {
  const size_t count = std::min(hashes.size(), out.size());
  if (size_ == 0) {
    std::fill_n(out.begin(), count, kNoNode);
    return count;
  }
  const internal::RingState& state = *state_;
  if (state.rule == LookupRule::kTable) {
    for (size_t i = 0; i < count; ++i) out[i] = nodes_[hashes[i] % size_];
    return count;
  }
  constexpr size_t kChunk = 64;
  uint32_t part[kChunk];
  const bool wide = wide_;
  for (size_t begin = 0; begin < count; begin += kChunk) {
    const size_t n = std::min(kChunk, count - begin);
    bool fits = true;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t h = hashes[begin + i];
      part[i] = static_cast<uint32_t>(wide ? h >> 32 : h);
      fits = fits && (wide || h <= UINT32_MAX);
    }
    if (!wide) {
      FindNodesByHash({part, n}, out.subspan(begin, n));
      if (!fits) {
        for (size_t i = 0; i < n; ++i) {
          if (hashes[begin + i] > UINT32_MAX) out[begin + i] = kNoNode;
        }
      }
      continue;
    }
    internal::DispatchFindSlotsByHash(*view_, part, n, out.data() + begin);
    for (size_t i = 0; i < n; ++i) {
      out[begin + i] = nodes_[internal::Slot64OfHighSlot(*view_, LowOf(state), hashes[begin + i],
                                                         out[begin + i])];
    }
  }
  return count;
}

size_t Ring::FindNodes(std::span<const std::string_view> keys,
                       std::span<uint32_t> out) const noexcept {
  const size_t count = std::min(keys.size(), out.size());
  if (fused_crc32_size_ != 0) [[likely]] {
    internal::DispatchFindNodes(*view_, keys.data(), count, out.data());
    return count;
  }
  if (size_ == 0) {
    std::fill_n(out.begin(), count, kNoNode);
    return count;
  }
  // The flavor's key hash a chunk at a time, then the batch lookup of
  // those hashes.
  constexpr size_t kChunk = 64;
  uint64_t hashes[kChunk];
  const internal::KeyHasher& hasher = state_->key_hasher;
  for (size_t begin = 0; begin < count; begin += kChunk) {
    const size_t n = std::min(kChunk, count - begin);
    internal::HashKeys(hasher, keys.data() + begin, n, hashes);
    FindNodesByHash64({hashes, n}, out.subspan(begin, n));
  }
  return count;
}

PointCursor Ring::CursorAt(uint32_t slot) const noexcept {
  const internal::RingState& state = StateOf(state_);
  return PointCursor(state.rule == LookupRule::kTable ? nullptr : hashes_, LowOf(state), nodes_,
                     size_, slot);
}

PointCursor Ring::WalkFromHash(uint32_t hash) const noexcept {
  if (size_ == 0 || wide_) return PointCursor();
  // Wraps past the last point, but on varnish-shard rings (no wrap) and
  // haproxy rings (the nearer point).
  const uint32_t lower = internal::DispatchLowerBoundSlot(*view_, hash);
  return CursorAt(ResolveSlot(*state_, *view_, hash, lower));
}

PointCursor Ring::WalkFromHash64(uint64_t hash) const noexcept {
  if (size_ == 0) return PointCursor();
  const internal::RingState& state = *state_;
  if (state.rule == LookupRule::kTable) return CursorAt(static_cast<uint32_t>(hash % size_));
  if (!wide_) {
    return hash > UINT32_MAX ? PointCursor() : WalkFromHash(static_cast<uint32_t>(hash));
  }
  const uint32_t slot = internal::DispatchLowerBoundSlot64(*view_, LowOf(state), hash);
  return CursorAt(slot == size_ ? 0 : slot);
}

uint32_t Ring::FindNodeForAttempt(uint64_t hash, uint32_t attempt) const noexcept {
  if (size_ == 0) return kNoNode;
  if (state_->rule == LookupRule::kTable) {
    // Envoy's Maglev retry: the hash mutated by the value with most bits set.
    if (attempt > 0) hash ^= ~uint64_t{0} - attempt + 1;
    return nodes_[hash % size_];
  }
  const PointCursor start = WalkFromHash64(hash);
  if (start.empty()) return kNoNode;
  return nodes_[(uint64_t{start.position()} + attempt) % size_];
}

PointCursor Ring::At(uint64_t position) const noexcept {
  if (position >= size_) return PointCursor();
  return CursorAt(static_cast<uint32_t>(position));
}

PointCursor Ring::Walk(std::string_view key) const noexcept {
  if (fused_crc32_size_ != 0) return WalkFromHash(Crc32(key));
  return WalkFromHash64(KeyHash(key));
}

DistinctNodeWalk Ring::WalkDistinctFromHash(uint32_t hash) const noexcept {
  return DistinctNodeWalk(WalkFromHash(hash), nodes_with_points(), size_);
}

DistinctNodeWalk Ring::WalkDistinctFromHash64(uint64_t hash) const noexcept {
  return DistinctNodeWalk(WalkFromHash64(hash), nodes_with_points(), size_);
}

DistinctNodeWalk Ring::WalkDistinct(std::string_view key) const noexcept {
  return DistinctNodeWalk(Walk(key), nodes_with_points(), size_);
}

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
const RingOptions& Ring::options() const noexcept { return StateOf(state_).options; }
LookupRule Ring::lookup_rule() const noexcept { return StateOf(state_).rule; }
uint32_t Ring::key_hash_bits() const noexcept {
  const internal::RingState& state = StateOf(state_);
  const internal::FlavorRow* row = internal::FindFlavor(state.flavor);
  return row == nullptr || state.raw ? 32 : row->key_hash_bits;
}
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

namespace internal {
uint32_t LowerBoundSlot(const Ring& ring, uint32_t hash) noexcept {
  const RingState* state = RingFactory::StateOf(ring);
  if (state == nullptr || ring.empty()) return 0;
  return DispatchLowerBoundSlot(state->view, hash);
}
}  // namespace internal

}  // namespace chash
