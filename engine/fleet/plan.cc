// PlanPointMultiples (include/chash/plan.h).
#include "chash/plan.h"

#include <algorithm>
#include <new>
#include <string>

#include "chash/diff.h"
#include "identity/throwing_cores.h"
#include "util/out_of_memory.h"

namespace chash {
namespace {

// What R rings multiply: the columns, the search index above them and the
// collision table (the O(nodes) node table aside).
uint64_t PointBytes(const Ring& ring) {
  const MemoryUsage memory = ring.memory_usage();
  return memory.column_bytes + memory.index_bytes + memory.collision_table_bytes;
}

}  // namespace

std::span<const uint32_t> DefaultPlanMultiples() noexcept {
  static constexpr uint32_t kMultiples[] = {1, 2, 4, 8, 16, 32, 64, 100, 128, 160, 256, 512, 1024};
  return kMultiples;
}

namespace {

Result<Plan> PlanOrThrow(const std::vector<ServerEntry>& servers, const RingOptions& current,
                         const PlanOptions& options, std::string_view source_name) {
  if (!(options.cv_target > 0 && options.cv_target <= 1)) {
    return Status(StatusCode::kBadArgument, "the CV target must be in (0, 1]");
  }
  if (options.rings == 0) return Status(StatusCode::kBadArgument, "rings must be at least 1");
  const std::span<const uint32_t> chosen = options.multiples.empty()
                                                ? DefaultPlanMultiples()
                                                : std::span<const uint32_t>(options.multiples);
  std::vector<uint32_t> multiples(chosen.begin(), chosen.end());
  std::sort(multiples.begin(), multiples.end());
  multiples.erase(std::unique(multiples.begin(), multiples.end()), multiples.end());
  if (!multiples.empty() && multiples.front() == 0) {
    return Status(StatusCode::kBadArgument, "point multiples must be at least 1");
  }

  const size_t steps = multiples.size() + 1;
  if (options.on_progress) options.on_progress(0, steps, 0);
  Result<Ring> current_ring = BuildRingFromServers(servers, current, source_name);
  if (!current_ring.ok()) return current_ring.status();
  Plan plan;
  plan.current = internal::ComputeRingStatsOrThrow(current_ring.value());
  plan.current_bytes = PointBytes(current_ring.value());
  plan.rings = options.rings;
  plan.cv_target = options.cv_target;
  plan.mask_bytes = (uint64_t{current_ring.value().num_nodes()} + 63) / 64 * 8;

  uint64_t total_weight = 0;
  for (const ServerEntry& server : servers) total_weight += server.weight;
  for (size_t i = 0; i < multiples.size(); ++i) {
    const uint32_t multiple = multiples[i];
    if (options.on_progress) options.on_progress(i + 1, steps, multiple);
    PlanRow row;
    row.multiple = multiple;
    row.points_generated = total_weight * multiple;
    if (row.points_generated > options.max_points) {
      row.skipped = true;
      plan.rows.push_back(row);
      continue;
    }
    Result<Ring> candidate = BuildRingFromServers(
        servers, {.flavor = Flavor::kPingoraV2, .point_multiple = multiple}, source_name);
    if (!candidate.ok()) return candidate.status();
    row.stats = internal::ComputeRingStatsOrThrow(candidate.value());
    row.bytes_per_ring = PointBytes(candidate.value());
    Result<RingDiff> diff = DiffRings(current_ring.value(), candidate.value());
    if (!diff.ok()) return diff.status();
    row.moved_fraction = diff.value().moved_fraction();
    row.moved_exact = diff.value().exact;
    if (!plan.recommended && row.stats.cv_measured <= options.cv_target) {
      plan.recommended = multiple;
    }
    plan.rows.push_back(row);
  }
  return plan;
}

}  // namespace

Result<Plan> PlanPointMultiples(const std::vector<ServerEntry>& servers, const RingOptions& current,
                                const PlanOptions& options, std::string_view source_name) {
  return internal::CatchOutOfMemory("planning point multiples", [&] {
    return PlanOrThrow(servers, current, options, source_name);
  });
}

}  // namespace chash
