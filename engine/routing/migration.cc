// RingMigration and the migration key hash (include/chash/migration.h).
#include "chash/migration.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <new>
#include <string>

#include "identity/throwing_cores.h"
#include "util/out_of_memory.h"

namespace chash {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15u;

uint64_t Mix(uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9u;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBu;
  x ^= x >> 31;
  return x;
}

uint64_t LoadLittleEndian(const unsigned char* bytes, size_t len) noexcept {
  uint64_t word = 0;
  for (size_t i = 0; i < len; ++i) word |= uint64_t{bytes[i]} << (8 * i);
  return word;
}

// Each thread increments its own stripe: round-robin on first use. The
// thread_local is constant-initialized (0 = not assigned yet), so reading it
// needs no initialization guard on the lookup path.
uint32_t ThreadStripe(uint32_t stripes) noexcept {
  static std::atomic<uint32_t> next{0};
  thread_local uint32_t stripe_plus_one = 0;
  if (stripe_plus_one == 0) {
    stripe_plus_one = next.fetch_add(1, std::memory_order_relaxed) % stripes + 1;
  }
  return stripe_plus_one - 1;
}

// "" if the snapshots agree, else the first few differences.
std::string SnapshotDifferences(const Ring& old_ring, const Ring& new_ring) {
  auto backends = [](const Ring& ring) {
    std::map<std::string, uint64_t> weights;
    for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
      const NodeInfo& node = ring.node(id);
      if (node.weight > 0) weights[internal::BackendIdentityOrThrow(node, id)] += node.weight;
    }
    return weights;
  };
  const std::map<std::string, uint64_t> before = backends(old_ring), after = backends(new_ring);
  std::string out;
  int listed = 0, total = 0;
  auto note = [&](const std::string& text) {
    if (++total <= 5) out += (listed++ ? "; " : "") + text;
  };
  for (const auto& [backend, weight] : before) {
    const auto it = after.find(backend);
    if (it == after.end()) {
      note(backend + " only in the old ring");
    } else if (it->second != weight) {
      note(backend + " has weight " + std::to_string(weight) + " in the old ring, " +
           std::to_string(it->second) + " in the new");
    }
  }
  for (const auto& [backend, weight] : after) {
    if (!before.count(backend)) note(backend + " only in the new ring");
  }
  if (total > 5) out += "; and " + std::to_string(total - 5) + " more";
  return out;
}

}  // namespace

uint64_t MigrationKeyHash(std::string_view key, uint64_t seed) noexcept {
  const auto* bytes = reinterpret_cast<const unsigned char*>(key.data());
  size_t len = key.size();
  uint64_t h = Mix(seed ^ (static_cast<uint64_t>(len) * kGolden));
  for (; len >= 8; bytes += 8, len -= 8) h = Mix(h ^ LoadLittleEndian(bytes, 8));
  if (len > 0) h = Mix(h ^ LoadLittleEndian(bytes, len));
  return Mix(h ^ kGolden);
}

Result<std::unique_ptr<RingMigration>> RingMigration::Create(std::shared_ptr<const Ring> old_ring,
                                                             std::shared_ptr<const Ring> new_ring,
                                                             MigrationOptions options) {
  return internal::CatchOutOfMemory("creating a ring migration", [&] {
    return CreateOrThrow(std::move(old_ring), std::move(new_ring), options);
  });
}

Result<std::unique_ptr<RingMigration>> RingMigration::CreateOrThrow(
    std::shared_ptr<const Ring> old_ring, std::shared_ptr<const Ring> new_ring,
    MigrationOptions options) {
  if (!old_ring || !new_ring) {
    return Status(StatusCode::kBadArgument, "a migration needs both an old and a new ring");
  }
  const bool match = internal::BackendIdentityBytesOrThrow(*old_ring) ==
                     internal::BackendIdentityBytesOrThrow(*new_ring);
  if (!match && !options.allow_backend_mismatch) {
    return Status(StatusCode::kBadArgument,
                  "the old and new rings come from different backend snapshots (" +
                      SnapshotDifferences(*old_ring, *new_ring) +
                      "): rolling back would not restore the old assignment; build both "
                      "from one snapshot, or allow the mismatch explicitly");
  }
  return std::unique_ptr<RingMigration>(
      new RingMigration(std::move(old_ring), std::move(new_ring), options.seed, match));
}

RingMigration::RingMigration(std::shared_ptr<const Ring> old_ring,
                             std::shared_ptr<const Ring> new_ring, uint64_t seed,
                             bool backends_match)
    : old_ring_(std::move(old_ring)),
      new_ring_(std::move(new_ring)),
      old_fingerprint_(Sha256(internal::RingIdentityBytesOrThrow(*old_ring_))),
      new_fingerprint_(Sha256(internal::RingIdentityBytesOrThrow(*new_ring_))),
      seed_(seed),
      backends_match_(backends_match) {}

Status RingMigration::SetRollout(double fraction) noexcept {
  if (!(fraction >= 0 && fraction <= 1)) {  // NaN included
    try {
      return Status(StatusCode::kBadArgument, "rollout must be a fraction 0..1");
    } catch (const std::bad_alloc&) {
      return Status(StatusCode::kBadArgument, "bad rollout");  // inline: no allocation
    }
  }
  SetRolloutPpm(static_cast<uint32_t>(std::floor(fraction * kRolloutScale)));
  return Status();
}

void RingMigration::SetRolloutPpm(uint32_t ppm) noexcept {
  ppm = std::min(ppm, kRolloutScale);
  uint64_t current = controls_.load(std::memory_order_relaxed);
  while (!controls_.compare_exchange_weak(current, (current & kScopeBit) | ppm,
                                          std::memory_order_relaxed)) {
  }
}

void RingMigration::SetInScope(bool in_scope) noexcept {
  if (in_scope) {
    controls_.fetch_or(kScopeBit, std::memory_order_relaxed);
  } else {
    controls_.fetch_and(~kScopeBit, std::memory_order_relaxed);
  }
}

uint32_t RingMigration::rollout_ppm() const noexcept {
  return static_cast<uint32_t>(controls_.load(std::memory_order_relaxed));
}

bool RingMigration::in_scope() const noexcept {
  return (controls_.load(std::memory_order_relaxed) & kScopeBit) != 0;
}

RingSide RingMigration::Choose(std::string_view key) const noexcept {
  const uint64_t controls = controls_.load(std::memory_order_relaxed);
  const uint32_t ppm = static_cast<uint32_t>(controls);
  // Before and after a rollout no key hash is needed: every bucket is >= 0
  // and < kRolloutScale, so these shortcuts give the same answers.
  if ((controls & kScopeBit) == 0 || ppm == 0) return RingSide::kOld;
  if (ppm >= kRolloutScale) return RingSide::kNew;
  return MigrationBucket(MigrationKeyHash(key, seed_)) < ppm ? RingSide::kNew : RingSide::kOld;
}

void RingMigration::Count(RingSide side, uint64_t lookups) const noexcept {
  if (lookups == 0) return;
  stripes_[ThreadStripe(kStripes)].lookups[static_cast<int>(side)].fetch_add(
      lookups, std::memory_order_relaxed);
}

MigrationAnswer RingMigration::Find(std::string_view key) const noexcept {
  const RingSide side = Choose(key);
  Count(side, 1);
  return {ring(side).FindNode(key), side};
}

size_t RingMigration::FindNodes(std::span<const std::string_view> keys,
                                std::span<uint32_t> nodes,
                                std::span<RingSide> sides) const noexcept {
  keys = keys.first(std::min({keys.size(), nodes.size(), sides.size()}));
  constexpr size_t kChunk = 64;
  std::string_view grouped[2][kChunk];
  uint32_t position[2][kChunk];
  uint32_t answers[kChunk];
  for (size_t begin = 0; begin < keys.size(); begin += kChunk) {
    const size_t end = std::min(keys.size(), begin + kChunk);
    size_t count[2] = {0, 0};
    for (size_t i = begin; i < end; ++i) {
      const RingSide side = Choose(keys[i]);
      const int s = static_cast<int>(side);
      sides[i] = side;
      grouped[s][count[s]] = keys[i];
      position[s][count[s]++] = static_cast<uint32_t>(i);
    }
    for (int s = 0; s < 2; ++s) {
      if (count[s] == 0) continue;
      ring(static_cast<RingSide>(s)).FindNodes({grouped[s], count[s]}, {answers, count[s]});
      for (size_t j = 0; j < count[s]; ++j) nodes[position[s][j]] = answers[j];
      Count(static_cast<RingSide>(s), count[s]);
    }
  }
  return keys.size();
}

RingMigration::Counters RingMigration::counters() const noexcept {
  Counters total;
  for (const Stripe& stripe : stripes_) {
    total.old_ring += stripe.lookups[0].load(std::memory_order_relaxed);
    total.new_ring += stripe.lookups[1].load(std::memory_order_relaxed);
  }
  return total;
}

}  // namespace chash
