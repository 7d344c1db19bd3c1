// RingBuilder and BuildRingFromPoints: validation, point generation, and the
// hand-off to the shared column builder.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <new>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "builder/build_nodes.h"
#include "builder/columns_builder.h"
#include "builder/flavor_points.h"
#include "builder/parallel.h"
#include "builder/point_chains.h"
#include "chash/ring.h"
#include "flavors.h"
#include "hash/crc32_internal.h"
#include "util/out_of_memory.h"
#include "ring/ring_state.h"

namespace chash {
namespace {

using internal::RingState;

std::string NodeLabel(size_t id, std::string_view text) {
  std::string label = "node " + std::to_string(id);
  if (!text.empty()) {
    label += " '";
    label += text;
    label += "'";
  }
  return label;
}

Status ValidateMaxPoints(uint64_t max_points) {
  if (max_points == 0 || max_points > kHardMaxPoints) {
    return Status(StatusCode::kBadArgument, "max_points must be 1.." +
                                                std::to_string(kHardMaxPoints) + ", got " +
                                                std::to_string(max_points));
  }
  return Status();
}

Status ValidateRingOptionsOrThrow(const RingOptions& options) {
  if (internal::FindFlavor(options.flavor) == nullptr) {
    return Status(StatusCode::kBadArgument,
                  "unknown flavor " + std::to_string(static_cast<int>(options.flavor)) + " (" +
                      internal::FlavorByteList() + ")");
  }
  if (options.point_multiple == 0) {
    return Status(StatusCode::kBadMultiple, "point multiple must be at least 1");
  }
  if (Status status = internal::ValidateProgramOptionsOrThrow(options); !status.ok()) {
    return status;
  }
  if (!FlavorTakesPointMultiple(options.flavor) &&
      options.point_multiple != kDefaultPointMultiple) {
    // The other programs' flavors were refused above, by their options.
    std::vector<std::string_view> takers;
    for (const internal::FlavorRow& row : internal::kFlavors) {
      if (row.takes_multiple) takers.push_back(row.name);
    }
    std::string only;
    for (size_t i = 0; i < takers.size(); ++i) {
      if (i > 0) only += i + 1 == takers.size() ? " and " : ", ";
      only += takers[i];
    }
    return Status(StatusCode::kBadMultiple,
                  std::string(FlavorName(options.flavor)) +
                      " uses 160 points per weight unit; only " + only +
                      " take a point multiple (got " +
                      std::to_string(options.point_multiple) + ")");
  }
  return ValidateMaxPoints(options.max_points);
}

// Counts the distinct nodes in the node column (slots 0..n-1) and records them
// in state.owns_points (one bit per node id); state.has_points adds the nodes
// of the collision losers. `generating` is the number of nodes that generated
// a point: once that many are seen the scan stops (every loser's node is one
// of them), so a ring reads a few thousand slots, not 6 bytes a point. Throws
// std::bad_alloc.
void CountNodesWithPoints(RingState& state, size_t num_nodes, uint32_t generating) {
  const internal::Columns& columns = state.columns;
  std::vector<uint64_t>& seen = state.owns_points;
  seen.assign((num_nodes + 63) / 64, 0);
  uint32_t count = 0;
  for (uint32_t slot = 0; slot < columns.size && count < generating; ++slot) {
    const uint16_t node = columns.node[slot];
    uint64_t& word = seen[node / 64];
    const uint64_t bit = uint64_t{1} << (node % 64);
    if ((word & bit) == 0) {
      word |= bit;
      ++count;
    }
  }
  state.nodes_with_points = count;
  state.has_points = seen;
  for (const uint16_t node : state.losers.nodes()) {
    state.has_points[node / 64] |= uint64_t{1} << (node % 64);
  }
}

// Nodes of weight > 0: those that generate points (a raw node's weight is its
// point count; a flavor ring's multiple is at least 1).
template <typename Nodes>
uint32_t NodesWithWeight(const Nodes& nodes) {
  return static_cast<uint32_t>(
      std::count_if(nodes.begin(), nodes.end(), [](const auto& n) { return n.weight > 0; }));
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Status PointsOutOfMemory(uint64_t points) noexcept {
  char what[64];
  std::snprintf(what, sizeof what, "cannot hold %llu ring points",
                static_cast<unsigned long long>(points));
  return internal::OutOfMemory(what);
}

}  // namespace

TieBreak FlavorTieBreak(Flavor flavor) noexcept {
  const internal::FlavorRow* row = internal::FindFlavor(flavor);
  return row == nullptr ? TieBreak::kConfigOrder : row->tie_break;
}

bool FlavorTakesPointMultiple(Flavor flavor) noexcept {
  const internal::FlavorRow* row = internal::FindFlavor(flavor);
  return row != nullptr && row->takes_multiple;
}

LookupRule FlavorLookupRule(Flavor flavor) noexcept {
  const internal::FlavorRow* row = internal::FindFlavor(flavor);
  return row == nullptr ? LookupRule::kSuccessor : row->rule;
}

bool FlavorMasksExactly(const RingOptions& options) noexcept {
  switch (options.flavor) {
    case Flavor::kKetamaMd5:
      return internal::IsUnweightedKetama(options.ketama.variant);
    case Flavor::kEnvoyRing:
    case Flavor::kEnvoyMaglev:
      return false;
    case Flavor::kHaproxy:
    case Flavor::kVarnishShard:
    CHASH_CRC32_FLAVOR_CASES:
      break;
  }
  return true;
}

Status ValidateRingOptions(const RingOptions& options) noexcept {
  return internal::CatchOutOfMemory("reporting bad ring options",
                                    [&] { return ValidateRingOptionsOrThrow(options); });
}

RingBuilder::RingBuilder(RingOptions options) noexcept : options_(options) {}

Status RingBuilder::Add(std::string_view address, uint32_t weight) {
  return Add(address, weight, NodeOptions{});
}

Status RingBuilder::Add(std::string_view address, uint32_t weight, const NodeOptions& node) {
  // Strong guarantee: every allocation comes before the first change, and
  // the changes (table entries, then a push_back into reserved room) are
  // undone if a later one fails.
  try {
    return AddNode(address, weight, node);
  } catch (const std::bad_alloc&) {
    char what[48];
    std::snprintf(what, sizeof what, "adding node %zu", nodes_.size());
    return internal::OutOfMemory(what);
  }
}

Status RingBuilder::AddNode(std::string_view address, uint32_t weight) {
  return AddNode(address, weight, NodeOptions{});
}

Status RingBuilder::AddNode(std::string_view address, uint32_t weight, const NodeOptions& node) {
  if (Status status = ValidateRingOptions(options_); !status.ok()) return status;
  const size_t id = nodes_.size();
  if (id >= kMaxNodes) {
    return Status(StatusCode::kTooManyNodes,
                  NodeLabel(id, address) + ": more than 65,536 nodes (node ids are u16)");
  }
  const bool program = internal::IsProgramFlavor(options_.flavor);
  Result<internal::HashedNode> hashed_node = internal::ResolveNodeFields(options_, address, node);
  if (!hashed_node.ok()) {
    return Status(hashed_node.status().code(),
                  NodeLabel(id, address) + ": " + hashed_node.status().message());
  }
  const std::optional<std::string>& replaced = hashed_node.value().replaced;
  const std::string_view text = replaced ? std::string_view(*replaced) : address;
  Result<NodeAddress> parsed =
      program ? internal::ParseProgramNode(options_, text, weight, hashed_node.value().rest)
              : ParseNodeAddress(options_.flavor, text);
  if (!parsed.ok()) {
    return Status(parsed.status().code(), NodeLabel(id, {}) + ": " + parsed.status().message());
  }
  if (node.server_id != 0) {
    if (const auto it = node_by_server_id_.find(node.server_id); it != node_by_server_id_.end()) {
      return Status(StatusCode::kDuplicateNode,
                    NodeLabel(id, address) + ": server id " + std::to_string(node.server_id) +
                        " is also " + NodeLabel(it->second, nodes_[it->second].address.written) +
                        "'s (HAProxy refuses two servers with one id)");
    }
  }
  std::string hashed = parsed.value().HashedBytes();
  if (const auto it = node_by_hashed_bytes_.find(hashed); it != node_by_hashed_bytes_.end()) {
    return Status(StatusCode::kDuplicateNode,
                  NodeLabel(id, address) + ": same identity as " +
                      NodeLabel(it->second, nodes_[it->second].address.written) +
                      " (both would own the same point chain)");
  }
  // Varnish's REAL weights (NodeOptions::real_weight): from the first one
  // on, every node's weight is its point count, the earlier nodes' too.
  const bool counts_points = weights_are_points_ || node.real_weight.has_value();
  if (node.real_weight.has_value() && weight != 0) {
    return Status(StatusCode::kBadArgument,
                  NodeLabel(id, address) + ": weight " + std::to_string(weight) +
                      " and a real weight: a node has one weight (give 0 with a real one)");
  }
  uint32_t stored_weight = weight;
  std::vector<uint32_t> earlier_counts;
  uint64_t earlier_points = points_generated_;
  if (counts_points) {
    const uint32_t replicas = options_.varnish.replicas;
    Result<uint32_t> count =
        internal::VarnishPointCount(replicas, node.real_weight.value_or(weight));
    if (!count.ok()) {
      return Status(count.status().code(),
                    NodeLabel(id, address) + ": " + count.status().message());
    }
    stored_weight = count.value();
    if (!weights_are_points_) {
      earlier_counts.reserve(nodes_.size());
      earlier_points = 0;
      for (const NodeInfo& earlier : nodes_) {
        // Integer weights were checked against 2^32 - 1 points when added.
        earlier_counts.push_back(internal::VarnishPointCount(replicas, earlier.weight).value());
        earlier_points += earlier_counts.back();
      }
    }
  }
  const uint64_t node_points = counts_points ? stored_weight
                               : program     ? internal::NodePointsAlone(options_, weight)
                                             : uint64_t{weight} * options_.point_multiple;
  if (node_points > UINT32_MAX) {
    return Status(StatusCode::kTooManyPoints,
                  NodeLabel(id, address) + ": weight " + std::to_string(weight) +
                      " x multiple " + std::to_string(options_.point_multiple) +
                      " overflows 32 bits");
  }
  if (earlier_points + node_points > options_.max_points) {
    return Status(StatusCode::kTooManyPoints, NodeLabel(id, address) + ": ring would have " +
                                                  std::to_string(earlier_points + node_points) +
                                                  " points, over the cap of " +
                                                  std::to_string(options_.max_points));
  }
  // Geometric growth (reserve(id + 1) would copy the nodes on every Add).
  if (nodes_.size() == nodes_.capacity()) {
    nodes_.reserve(std::max<size_t>(16, 2 * nodes_.capacity()));
  }
  const auto hashed_entry =
      node_by_hashed_bytes_.emplace(std::move(hashed), static_cast<uint32_t>(id)).first;
  if (node.server_id != 0) {
    try {
      node_by_server_id_.emplace(node.server_id, static_cast<uint32_t>(id));
    } catch (...) {
      node_by_hashed_bytes_.erase(hashed_entry);
      throw;
    }
  }
  // reserved: no throw
  nodes_.push_back(NodeInfo{std::move(parsed).value(), stored_weight, node.server_id});
  for (size_t i = 0; i < earlier_counts.size(); ++i) nodes_[i].weight = earlier_counts[i];
  weights_are_points_ = counts_points;
  points_generated_ = earlier_points + node_points;
  return Status();
}

Result<Ring> RingBuilder::Build() && {
  RingOptions options = options_;
  if (weights_are_points_) options.varnish.replicas = 1;
  Result<Ring> ring = internal::BuildRingFromNodes(options, nodes_, points_generated_);
  if (ring.ok()) {
    // BuildRingFromNodes took the nodes; nothing here allocates.
    nodes_.clear();
    node_by_hashed_bytes_.clear();
    node_by_server_id_.clear();
    points_generated_ = 0;
    weights_are_points_ = false;
  }
  return ring;
}

namespace internal {

Result<Ring> BuildRingFromNodes(const RingOptions& options, std::vector<NodeInfo>& nodes,
                                uint64_t points_generated) {
  if (Status status = ValidateRingOptions(options); !status.ok()) return status;
  const auto start = std::chrono::steady_clock::now();
  const unsigned threads = internal::ThreadsFor(options.build_threads);
  try {
    auto state = std::make_unique<RingState>();
    state->flavor = options.flavor;
    state->options = options;
    state->point_multiple = options.point_multiple;
    state->tie_break = FlavorTieBreak(options.flavor);
    state->points_generated = points_generated;
    const uint32_t num_nodes = static_cast<uint32_t>(nodes.size());

    if (IsProgramFlavor(options.flavor)) {
      // The program's counts depend on the whole set: made from a copy, so
      // that a failed build leaves the caller's nodes (and their unassigned
      // server ids) as they were.
      state->nodes = nodes;
      if (Status status = BuildProgramRingOrThrow(options, *state, threads); !status.ok()) {
        return status;
      }
      CountNodesWithPoints(*state, num_nodes, NodesWithWeight(state->nodes));
      nodes.clear();
      state->build_seconds = SecondsSince(start);
      return internal::RingFactory::Make(std::move(state));
    }

    std::vector<uint32_t> rank(num_nodes);
    std::iota(rank.begin(), rank.end(), 0u);
    if (state->tie_break == TieBreak::kAddressOrder) {
      std::vector<uint32_t> by_address(num_nodes);
      std::iota(by_address.begin(), by_address.end(), 0u);
      std::sort(by_address.begin(), by_address.end(), [&](uint32_t a, uint32_t b) {
        return nodes[a].address.order < nodes[b].address.order;
      });
      for (uint32_t r = 0; r < num_nodes; ++r) rank[by_address[r]] = r;
    } else if (state->tie_break == TieBreak::kIdOrder) {
      std::vector<uint32_t> by_id(num_nodes);
      std::iota(by_id.begin(), by_id.end(), 0u);
      // Ids are distinct (kDuplicateNode), so the order is total.
      std::sort(by_id.begin(), by_id.end(), [&](uint32_t a, uint32_t b) {
        return nodes[a].address.host < nodes[b].address.host;
      });
      for (uint32_t r = 0; r < num_nodes; ++r) rank[by_id[r]] = r;
    }

    internal::PointKeyBuffer keys;
    if (!keys.Allocate(points_generated, state->columns))
      return PointsOutOfMemory(points_generated);
    std::vector<internal::PointChain> chains(num_nodes);
    for (uint32_t id = 0; id < num_nodes; ++id) {
      // Each node's CRC state after HOST "\0" PORT is computed once; its whole
      // chain continues from it.
      const std::string bytes = nodes[id].address.HashedBytes();
      chains[id] = {internal::Crc32UpdateRaw(
                        0xFFFFFFFFu, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
                    uint64_t{nodes[id].weight} * options.point_multiple, rank[id], id};
    }
    internal::SortedKeyParts parts;
    if (!internal::GenerateSortedPointKeys(chains, keys.data(), points_generated, threads, parts)) {
      return internal::OutOfMemory("sorting ring points");
    }
    if (Status status = internal::BuildColumnsFromSortedKeys(
            keys.data(), points_generated, state->columns, &state->losers, &parts);
        !status.ok()) {
      return status;
    }
    keys = internal::PointKeyBuffer();
    CountNodesWithPoints(*state, num_nodes, NodesWithWeight(nodes));
    // Nothing below allocates: the caller gives up its nodes only now.
    state->nodes = std::move(nodes);
    nodes.clear();
    state->build_seconds = SecondsSince(start);
    return internal::RingFactory::Make(std::move(state));
  } catch (const std::bad_alloc&) {
    return PointsOutOfMemory(points_generated);
  }
}

}  // namespace internal

Result<Ring> BuildRingFromPoints(uint32_t num_nodes, std::span<const RawPoint> points,
                                 std::span<const uint32_t> tie_rank, uint64_t max_points) {
  if (num_nodes > kMaxNodes) {
    return Status(StatusCode::kTooManyNodes, std::to_string(num_nodes) +
                                                 " nodes: at most 65,536 (node ids are u16)");
  }
  if (Status status = ValidateMaxPoints(max_points); !status.ok()) return status;
  if (points.size() > max_points) {
    return Status(StatusCode::kTooManyPoints, std::to_string(points.size()) +
                                                  " points, over the cap of " +
                                                  std::to_string(max_points));
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    if (!tie_rank.empty()) {
      if (tie_rank.size() != num_nodes) {
        return Status(StatusCode::kBadArgument,
                      "tie_rank has " + std::to_string(tie_rank.size()) + " entries for " +
                          std::to_string(num_nodes) + " nodes");
      }
      std::vector<bool> used(num_nodes, false);
      for (uint32_t node = 0; node < num_nodes; ++node) {
        if (tie_rank[node] >= num_nodes || used[tie_rank[node]]) {
          return Status(StatusCode::kBadArgument,
                        "tie_rank is not a permutation of 0.." +
                            std::to_string(num_nodes - 1) + " (node " +
                            std::to_string(node) + ")");
        }
        used[tie_rank[node]] = true;
      }
    }
    auto state = std::make_unique<RingState>();
    state->raw = true;
    state->tie_break = tie_rank.empty() ? TieBreak::kConfigOrder : TieBreak::kExplicitRank;
    state->point_multiple = 0;
    state->points_generated = points.size();
    state->nodes.resize(num_nodes);

    internal::PointKeyBuffer keys;
    if (!keys.Allocate(points.size(), state->columns)) return PointsOutOfMemory(points.size());
    for (size_t i = 0; i < points.size(); ++i) {
      const uint32_t node = points[i].node;
      if (node >= num_nodes) {
        return Status(StatusCode::kBadNodeId,
                      "point " + std::to_string(i) + " names node " + std::to_string(node) +
                          " of a ring with " + std::to_string(num_nodes) + " nodes");
      }
      const uint32_t rank = tie_rank.empty() ? node : tie_rank[node];
      keys.data()[i] = internal::PointSortKey(points[i].hash, rank, node);
      ++state->nodes[node].weight;  // a raw node's weight is its point count
    }
    if (Status status = internal::BuildColumnsFromKeys(keys.data(), points.size(),
                                                       state->columns, &state->losers);
        !status.ok()) {
      return status;
    }
    CountNodesWithPoints(*state, num_nodes, NodesWithWeight(state->nodes));
    state->build_seconds = SecondsSince(start);
    return internal::RingFactory::Make(std::move(state));
  } catch (const std::bad_alloc&) {
    return PointsOutOfMemory(points.size());
  }
}

}  // namespace chash
