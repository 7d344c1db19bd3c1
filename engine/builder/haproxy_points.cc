// HAProxy `hash-type consistent` (lb_chash.c): 16 points a weight unit,
// each full_hash(id x 4096 + j) of the server's id; keys by the backend's
// hash function, with or without avalanche.
#include <string>
#include <unordered_set>

#include "builder/columns_builder.h"
#include "builder/program_points.h"

namespace chash::internal {

void AssignHaproxyServerIds(std::vector<NodeInfo>& nodes) {
  std::unordered_set<uint32_t> used;
  for (const NodeInfo& node : nodes) {
    if (node.server_id != 0) used.insert(node.server_id);
  }
  uint64_t next = 1;
  for (NodeInfo& node : nodes) {
    if (node.server_id == 0) {
      while (used.count(static_cast<uint32_t>(next)) != 0) ++next;
      node.server_id = static_cast<uint32_t>(next);
      used.insert(node.server_id);
    }
    ++next;  // after every server, its id given or assigned
  }
}

namespace program {

Status ValidateHaproxyOptions(const HaproxyOptions& options) {
  if (static_cast<uint8_t>(options.hash_function) > 3) {
    return Bad(StatusCode::kBadArgument,
               "haproxy hash function " +
                   std::to_string(static_cast<int>(options.hash_function)) +
                   " is none of sdbm, djb2, wt6, crc32");
  }
  if (static_cast<uint8_t>(options.server_key) > 1) {
    return Bad(StatusCode::kBadArgument, "haproxy server key is neither id nor id-unfixed-3.0");
  }
  return Status();
}

Result<NodeAddress> ParseHaproxyNode(std::string_view address, uint32_t weight,
                                     const NodeOptions& node) {
  if (weight > kHaproxyMaxWeight) {
    return Bad(StatusCode::kBadWeight,
               "weight " + std::to_string(weight) + ": HAProxy's weights are 0..256");
  }
  if (node.server_id > kHaproxyMaxServerId) {
    return Bad(StatusCode::kBadArgument, "server id " + std::to_string(node.server_id) +
                                             ": HAProxy's ids are 1..2147483647");
  }
  return OpaqueNode(address, true, true);
}

KeyHasher HaproxyKeyHasher(const HaproxyOptions& options, uint32_t weighted_nodes) noexcept {
  constexpr KeyHashKind kKinds[] = {KeyHashKind::kHaproxySdbm, KeyHashKind::kHaproxyDjb2,
                                    KeyHashKind::kHaproxyWt6, KeyHashKind::kCrc32};
  KeyHasher hasher;
  hasher.kind = kKinds[static_cast<uint8_t>(options.hash_function) & 3];
  hasher.avalanche = options.avalanche;
  hasher.constant_zero = weighted_nodes == 1;  // HAProxy's one usable server: h = 0
  return hasher;
}

void CountHaproxyPoints(const std::vector<NodeInfo>& nodes, PointCounts& counts) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    counts.per_node[i] = uint64_t{nodes[i].weight} * kHaproxyPointsPerWeight;
  }
}

void GenerateHaproxyPoints(const HaproxyOptions& options, const std::vector<NodeInfo>& nodes,
                           const PointCounts& counts, unsigned threads, uint64_t* keys) {
  const bool unfixed = options.server_key == HaproxyServerKey::kIdUnfixed30;
  GenerateEveryNode(counts, threads, [&](uint32_t node, uint64_t first) {
    uint64_t* out = keys + first;
    const uint32_t id = nodes[node].server_id;
    // HAProxy computes in unsigned int: id x 4096 wraps past 2^20 ids.
    const uint32_t base = unfixed ? HaproxyFullHash(id) : id * 4096u;
    for (uint64_t j = 0; j < counts.per_node[node]; ++j) {
      out[j] = PointSortKey(HaproxyFullHash(base + static_cast<uint32_t>(j)), node, node);
    }
  });
}

}  // namespace program
}  // namespace chash::internal
