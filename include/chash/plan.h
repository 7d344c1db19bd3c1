// Point-count planning: the analysis of how many points per weight
// unit buy how much balance, at what memory and collision cost, and how
// many keys a change moves, run on the user's own fleet.
//
//   chash::Result<chash::Plan> plan = chash::PlanPointMultiples(
//       servers, {.flavor = chash::Flavor::kNginx}, {.cv_target = 0.02, .rings = 12});
//
// Each candidate is a pingora-v2 ring (the flavor whose multiple is free)
// of the same servers, built for real: CV measured is exact (the shares of
// the 2^32 key hashes), collisions are the real ones, and the keys that move
// from the current ring come from DiffRings. The current ring may be of any
// flavor (another program's: its stats carry program_bytes, what that
// program spends on it); against a ring whose key hash is not CRC-32 the
// moved fraction is DiffRings' estimate (moved_exact false).
#ifndef CHASH_PLAN_H_
#define CHASH_PLAN_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "chash/ring.h"
#include "chash/servers_file.h"
#include "chash/stats.h"

// Public API: exported from libchash.so (built with hidden visibility).
#pragma GCC visibility push(default)
namespace chash {

struct PlanOptions {
  // Point multiples to try, ascending; empty = DefaultPlanMultiples().
  std::vector<uint32_t> multiples = {};
  double cv_target = 0.02;  // the CV (of load share / weight share) to meet
  uint32_t rings = 1;       // how many rings of this fleet a process keeps
  // Candidates generating more points are skipped (their build would take
  // about 14 bytes a point at peak).
  uint64_t max_points = uint64_t{1} << 25;
  // Optional: called before each ring is built, `step` of `steps` (the
  // current ring is step 0 with multiple 0; skipped candidates count as
  // steps). For progress reports; called on the planning thread.
  std::function<void(size_t step, size_t steps, uint32_t multiple)> on_progress = {};
};

// 1, 2, 4, 8, 16, 32, 64, 100, 128, 160, 256, 512, 1024: a view of a
// constant table, so it allocates nothing and cannot fail (copy it into a
// vector, which allocates, to edit it).
std::span<const uint32_t> DefaultPlanMultiples() noexcept;

struct PlanRow {
  uint32_t multiple = 0;
  uint64_t points_generated = 0;
  bool skipped = false;  // over max_points: not built, no figures below
  RingStats stats;       // CV predicted/measured, collisions, bytes
  // The points' memory: columns + search index + collision table (what R
  // rings multiply).
  uint64_t bytes_per_ring = 0;
  double moved_fraction = 0;  // of the key space, from the current ring
  // False when the current ring hashes keys otherwise than the candidates
  // (CRC-32): moved_fraction is then DiffRings' independence estimate.
  bool moved_exact = true;
};

struct Plan {
  RingStats current;           // the ring the servers use now
  uint64_t current_bytes = 0;  // its columns + search index + collision table
  uint32_t rings = 1;
  // One availability mask (failover.h), for "1 ring + R masks" instead of R
  // subset rings: ceil(nodes / 64) x 8 bytes.
  uint64_t mask_bytes = 0;
  double cv_target = 0;
  std::vector<PlanRow> rows;
  // The smallest multiple whose measured CV is within the target.
  std::optional<uint32_t> recommended;
};

// Builds the current ring and one candidate at a time (so peak memory is two
// rings). Errors: those of building the rings (prefixed "SOURCE:LINE: "),
// kBadArgument for a target not in (0, 1], rings 0, or a multiple 0;
// kOutOfMemory.
Result<Plan> PlanPointMultiples(const std::vector<ServerEntry>& servers, const RingOptions& current,
                                const PlanOptions& options,
                                std::string_view source_name = "servers");

}  // namespace chash
#pragma GCC visibility pop

#endif  // CHASH_PLAN_H_
