#include "fleet/hash_runs.h"

#include "builder/flavor_points.h"

namespace chash::internal {

HashRunReader::HashRunReader(const Ring& ring) noexcept
    : ring_(ring),
      cursor_(ring.Begin()),
      remaining_(ring.num_points()),
      rule_(ring.lookup_rule()),
      top_(SpaceBits(ring) == 64 ? UINT64_MAX : UINT32_MAX),
      space_(Wide{top_} + 1) {}

bool HashRunReader::ReadGroup(Group& group) noexcept {
  if (remaining_ == 0) return false;
  group.value = cursor_.hash64();
  group.first_node = group.last_node = cursor_.node();
  group.size = 1;
  cursor_.Advance();
  --remaining_;
  while (remaining_ > 0 && cursor_.hash64() == group.value) {
    group.last_node = cursor_.node();
    ++group.size;
    cursor_.Advance();
    --remaining_;
  }
  return true;
}

uint32_t HashRunReader::Hit(const Group& group) const noexcept {
  return group.size == 1 ? group.first_node : ring_.FindNodeByHash64(group.value);
}

void HashRunReader::Push(Wide first, Wide last, uint32_t node) noexcept {
  if (first > last) return;
  queue_[queued_++] = {static_cast<uint64_t>(first), static_cast<uint64_t>(last), node};
}

Wide HashRunReader::WrapSplit() const noexcept {
  const Wide gap = space_ - last_value_ + first_group_.value;
  return Wide{last_value_} + gap / 2;
}

void HashRunReader::Start() noexcept {
  started_ = true;
  if (ring_.empty()) {
    Push(0, top_, Ring::kNoNode);
    finished_ = true;
    return;
  }
  if (rule_ == LookupRule::kSuccessorClamped && ring_.num_points() == 2) {
    Push(0, top_, ring_.At(1).node());  // Varnish's first probe is the last index
    finished_ = true;
    return;
  }
  const PointCursor last = ring_.At(ring_.num_points() - 1);
  last_value_ = last.hash64();
  last_node_ = last.node();
  ReadGroup(first_group_);
  const uint64_t v0 = first_group_.value;
  if (v0 > 0) {
    if (rule_ == LookupRule::kNearest && WrapSplit() >= space_) {
      // The wrapping gap's first half reaches past 2^n - 1 to 0.
      const Wide split = WrapSplit() - space_;
      Push(0, split, last_node_);
      Push(split + 1, Wide{v0} - 1, first_group_.first_node);
    } else {
      Push(0, Wide{v0} - 1, first_group_.first_node);
    }
  }
  Push(v0, v0, Hit(first_group_));
  previous_ = first_group_;
}

void HashRunReader::Refill() noexcept {
  queued_ = next_ = 0;
  if (!started_) {
    Start();
    return;
  }
  Group group;
  if (ReadGroup(group)) {
    const Wide from = Wide{previous_.value} + 1;
    if (rule_ == LookupRule::kNearest) {
      const Wide half = (Wide{group.value} - previous_.value) / 2;
      Push(from, Wide{previous_.value} + half, previous_.last_node);
      Push(Wide{previous_.value} + half + 1, Wide{group.value} - 1, group.first_node);
    } else {
      Push(from, Wide{group.value} - 1, group.first_node);
    }
    Push(group.value, group.value, Hit(group));
    previous_ = group;
    return;
  }
  finished_ = true;
  const Wide from = Wide{last_value_} + 1;
  switch (rule_) {
    case LookupRule::kSuccessorClamped:
      Push(from, top_, last_node_);
      break;
    case LookupRule::kNearest: {
      const Wide split = WrapSplit();
      if (split >= space_) {
        Push(from, top_, last_node_);
      } else {
        Push(from, split, last_node_);
        Push(split + 1, top_, first_group_.first_node);
      }
      break;
    }
    default:
      Push(from, top_, first_group_.first_node);
      break;
  }
}

bool HashRunReader::Next(HashRun& run) noexcept {
  while (next_ == queued_) {
    if (finished_) return false;
    Refill();
  }
  run = queue_[next_++];
  return true;
}

Wide TableEntryHashes(uint64_t table_size, uint64_t entry) noexcept {
  const Wide space = Wide{1} << 64;
  return space / table_size + (entry < space % table_size ? 1 : 0);
}

std::vector<Wide> ExactNodeShares(const Ring& ring) {
  std::vector<Wide> shares(ring.num_nodes(), 0);
  if (ring.lookup_rule() == LookupRule::kTable) {
    for (uint64_t entry = 0; entry < ring.num_points(); ++entry) {
      shares[ring.At(entry).node()] += TableEntryHashes(ring.num_points(), entry);
    }
    return shares;
  }
  HashRunReader reader(ring);
  for (HashRun run; reader.Next(run);) {
    if (run.node < shares.size()) shares[run.node] += run.length();
  }
  return shares;
}

std::vector<uint64_t> ScaleShares(const std::vector<Wide>& shares, uint32_t space_bits) {
  std::vector<uint64_t> scaled(shares.size(), 0);
  const uint32_t shift = space_bits - 32;
  Wide running = 0;
  for (size_t i = 0; i < shares.size(); ++i) {
    const Wide before = running >> shift;
    running += shares[i];
    scaled[i] = static_cast<uint64_t>((running >> shift) - before);
  }
  return scaled;
}

uint32_t SpaceBits(const Ring& ring) noexcept { return ring.key_hash_bits() == 64 ? 64 : 32; }

bool UsesHashRuns(const Ring& ring) noexcept {
  return !ring.is_raw() && IsProgramFlavor(ring.flavor());
}

}  // namespace chash::internal
