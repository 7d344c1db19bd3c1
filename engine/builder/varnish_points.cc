// Varnish's shard director (vmod_directors): `replicas` points a weight
// unit, each Sha256Last4Le of the backend's name followed by k in decimal;
// keys by the same hash.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "builder/columns_builder.h"
#include "builder/flavor_points.h"
#include "builder/program_points.h"
#include "ring/ring_state.h"

namespace chash::internal::program {

Status ValidateVarnishOptions(const VarnishOptions& options) {
  if (options.replicas == 0) {
    return Bad(StatusCode::kBadArgument, "varnish replicas must be at least 1");
  }
  return Status();
}

void CountVarnishPoints(const VarnishOptions& options, const std::vector<NodeInfo>& nodes,
                        PointCounts& counts) {
  // vmod_directors_shard_cfg.c: at most (UINT32_MAX - 1) / backends a backend.
  const uint32_t live = WeightedNodes(nodes);
  const uint64_t cap = live == 0 ? 0 : (uint64_t{UINT32_MAX} - 1) / live;
  for (size_t i = 0; i < nodes.size(); ++i) {
    counts.per_node[i] = std::min(uint64_t{nodes[i].weight} * options.replicas, cap);
  }
}

void GenerateVarnishPoints(const std::vector<NodeInfo>& nodes, const PointCounts& counts,
                           unsigned threads, uint64_t* keys) {
  std::vector<std::string> prefixes = PointPrefixes(nodes, "");
  GenerateEveryNode(counts, threads, [&](uint32_t node, uint64_t first) {
    uint64_t* out = keys + first;
    PointString text(prefixes[node]);
    for (uint64_t j = 0; j < counts.per_node[node]; ++j) {
      const std::string_view s = text.With(j);
      out[j] = PointSortKey(Sha256Last4Le(s.data(), s.size()), node, node);
    }
  });
}

}  // namespace chash::internal::program

namespace chash::internal {

Result<uint32_t> VarnishPointCount(uint32_t replicas, double weight) {
  if (!std::isfinite(weight) || weight < 0) {
    char shown[32];
    std::snprintf(shown, sizeof shown, "%g", weight);
    return Status(StatusCode::kBadArgument,
                  "weight " + std::string(shown) + " is not a finite number >= 0");
  }
  const double points = std::floor(static_cast<double>(replicas) * std::max(weight, 1.0));
  if (!(points <= 4294967295.0)) {
    return Status(StatusCode::kTooManyPoints, "replicas x weight is above 2^32 - 1");
  }
  return static_cast<uint32_t>(points);
}

}  // namespace chash::internal

namespace chash::internal::program {

bool VarnishBisects(const RingState& state) noexcept {
  const Columns& columns = state.columns;
  bool equal = false;
  for (uint32_t i = 1; i < columns.size && !equal; ++i) {
    equal = columns.hash[i] == columns.hash[i - 1];
  }
  return columns.size == 2 || equal;
}

}  // namespace chash::internal::program
