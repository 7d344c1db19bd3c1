#include "lookup_diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string_view>

#include "capacity_model.h"
#include "chash/crc32.h"
#include "chash/failover.h"
#include "chash/stats.h"
#include "fuzz_support.h"

namespace chash::fuzz {
namespace {

using reference::ReferenceRing;

// Above this many points the probes sample the ring evenly (each exec must
// stay in the milliseconds).
constexpr size_t kMaxProbedPoints = 2048;
// Steps compared along each failover walk, and how many walks.
constexpr size_t kWalkSteps = 48;
constexpr size_t kWalks = 12;
constexpr size_t kDistinctWalks = 4;
constexpr uint32_t kUnwritten = 0xDEADBEEFu;
// Walk steps the masked probes of one lookup family may take on one target.
constexpr uint64_t kMaskedWalkBudget = 4'000'000;

std::string NodeText(uint32_t node) {
  return node == Ring::kNoNode ? "kNoNode" : std::to_string(node);
}

[[noreturn]] void Mismatch(const DiffContext& c, const std::string& lookup, uint32_t hash,
                           uint32_t expected, uint32_t got) {
  Fail(lookup + " on target " + c.target + ": hash " + Hex32(hash) + " expected node " +
           NodeText(expected) + ", got " + NodeText(got),
       c.description);
}

std::vector<uint32_t> Probes(const ReferenceRing& ref, const std::vector<uint32_t>& extra) {
  std::vector<uint32_t> probes = {0u, 1u, 0xFFFFFFFEu, 0xFFFFFFFFu};
  const auto& points = ref.points();
  const size_t n = points.size();
  const size_t stride = n <= kMaxProbedPoints ? 1 : n / kMaxProbedPoints;
  auto around = [&](uint32_t h) {
    probes.push_back(h);
    probes.push_back(h - 1);  // wraps at 0: intended
    probes.push_back(h + 1);
  };
  for (size_t i = 0; i < n; i += stride) around(points[i].hash);
  if (n > 0) around(points[n - 1].hash);  // the largest: +1 is the wrap-around
  probes.insert(probes.end(), extra.begin(), extra.end());
  return probes;
}

// ---- Target-independent checks --------------------------------------------------

void CheckShape(const DiffContext& c) {
  const auto& points = c.ref.points();
  std::set<uint32_t> owners;
  for (const auto& point : points) owners.insert(point.node);
  auto expect = [&](const char* what, uint64_t got, uint64_t want) {
    if (got != want) {
      Fail(
          std::string(what) + ": expected " + std::to_string(want) + ", got " + std::to_string(got),
          c.description);
    }
  };
  expect("num_points", c.ring.num_points(), points.size());
  expect("points_generated", c.ring.points_generated(), c.ref.points_generated());
  expect("collisions", c.ring.collisions(), c.ref.points_generated() - points.size());
  expect("nodes_with_points", c.ring.nodes_with_points(), owners.size());
  expect("num_nodes", c.ring.num_nodes(), c.ref.num_nodes());
  expect("empty", c.ring.empty(), points.empty());
}

// The ring-order point sequence from Begin(), and the cursor's cycle.
void CheckPointSequence(const DiffContext& c) {
  const auto& points = c.ref.points();
  PointCursor cursor = c.ring.Begin();
  if (cursor.empty() != points.empty()) Fail("Begin().empty() differs", c.description);
  if (points.empty()) {
    if (cursor.Next() != Ring::kNoNode) Fail("Next() on an empty walk", c.description);
    return;
  }
  const PointCursor begin = cursor;
  for (size_t i = 0; i < points.size(); ++i) {
    if (cursor.hash() != points[i].hash || cursor.node() != points[i].node) {
      Fail("point " + std::to_string(i) + " in ring order: expected (" + Hex32(points[i].hash) +
               ", node " + std::to_string(points[i].node) + "), got (" + Hex32(cursor.hash()) +
               ", node " + std::to_string(cursor.node()) + ")",
           c.description);
    }
    cursor.Advance();
  }
  if (!(cursor == begin)) Fail("the walk does not cycle after num_points steps", c.description);
}

// NodeHashShares: each node owns the hashes from its predecessor's hash + 1
// up to its point's hash; the first point also owns the wrap-around.
void CheckShares(const DiffContext& c) {
  const auto& points = c.ref.points();
  std::vector<uint64_t> want(c.ref.num_nodes(), 0);
  for (size_t i = 0; i < points.size(); ++i) {
    const uint64_t from = i == 0 ? uint64_t{points.back().hash} : uint64_t{points[i - 1].hash};
    const uint64_t to = points[i].hash;
    want[points[i].node] += i == 0 ? (uint64_t{1} << 32) - from + to : to - from;
  }
  if (NodeHashShares(c.ring) != want) Fail("NodeHashShares differs", c.description);
}

// ComputeRingStats and its JSON against the shape; memory accounting bounds.
void CheckStats(const DiffContext& c) {
  const RingStats stats = ComputeRingStats(c.ring);
  const MemoryUsage memory = c.ring.memory_usage();
  const uint64_t points = c.ref.points().size();
  const bool counts_ok =
      stats.nodes == c.ref.num_nodes() && stats.points_generated == c.ref.points_generated() &&
      stats.points == points && stats.collisions == c.ref.points_generated() - points;
  // columns.h: 6 bytes a kept point plus one sentinel slot, and at most one
  // cache line of rounding per column (one 4 KiB page when the OS maps it);
  // nothing for an empty ring. The collision table: 6 bytes a loser.
  const uint64_t min_columns = points == 0 ? 0 : 6 * (points + 1);
  const uint64_t losers = c.ref.collision_losers().size();
  const bool memory_ok = stats.column_bytes == memory.column_bytes &&
                         memory.column_bytes >= min_columns &&
                         memory.column_bytes <= min_columns + 2 * 4096 && memory.other_bytes > 0 &&
                         stats.index_bytes == memory.index_bytes &&
                         stats.collision_table_bytes == memory.collision_table_bytes &&
                         memory.collision_table_bytes >= 6 * losers && c.ring.build_seconds() >= 0;
  const bool shares_ok = std::isfinite(stats.cv_measured) && std::isfinite(stats.cv_predicted) &&
                         stats.cv_measured >= 0 && stats.min_share_ratio <= stats.max_share_ratio;
  Result<std::string> stats_json = RingStatsJson(stats);
  const std::string json = stats_json.ok() ? stats_json.value() : stats_json.status().ToString();
  const bool json_ok = json.find("\"points\":" + std::to_string(points) + ",") != std::string::npos;
  if (!counts_ok || !memory_ok || (points > 0 && !shares_ok) || !json_ok) {
    Fail("ComputeRingStats disagrees with the ring: " + json + " (memory_usage columns " +
             std::to_string(memory.column_bytes) + ", other " + std::to_string(memory.other_bytes) +
             ", index " + std::to_string(memory.index_bytes) + ", collision table " +
             std::to_string(memory.collision_table_bytes) + " for " + std::to_string(losers) +
             " losers)",
         c.description);
  }
}

// owns_points and has_points for every id (and past the last), and the
// collision losers the masked lookups rely on, entry by entry.
void CheckOwnershipAndLosers(const DiffContext& c) {
  std::vector<bool> owns(c.ref.num_nodes(), false);
  for (const auto& point : c.ref.points()) owns[point.node] = true;
  std::vector<bool> has = owns;
  for (const auto& point : c.ref.collision_losers()) has[point.node] = true;
  for (uint32_t id = 0; id < c.ref.num_nodes(); ++id) {
    if (c.ring.owns_points(id) != owns[id] || c.ring.has_points(id) != has[id]) {
      Fail("owns_points(" + std::to_string(id) + ") is " +
               (c.ring.owns_points(id) ? "true" : "false") + ", has_points " +
               (c.ring.has_points(id) ? "true" : "false"),
           c.description);
    }
  }
  for (const uint32_t past : {c.ref.num_nodes(), Ring::kNoNode}) {
    if (c.ring.owns_points(past) || c.ring.has_points(past)) {
      Fail("owns_points or has_points is true past num_nodes()", c.description);
    }
  }
  const CollisionLosers got = c.ring.collision_losers();
  const auto& want = c.ref.collision_losers();
  if (got.hashes.size() != want.size() || got.nodes.size() != want.size()) {
    Fail("collision_losers has " + std::to_string(got.hashes.size()) + " entries, expected " +
             std::to_string(want.size()),
         c.description);
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (got.hashes[i] != want[i].hash || got.nodes[i] != want[i].node) {
      Fail("collision loser " + std::to_string(i) + ": expected (" + Hex32(want[i].hash) +
               ", node " + std::to_string(want[i].node) + "), got (" + Hex32(got.hashes[i]) +
               ", node " + std::to_string(got.nodes[i]) + ")",
           c.description);
    }
  }
}

// The NodeMask API against the availability the mask was decoded from.
void CheckNodeMask(const DiffContext& c) {
  const MaskCase& m = *c.mask;
  const NodeMask& mask = m.mask;
  uint32_t count = 0;
  for (uint32_t id = 0; id < m.available.size(); ++id) {
    if (mask.available(id) != m.available[id]) {
      Fail("NodeMask::available(" + std::to_string(id) + ") differs", c.description);
    }
    count += m.available[id] ? 1 : 0;
  }
  const auto words = mask.words();
  bool tail_clear = words.size() == (m.available.size() + 63) / 64;
  for (size_t bit = m.available.size(); tail_clear && bit < words.size() * 64; ++bit) {
    tail_clear = ((words[bit / 64] >> (bit % 64)) & 1) == 0;
  }
  NodeMask copy = mask;
  const bool set_past_end = copy.Set(mask.size(), true);
  if (mask.size() != m.available.size() || mask.count_available() != count || !tail_clear ||
      mask.available(mask.size()) || mask.available(Ring::kNoNode) || set_past_end ||
      !(copy == mask)) {
    Fail("NodeMask API: size " + std::to_string(mask.size()) + ", count_available " +
             std::to_string(mask.count_available()) + " (expected " + std::to_string(count) + ")",
         c.description);
  }
}

// BoundedLoadCapacity against its definition, derived in capacity_model.cc.
void CheckBoundedLoadCapacity(const DiffContext& c) {
  const double factor = c.mask->balance_factor;
  uint64_t sum = 0;
  for (const uint64_t load : c.mask->loads) sum = load > UINT64_MAX - sum ? UINT64_MAX : sum + load;
  for (const uint64_t total : {uint64_t{0}, uint64_t{1}, sum, UINT64_MAX - 1, UINT64_MAX}) {
    for (const uint32_t nodes : {0u, 1u, 3u, c.ref.num_nodes(), kMaxNodes, 1u << 20, UINT32_MAX}) {
      const uint64_t want = ModelBoundedLoadCapacity(total, nodes, factor);
      const uint64_t got = BoundedLoadCapacity(total, nodes, factor);
      if (got != want) {
        char text[64];
        std::snprintf(text, sizeof text, "%.17g", factor);
        Fail("BoundedLoadCapacity(" + std::to_string(total) + ", " + std::to_string(nodes) + ", " +
                 text + ") = " + std::to_string(got) + ", expected " + std::to_string(want),
             c.description);
      }
    }
  }
}

// ---- Per-target checks ---------------------------------------------------------------

void CheckSingleLookups(DiffContext& c) {
  for (size_t i = 0; i < c.probes.size(); ++i) {
    const uint32_t got = c.ring.FindNodeByHash(c.probes[i]);
    if (got != c.expected[i]) Mismatch(c, "FindNodeByHash", c.probes[i], c.expected[i], got);
  }
  for (size_t i = 0; i < c.keys.size(); ++i) {
    const uint32_t got = c.ring.FindNode(c.keys[i]);
    if (got != c.expected_key[i]) {
      Mismatch(c, "FindNode(" + Printable(c.keys[i]) + ")", Crc32(c.keys[i]), c.expected_key[i],
               got);
    }
  }
  c.checks += c.probes.size() + c.keys.size();
}

// Whole batches and slices of every length up to 33 at shifting offsets (so
// that vector kernels see each tail length and alignment); nothing may be
// written past the batch.
void CheckBatchLookups(DiffContext& c) {
  const size_t n = c.probes.size();
  std::vector<uint32_t> out(n + 8);
  auto run = [&](size_t begin, size_t count) {
    std::fill(out.begin(), out.end(), kUnwritten);
    c.ring.FindNodesByHash(std::span<const uint32_t>(c.probes.data() + begin, count),
                           std::span<uint32_t>(out.data(), count + 8));
    for (size_t i = 0; i < count; ++i) {
      if (out[i] != c.expected[begin + i]) {
        Mismatch(c, "FindNodesByHash[" + std::to_string(i) + " of " + std::to_string(count) + "]",
                 c.probes[begin + i], c.expected[begin + i], out[i]);
      }
    }
    for (size_t i = count; i < count + 8; ++i) {
      if (out[i] != kUnwritten) {
        Fail("FindNodesByHash on " + c.target + " wrote past a batch of " + std::to_string(count),
             c.description);
      }
    }
    c.checks += count;
  };
  run(0, n);
  for (size_t count = 0, begin = 0; count <= 33 && count <= n; ++count) {
    begin = (begin + 7) % (n - count + 1);
    run(begin, count);
  }

  std::vector<std::string_view> views(c.keys.begin(), c.keys.end());
  std::vector<uint32_t> key_out(views.size() + 8, kUnwritten);
  c.ring.FindNodes(views, key_out);
  for (size_t i = 0; i < views.size(); ++i) {
    if (key_out[i] != c.expected_key[i]) {
      Mismatch(c, "FindNodes(" + Printable(c.keys[i]) + ")", Crc32(c.keys[i]), c.expected_key[i],
               key_out[i]);
    }
  }
  for (size_t i = views.size(); i < key_out.size(); ++i) {
    if (key_out[i] != kUnwritten) Fail("FindNodes wrote past the batch", c.description);
  }
  c.checks += views.size();
}

// Walk/WalkFromHash against the reference's successive points (node_iter).
void CompareWalk(DiffContext& c, PointCursor cursor, uint32_t hash, const std::string& what) {
  const auto& points = c.ref.points();
  if (points.empty()) {
    cursor.Advance();  // a no-op on an empty walk
    if (!cursor.empty() || cursor.Next() != Ring::kNoNode) {
      Fail(what + " on an empty ring is not empty", c.description);
    }
    return;
  }
  const size_t steps = std::min(points.size() + 1, kWalkSteps);
  const std::vector<uint32_t> want = c.ref.Walk(hash, steps);  // pingora node_iter
  size_t index = c.ref.FindPoint(hash);
  for (size_t s = 0; s < steps; ++s) {
    if (cursor.hash() != points[index].hash) {
      Fail(what + " on " + c.target + ": step " + std::to_string(s) + " hash expected " +
               Hex32(points[index].hash) + ", got " + Hex32(cursor.hash()),
           c.description);
    }
    const uint32_t got = cursor.Next();
    if (got != want[s]) Mismatch(c, what + " step " + std::to_string(s), hash, want[s], got);
    index = (index + 1) % points.size();
  }
  c.checks += steps;
}

void CheckFailoverWalks(DiffContext& c) {
  const size_t stride = std::max<size_t>(1, c.probes.size() / kWalks);
  for (size_t i = 0; i < c.probes.size(); i += stride) {
    CompareWalk(c, c.ring.WalkFromHash(c.probes[i]), c.probes[i],
                "WalkFromHash(" + Hex32(c.probes[i]) + ")");
  }
  for (size_t i = 0; i < c.keys.size() && i < kWalks; ++i) {
    CompareWalk(c, c.ring.Walk(c.keys[i]), Crc32(c.keys[i]), "Walk(" + Printable(c.keys[i]) + ")");
  }
}

void CompareDistinct(DiffContext& c, DistinctNodeWalk walk, uint32_t hash,
                     const std::vector<uint32_t>& want, const std::string& what) {
  for (size_t i = 0; i < want.size(); ++i) {
    const uint32_t got = walk.Next();
    if (got != want[i]) Mismatch(c, what + " node " + std::to_string(i), hash, want[i], got);
  }
  for (int extra = 0; extra < 2; ++extra) {
    const uint32_t got = walk.Next();
    if (got != Ring::kNoNode) Mismatch(c, what + " past the end", hash, Ring::kNoNode, got);
  }
  c.checks += want.size() + 2;
}

void CheckDistinctWalks(DiffContext& c) {
  for (size_t i = 0; i < c.distinct_from.size(); ++i) {
    const uint32_t hash = c.distinct_from[i];
    CompareDistinct(c, c.ring.WalkDistinctFromHash(hash), hash, c.distinct_expected[i],
                    "WalkDistinctFromHash(" + Hex32(hash) + ")");
  }
  if (!c.keys.empty()) {
    // distinct_from ends with the first key's hash.
    CompareDistinct(c, c.ring.WalkDistinct(c.keys[0]), Crc32(c.keys[0]), c.distinct_expected.back(),
                    "WalkDistinct(" + Printable(c.keys[0]) + ")");
  }
}

// FindAvailableNode* against the reference ring of the available nodes.
void CheckMaskedLookups(DiffContext& c) {
  if (c.mask == nullptr) return;
  const NodeMask& mask = c.mask->mask;
  std::vector<uint32_t> probes;
  std::vector<uint32_t> expected;
  for (size_t i = 0; i < c.probes.size(); i += c.masked_stride) {
    probes.push_back(c.probes[i]);
    expected.push_back(c.masked_expected[i]);
    const uint32_t got = FindAvailableNodeByHash(c.ring, mask, c.probes[i]);
    if (got != c.masked_expected[i]) {
      Mismatch(c, "FindAvailableNodeByHash", c.probes[i], c.masked_expected[i], got);
    }
  }
  for (size_t i = 0; i < c.keys.size(); ++i) {
    const uint32_t got = FindAvailableNode(c.ring, mask, c.keys[i]);
    if (got != c.masked_expected_key[i]) {
      Mismatch(c, "FindAvailableNode(" + Printable(c.keys[i]) + ")", Crc32(c.keys[i]),
               c.masked_expected_key[i], got);
    }
  }
  std::vector<uint32_t> out(probes.size() + 8, kUnwritten);
  FindAvailableNodesByHash(c.ring, mask, probes, out);
  for (size_t i = 0; i < out.size(); ++i) {
    const uint32_t want = i < probes.size() ? expected[i] : kUnwritten;
    if (out[i] != want) {
      Mismatch(c, "FindAvailableNodesByHash[" + std::to_string(i) + "]",
               i < probes.size() ? probes[i] : 0, want, out[i]);
    }
  }
  std::vector<std::string_view> views(c.keys.begin(), c.keys.end());
  std::vector<uint32_t> key_out(views.size() + 8, kUnwritten);
  FindAvailableNodes(c.ring, mask, views, key_out);
  for (size_t i = 0; i < key_out.size(); ++i) {
    const uint32_t want = i < views.size() ? c.masked_expected_key[i] : kUnwritten;
    if (key_out[i] != want) {
      Mismatch(c, "FindAvailableNodes[" + std::to_string(i) + "]", 0, want, key_out[i]);
    }
  }
  c.checks += 2 * (probes.size() + c.keys.size());
}

// The same lookups through an AvailabilityMask the mask was published to;
// a mask of another size is refused.
void CheckAvailabilityMask(DiffContext& c) {
  if (c.mask == nullptr) return;
  const NodeMask& mask = c.mask->mask;
  AvailabilityMask published(mask.size());
  uint64_t version = 99;
  const Status status = published.Publish(mask);
  if (!status.ok() || published.version() != 1 || !(published.Snapshot(&version) == mask) ||
      version != 1) {
    Fail("AvailabilityMask::Publish of a mask of its size: " + status.ToString(), c.description);
  }
  AvailabilityMask other(mask.size() == 0 ? 1 : mask.size() - 1);
  const Status refused = other.Publish(mask);
  if (refused.code() != StatusCode::kBadArgument || other.version() != 0) {
    Fail("AvailabilityMask::Publish accepted a mask of another size", c.description);
  }
  size_t probed = 0;
  for (size_t i = 0; i < c.probes.size(); i += c.masked_stride, ++probed) {
    const uint32_t got = published.FindNodeByHash(c.ring, c.probes[i]);
    if (got != c.masked_expected[i]) {
      Mismatch(c, "AvailabilityMask::FindNodeByHash", c.probes[i], c.masked_expected[i], got);
    }
  }
  std::vector<std::string_view> views(c.keys.begin(), c.keys.end());
  std::vector<uint32_t> out(views.size(), kUnwritten);
  published.FindNodes(c.ring, views, out);
  for (size_t i = 0; i < views.size(); ++i) {
    const uint32_t single = published.FindNode(c.ring, views[i]);
    if (out[i] != c.masked_expected_key[i] || single != c.masked_expected_key[i]) {
      Mismatch(c, "AvailabilityMask::FindNode(s)(" + Printable(c.keys[i]) + ")", Crc32(c.keys[i]),
               c.masked_expected_key[i], out[i] != c.masked_expected_key[i] ? out[i] : single);
    }
  }
  c.checks += probed + 2 * views.size();
}

// The first node of `walk` below capacity (and with a load at all).
uint32_t FirstUnderCapacity(const std::vector<uint32_t>& walk, const std::vector<uint64_t>& loads,
                            uint64_t capacity) {
  for (const uint32_t node : walk) {
    if (node < loads.size() && loads[node] < capacity) return node;
  }
  return Ring::kNoNode;
}

// FindNodeUnderCapacity and FindNodeBoundedLoad (u64 and u32 loads, with and
// without the mask): the first node of the (masked) distinct walk whose load
// is below capacity; BoundedLoad's capacity from the available nodes that
// own a kept point.
void CheckBoundedLoads(DiffContext& c) {
  if (c.mask == nullptr) return;
  const MaskCase& m = *c.mask;
  const std::vector<uint64_t>& loads = m.loads;
  std::vector<uint32_t> loads32(loads.size());
  std::vector<uint64_t> loads32_as64(loads.size());
  for (size_t i = 0; i < loads.size(); ++i) {
    loads32[i] = static_cast<uint32_t>(std::min<uint64_t>(loads[i], UINT32_MAX));
    loads32_as64[i] = loads32[i];
  }
  const bool factor_ok = std::isfinite(m.balance_factor) && m.balance_factor > 1.0;
  const bool loads_ok = loads.size() >= c.ref.num_nodes();
  // BoundedLoad's n and total, with and without the mask.
  struct Bounded {
    uint32_t nodes = 0;
    uint64_t total = 0, total32 = 0;
  } masked, unmasked;
  std::vector<bool> owns(c.ref.num_nodes(), false);
  for (const auto& point : c.ref.points()) owns[point.node] = true;
  auto add = [](uint64_t& sum, uint64_t load) {
    sum = load > UINT64_MAX - sum ? UINT64_MAX : sum + load;
  };
  for (uint32_t id = 0; id < c.ref.num_nodes() && loads_ok; ++id) {
    if (!owns[id]) continue;
    for (Bounded* b : {&unmasked, m.IsAvailable(id) ? &masked : nullptr}) {
      if (b == nullptr) continue;
      ++b->nodes;
      add(b->total, loads[id]);
      add(b->total32, loads32[id]);
    }
  }
  for (size_t w = 0; w < c.distinct_from.size(); ++w) {
    const uint32_t hash = c.distinct_from[w];
    const std::vector<uint32_t>& full = c.distinct_expected[w];
    const std::vector<uint32_t>& avail = c.available_walks[w];
    auto expect = [&](const char* what, uint32_t got, uint32_t want) {
      if (got != want) Mismatch(c, what, hash, want, got);
    };
    expect(
        "FindNodeUnderCapacity(masked)",
        FindNodeUnderCapacity(c.ring, hash, std::span<const uint64_t>(loads), m.capacity, &m.mask),
        FirstUnderCapacity(avail, loads, m.capacity));
    expect("FindNodeUnderCapacity",
           FindNodeUnderCapacity(c.ring, hash, std::span<const uint64_t>(loads), m.capacity),
           FirstUnderCapacity(full, loads, m.capacity));
    expect("FindNodeUnderCapacity(u32 loads, masked)",
           FindNodeUnderCapacity(c.ring, hash, std::span<const uint32_t>(loads32), m.capacity,
                                 &m.mask),
           FirstUnderCapacity(avail, loads32_as64, m.capacity));
    for (const bool use_mask : {true, false}) {
      for (const bool narrow : {false, true}) {
        const Bounded& b = use_mask ? masked : unmasked;
        const NodeMask* mask = use_mask ? &m.mask : nullptr;
        const Result<uint32_t> got =
            narrow ? FindNodeBoundedLoad(c.ring, hash, std::span<const uint32_t>(loads32),
                                         m.balance_factor, mask)
                   : FindNodeBoundedLoad(c.ring, hash, std::span<const uint64_t>(loads),
                                         m.balance_factor, mask);
        const std::string what = std::string("FindNodeBoundedLoad(") + (narrow ? "u32" : "u64") +
                                 (use_mask ? ", masked)" : ")");
        if (!factor_ok || !loads_ok) {
          if (got.ok() || got.status().code() != StatusCode::kBadArgument) {
            Fail(what + " accepted a bad factor or short loads", c.description);
          }
          continue;
        }
        if (!got.ok()) Fail(what + " failed: " + got.status().ToString(), c.description);
        const uint64_t total = narrow ? b.total32 : b.total;
        const uint32_t want =
            b.nodes == 0
                ? Ring::kNoNode
                : FirstUnderCapacity(use_mask ? avail : full, narrow ? loads32_as64 : loads,
                                     ModelBoundedLoadCapacity(total, b.nodes, m.balance_factor));
        expect(what.c_str(), got.value(), want);
        // failover.h: the loads sum to less than n * capacity, so some node
        // is below capacity (when the total did not saturate).
        if (b.nodes > 0 && total < UINT64_MAX / 2 && got.value() == Ring::kNoNode) {
          Fail(what + " found no node below capacity", c.description);
        }
      }
    }
    c.checks += 7;
  }
}

// Every lookup family of the public API, compared on each target. A new
// lookup (e.g. masks over nodes) is checked by adding its function here.
constexpr LookupCheck kPerTargetChecks[] = {
    CheckSingleLookups, CheckBatchLookups,     CheckFailoverWalks, CheckDistinctWalks,
    CheckMaskedLookups, CheckAvailabilityMask, CheckBoundedLoads,
};

}  // namespace

void CheckReadsAsEmpty(const Ring& ring, const std::string& what, const std::string& description) {
  const uint32_t hashes[2] = {0, 0xFFFFFFFFu};
  uint32_t out[2] = {0, 0};
  ring.FindNodesByHash(hashes, out);
  const std::string_view keys[1] = {"k"};
  uint32_t key_out[1] = {0};
  ring.FindNodes(keys, key_out);
  PointCursor walk = ring.Walk("k");
  walk.Advance();
  DistinctNodeWalk distinct = ring.WalkDistinct("k");
  if (!ring.empty() || ring.num_nodes() != 0 || ring.num_points() != 0 ||
      ring.points_generated() != 0 || ring.nodes_with_points() != 0 ||
      ring.FindNodeByHash(0) != Ring::kNoNode || ring.FindNode("k") != Ring::kNoNode ||
      out[0] != Ring::kNoNode || out[1] != Ring::kNoNode || key_out[0] != Ring::kNoNode ||
      !walk.empty() || walk.Next() != Ring::kNoNode || !ring.Begin().empty() ||
      distinct.Next() != Ring::kNoNode || ring.memory_usage().column_bytes != 0 ||
      NodeHashShares(ring).size() != 0 || ComputeRingStats(ring).points != 0) {
    Fail(what + " does not read as the empty ring", description);
  }
}

void CheckMoves(Ring& ring, const std::string& description) {
  const uint64_t points = ring.num_points();
  Ring moved(std::move(ring));
  CheckReadsAsEmpty(ring, "a moved-from ring", description);  // NOLINT(bugprone-use-after-move)
  ring = std::move(moved);
  CheckReadsAsEmpty(moved, "a moved-from ring", description);  // NOLINT(bugprone-use-after-move)
  if (ring.num_points() != points) Fail("moving a ring lost its points", description);
  CheckReadsAsEmpty(Ring(), "a default-constructed ring", description);
}

uint64_t CompareRingWithReference(const Ring& ring, const ReferenceRing& ref,
                                  const std::vector<std::string>& keys,
                                  const std::vector<uint32_t>& extra_hashes,
                                  const std::string& description, const MaskCase* mask,
                                  const ReferenceRing* available_ref) {
  DiffContext c{ring, ref, keys, description, Probes(ref, extra_hashes)};
  for (const uint32_t probe : c.probes) c.expected.push_back(ref.FindNodeByHash(probe));
  for (const std::string& key : keys) c.expected_key.push_back(ref.FindNode(key));
  const size_t stride = std::max<size_t>(1, c.probes.size() / kDistinctWalks);
  for (size_t i = 0; i < c.probes.size(); i += stride) c.distinct_from.push_back(c.probes[i]);
  if (!keys.empty()) c.distinct_from.push_back(Crc32(keys[0]));
  for (const uint32_t hash : c.distinct_from) c.distinct_expected.push_back(ref.DistinctWalk(hash));
  if (mask != nullptr) {
    c.mask = mask;
    c.available_ref = available_ref;
    for (const uint32_t probe : c.probes) {
      c.masked_expected.push_back(available_ref->FindNodeByHash(probe));
    }
    for (const std::string& key : keys) {
      c.masked_expected_key.push_back(available_ref->FindNode(key));
    }
    for (const uint32_t hash : c.distinct_from) {
      c.available_walks.push_back(available_ref->DistinctWalk(hash));
    }
    const uint64_t points = ref.points().size();
    const uint64_t available_points = available_ref->points().size();
    // With no available point a walk stops after max(64, nodes) steps and a
    // scan of the nodes (masked_walk.h).
    const uint64_t walk_steps =
        available_points == 0
            ? std::min<uint64_t>(points, 2 * std::max<uint64_t>(64, ref.num_nodes()))
            : (points + available_points - 1) / available_points;
    c.masked_stride = std::max<size_t>(1, c.probes.size() * walk_steps / kMaskedWalkBudget);
  }

  CheckShape(c);
  CheckPointSequence(c);
  CheckShares(c);
  CheckStats(c);
  CheckOwnershipAndLosers(c);
  if (mask != nullptr) {
    CheckNodeMask(c);
    CheckBoundedLoadCapacity(c);
  }
  ForEachTarget(
      [&](const std::string& target) {
        c.target = target;
        for (const LookupCheck check : kPerTargetChecks) check(c);
      },
      description);
  return c.checks;
}

}  // namespace chash::fuzz
