// Dual-ring migration, as Cloudflare moved Pingora to its v2 rings: both
// rings in memory, each key routed through one of them by a stable hash of
// the key, two independent rollout controls, rollback without a rebuild.
//
//   auto migration = chash::RingMigration::Create(old_ring, new_ring);  // Result
//   migration.value()->SetInScope(true);        // this instance / location takes part
//   migration.value()->SetRollout(0.01);        // 1% of keys on the new ring
//   chash::MigrationAnswer a = migration.value()->Find("/some/url");
//   const chash::Ring& ring = migration.value()->ring(a.side);  // a.node is an id in it
//
// Controls. rollout (0..1, in parts per million) is the share of keys on
// the new ring; scope (in or out) switches this instance as a whole, so
// fraction and location move independently. A key is on the new ring iff
// scope is in and MigrationBucket(MigrationKeyHash(key)) < rollout in ppm.
// Each key's bucket is fixed, so the rollout is monotone: raising it only
// moves keys from old to new, and lowering it (rollback) returns exactly the
// keys that had moved, with no rebuild. Both controls start closed (out of
// scope, 0%): creating a migration changes no routing.
//
// Same snapshot. Both rings must be built from one backend snapshot (the
// same servers and weights; flavor and multiple may differ): otherwise
// rolling back does not restore the old assignment (a "rollback
// mismatch"). Create compares BackendFingerprint (identity.h) and refuses
// a mismatch with kBadArgument naming the differences, unless
// allow_backend_mismatch is set.
//
// Threads. Lookups and the controls are thread-safe and lock-free: the two
// controls share one atomic word (a lookup sees a consistent pair), and the
// per-ring lookup counters are striped across cache lines (relaxed atomics)
// so that threads do not contend on one line.
#ifndef CHASH_MIGRATION_H_
#define CHASH_MIGRATION_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "chash/identity.h"
#include "chash/ring.h"
#include "chash/status.h"

// Public API: exported from libchash.so (built with hidden visibility).
#pragma GCC visibility push(default)
namespace chash {

// The rollout's unit: parts per million of the keys.
inline constexpr uint32_t kRolloutScale = 1000000;

// The per-key hash that picks the ring: seeded, 64 bits, independent of the
// CRC32 the rings hash keys with (CRC32 is linear over GF(2); this is a
// multiply-xorshift mix). Portable definition, so that other processes and
// languages pick the same ring for a key:
//   mix(x)  = x ^= x >> 30; x *= 0xBF58476D1CE4E5B9; x ^= x >> 27;
//             x *= 0x94D049BB133111EB; x ^= x >> 31   (SplitMix64's finalizer)
//   h       = mix(seed ^ (len * 0x9E3779B97F4A7C15))  (64-bit wrapping)
//   for each whole 8-byte word w of the key (little-endian): h = mix(h ^ w)
//   if 1..7 bytes remain: h = mix(h ^ w), w = those bytes little-endian,
//                         zero-padded
//   result  = mix(h ^ 0x9E3779B97F4A7C15)
uint64_t MigrationKeyHash(std::string_view key, uint64_t seed = 0) noexcept;

// The key's bucket, 0 .. kRolloutScale-1: floor((hash >> 32) * 10^6 / 2^32).
inline uint32_t MigrationBucket(uint64_t key_hash) noexcept {
  return static_cast<uint32_t>(((key_hash >> 32) * kRolloutScale) >> 32);
}

enum class RingSide : uint8_t { kOld = 0, kNew = 1 };

struct MigrationAnswer {
  uint32_t node = Ring::kNoNode;  // a node id of the chosen ring
  RingSide side = RingSide::kOld;
};

struct MigrationOptions {
  uint64_t seed = 0;                    // MigrationKeyHash's seed
  bool allow_backend_mismatch = false;  // accept rings from different snapshots
};

class RingMigration {
 public:
  // kBadArgument: a null ring, or (unless allowed) rings whose backend
  // snapshots differ; the message lists the first differences.
  // kOutOfMemory. Allocates the migration and O(nodes) while comparing.
  static Result<std::unique_ptr<RingMigration>> Create(std::shared_ptr<const Ring> old_ring,
                                                       std::shared_ptr<const Ring> new_ring,
                                                       MigrationOptions options = {});
  RingMigration(const RingMigration&) = delete;
  RingMigration& operator=(const RingMigration&) = delete;

  // ---- Controls (any thread, lock-free) ---------------------------------------
  // kBadArgument unless 0 <= fraction <= 1 (NaN too); rounded down to whole
  // ppm. Allocates nothing on success; the error's message may allocate, and
  // falls back to an inline one if it cannot.
  Status SetRollout(double fraction) noexcept;
  void SetRolloutPpm(uint32_t ppm) noexcept;  // clamped to kRolloutScale
  void SetInScope(bool in_scope) noexcept;
  uint32_t rollout_ppm() const noexcept;
  bool in_scope() const noexcept;

  // ---- Lookups: thread-safe, noexcept, no allocation --------------------------
  // The ring a key takes under the current controls; does not count.
  RingSide Choose(std::string_view key) const noexcept;
  // The key's node on its ring, counted in counters(). Cost over
  // Ring::FindNode: one relaxed load, one relaxed increment on a per-thread
  // stripe, and while a rollout is strictly between 0% and 100% the key hash
  // (about as costly as the key's CRC32; bench_ops measures it).
  MigrationAnswer Find(std::string_view key) const noexcept;
  // Batch: nodes[i], sides[i] for keys[i], each ring's keys looked up with
  // its batch kernel in chunks of 64, for i < n = the smallest of the three
  // sizes; returns n (shorter outputs are a caller's bug: the keys past them
  // are not looked up, nothing is written past an output).
  size_t FindNodes(std::span<const std::string_view> keys, std::span<uint32_t> nodes,
                   std::span<RingSide> sides) const noexcept;

  // ---- Observability ---------------------------------------------------------------
  struct Counters {
    uint64_t old_ring = 0;  // lookups answered by the old ring
    uint64_t new_ring = 0;  // ... by the new ring
  };
  // Sum over the stripes; concurrent lookups may or may not be included.
  Counters counters() const noexcept;
  const Ring& ring(RingSide side) const noexcept {
    return side == RingSide::kNew ? *new_ring_ : *old_ring_;
  }
  const Ring& old_ring() const noexcept { return *old_ring_; }
  const Ring& new_ring() const noexcept { return *new_ring_; }
  // RingFingerprint of each ring: the "ring version" to log with counters.
  const Fingerprint& fingerprint(RingSide side) const noexcept {
    return side == RingSide::kNew ? new_fingerprint_ : old_fingerprint_;
  }
  // False only when created with allow_backend_mismatch over differing
  // snapshots.
  bool backends_match() const noexcept { return backends_match_; }

 private:
  static Result<std::unique_ptr<RingMigration>> CreateOrThrow(std::shared_ptr<const Ring> old_ring,
                                                              std::shared_ptr<const Ring> new_ring,
                                                              MigrationOptions options);
  RingMigration(std::shared_ptr<const Ring> old_ring, std::shared_ptr<const Ring> new_ring,
                uint64_t seed, bool backends_match);
  void Count(RingSide side, uint64_t lookups) const noexcept;

  struct alignas(64) Stripe {
    std::atomic<uint64_t> lookups[2] = {0, 0};
  };
  static constexpr uint32_t kStripes = 16;
  // bit 32: in scope; bits 0..31: rollout in ppm.
  static constexpr uint64_t kScopeBit = uint64_t{1} << 32;

  std::shared_ptr<const Ring> old_ring_;
  std::shared_ptr<const Ring> new_ring_;
  Fingerprint old_fingerprint_;
  Fingerprint new_fingerprint_;
  uint64_t seed_;
  bool backends_match_;
  std::atomic<uint64_t> controls_{0};
  mutable std::array<Stripe, kStripes> stripes_;
};

}  // namespace chash
#pragma GCC visibility pop

#endif  // CHASH_MIGRATION_H_
