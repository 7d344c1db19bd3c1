#include "reference/reference_ring.h"

#include <algorithm>
#include <map>
#include <set>

#include "reference/reference_address.h"

namespace chash::reference {

uint32_t BitwiseCrc32(uint32_t crc, const void* data, size_t len) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  crc = ~crc;
  for (size_t i = 0; i < len; ++i) {
    crc ^= bytes[i];
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 1) ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
    }
  }
  return ~crc;
}

namespace {

// Sorts by hash; among equal hashes the smaller rank first (std::stable_sort
// keeps generation order within a rank, as glibc's merge-sort qsort does for
// nginx). Then keeps the first point of each run of equal hashes; the other
// nodes of the run, each once, in that order, go to `losers`.
std::vector<Point> SortAndDedup(std::vector<Point> points, const std::vector<uint32_t>& rank,
                                std::vector<Point>& losers) {
  std::stable_sort(points.begin(), points.end(), [&](const Point& a, const Point& b) {
    if (a.hash != b.hash) return a.hash < b.hash;
    return rank[a.node] < rank[b.node];
  });
  std::vector<Point> kept;
  std::set<uint32_t> run_nodes;  // the nodes already seen at this hash
  for (const Point& point : points) {
    if (kept.empty() || kept.back().hash != point.hash) {
      kept.push_back(point);
      run_nodes = {point.node};
    } else if (run_nodes.insert(point.node).second) {
      losers.push_back(point);
    }
  }
  return kept;
}

}  // namespace

Result<ReferenceRing> ReferenceRing::Build(Flavor flavor, uint32_t point_multiple,
                                           const std::vector<Server>& servers,
                                           uint64_t max_points) {
  if (point_multiple == 0) return Status(StatusCode::kBadMultiple, "multiple 0");
  if ((flavor == Flavor::kNginx || flavor == Flavor::kPingoraV1) && point_multiple != 160) {
    return Status(StatusCode::kBadMultiple, "multiple must be 160");
  }
  if (max_points == 0 || max_points > kHardMaxPoints) {
    return Status(StatusCode::kBadArgument, "bad max_points");
  }
  std::vector<ParsedAddress> addresses;
  std::set<std::string> seen_bytes;
  uint64_t total = 0;
  for (size_t i = 0; i < servers.size(); ++i) {
    if (i >= 65536) return Status(StatusCode::kTooManyNodes, "more than 65536 nodes");
    ParsedAddress address = ParseAddress(flavor, servers[i].address);
    if (!address.accepted) return Status(StatusCode::kBadAddress, address.why);
    if (!seen_bytes.insert(address.HashedBytes()).second) {
      return Status(StatusCode::kDuplicateNode, "duplicate node");
    }
    const uint64_t node_points = uint64_t{servers[i].weight} * point_multiple;
    if (node_points > 0xFFFFFFFFu) return Status(StatusCode::kTooManyPoints, "overflow");
    total += node_points;
    if (total > max_points) return Status(StatusCode::kTooManyPoints, "over the cap");
    addresses.push_back(std::move(address));
  }

  // nginx: for each server in configuration order, weight x 160 points:
  //   base_hash = crc32(HOST "\0" PORT); prev_hash = 0;
  //   hash = crc32(base_hash, prev_hash as 4 little-endian bytes).
  std::vector<Point> points;
  for (uint32_t node = 0; node < addresses.size(); ++node) {
    const std::string bytes = addresses[node].HashedBytes();
    const uint32_t base_hash = BitwiseCrc32(0, bytes.data(), bytes.size());
    uint32_t prev_hash = 0;
    const uint64_t count = uint64_t{servers[node].weight} * point_multiple;
    for (uint64_t j = 0; j < count; ++j) {
      const uint8_t prev_le[4] = {
          static_cast<uint8_t>(prev_hash), static_cast<uint8_t>(prev_hash >> 8),
          static_cast<uint8_t>(prev_hash >> 16), static_cast<uint8_t>(prev_hash >> 24)};
      const uint32_t hash = BitwiseCrc32(base_hash, prev_le, 4);
      points.push_back(Point{hash, node});
      prev_hash = hash;
    }
  }

  // Tie-break rank: configuration order, or (pingora v2) the socket address
  // order: IPv4 before IPv6, then address bytes, then port, or (resty) the
  // id's bytes as unsigned values, a prefix first.
  std::vector<uint32_t> rank(addresses.size());
  if (flavor == Flavor::kResty) {
    // Byte by byte, written out rather than through std::string's compare
    // (which the engine uses): the oracle states the order on its own.
    const auto id_less = [&addresses](uint32_t a, uint32_t b) {
      const std::string& x = addresses[a].host;
      const std::string& y = addresses[b].host;
      for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
        const auto cx = static_cast<uint8_t>(x[i]), cy = static_cast<uint8_t>(y[i]);
        if (cx != cy) return cx < cy;
      }
      return x.size() < y.size();
    };
    std::vector<uint32_t> by_id(addresses.size());
    for (uint32_t node = 0; node < by_id.size(); ++node) by_id[node] = node;
    std::stable_sort(by_id.begin(), by_id.end(), id_less);
    for (uint32_t r = 0; r < by_id.size(); ++r) rank[by_id[r]] = r;
    ReferenceRing ring;
    ring.points_generated_ = points.size();
    ring.num_nodes_ = static_cast<uint32_t>(addresses.size());
    ring.points_ = SortAndDedup(std::move(points), rank, ring.collision_losers_);
    return ring;
  }
  std::vector<std::pair<SocketOrderKey, uint32_t>> by_address;
  for (uint32_t node = 0; node < addresses.size(); ++node) {
    by_address.emplace_back(flavor == Flavor::kPingoraV2 ? addresses[node].order
                                                         : SocketOrderKey{},
                            node);
  }
  std::sort(by_address.begin(), by_address.end());  // equal keys: by node id
  for (uint32_t r = 0; r < by_address.size(); ++r) rank[by_address[r].second] = r;

  ReferenceRing ring;
  ring.points_generated_ = points.size();
  ring.num_nodes_ = static_cast<uint32_t>(addresses.size());
  ring.points_ = SortAndDedup(std::move(points), rank, ring.collision_losers_);
  return ring;
}

Result<ReferenceRing> ReferenceRing::FromPoints(uint32_t num_nodes, std::vector<RawPoint> raw,
                                                std::vector<uint32_t> tie_rank,
                                                uint64_t max_points) {
  if (num_nodes > 65536) return Status(StatusCode::kTooManyNodes, "more than 65536 nodes");
  if (max_points == 0 || max_points > kHardMaxPoints) {
    return Status(StatusCode::kBadArgument, "bad max_points");
  }
  if (raw.size() > max_points) return Status(StatusCode::kTooManyPoints, "over the cap");
  if (!tie_rank.empty()) {
    if (tie_rank.size() != num_nodes) return Status(StatusCode::kBadArgument, "rank size");
    std::vector<uint32_t> sorted = tie_rank;
    std::sort(sorted.begin(), sorted.end());
    for (uint32_t i = 0; i < num_nodes; ++i) {
      if (sorted[i] != i) return Status(StatusCode::kBadArgument, "rank not a permutation");
    }
  } else {
    for (uint32_t node = 0; node < num_nodes; ++node) tie_rank.push_back(node);
  }
  std::vector<Point> points;
  for (const RawPoint& point : raw) {
    if (point.node >= num_nodes) return Status(StatusCode::kBadNodeId, "node id out of range");
    points.push_back(Point{point.hash, point.node});
  }
  ReferenceRing ring;
  ring.points_generated_ = points.size();
  ring.num_nodes_ = num_nodes;
  ring.points_ = SortAndDedup(std::move(points), tie_rank, ring.collision_losers_);
  return ring;
}

size_t ReferenceRing::FindPoint(uint32_t hash) const {
  const auto it = std::lower_bound(points_.begin(), points_.end(), hash,
                                   [](const Point& p, uint32_t h) { return p.hash < h; });
  return it == points_.end() ? 0 : static_cast<size_t>(it - points_.begin());
}

uint32_t ReferenceRing::FindNodeByHash(uint32_t hash) const {
  if (points_.empty()) return kNoNode;
  return points_[FindPoint(hash)].node;
}

uint32_t ReferenceRing::FindNode(std::string_view key) const {
  return FindNodeByHash(BitwiseCrc32(0, key.data(), key.size()));
}

std::vector<uint32_t> ReferenceRing::Walk(uint32_t hash, size_t count) const {
  std::vector<uint32_t> nodes;
  if (points_.empty()) return nodes;
  size_t index = FindPoint(hash);
  for (size_t i = 0; i < count; ++i) {
    nodes.push_back(points_[index].node);
    index = (index + 1) % points_.size();
  }
  return nodes;
}

std::vector<uint32_t> ReferenceRing::DistinctWalk(uint32_t hash) const {
  std::vector<uint32_t> nodes;
  if (points_.empty()) return nodes;
  std::set<uint32_t> seen;
  size_t index = FindPoint(hash);
  for (size_t i = 0; i < points_.size(); ++i) {
    if (seen.insert(points_[index].node).second) nodes.push_back(points_[index].node);
    index = (index + 1) % points_.size();
  }
  return nodes;
}

}  // namespace chash::reference
