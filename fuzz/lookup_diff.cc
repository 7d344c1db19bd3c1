#include "lookup_diff.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>

#include "chash/crc32.h"
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
  // Two columns (u32 hash, u16 node) of points + 1 slots, each rounded up to
  // a 64-byte line; nothing for an empty ring.
  const uint64_t min_columns = points == 0 ? 0 : 6 * (points + 1);
  const bool memory_ok = stats.column_bytes == memory.column_bytes &&
                         memory.column_bytes >= min_columns &&
                         memory.column_bytes <= min_columns + 128 && memory.other_bytes > 0 &&
                         c.ring.build_seconds() >= 0;
  const bool shares_ok = std::isfinite(stats.cv_measured) && std::isfinite(stats.cv_predicted) &&
                         stats.cv_measured >= 0 && stats.min_share_ratio <= stats.max_share_ratio;
  const std::string json = RingStatsJson(stats);
  const bool json_ok = json.find("\"points\":" + std::to_string(points) + ",") != std::string::npos;
  if (!counts_ok || !memory_ok || (points > 0 && !shares_ok) || !json_ok) {
    Fail("ComputeRingStats disagrees with the ring: " + json + " (memory_usage columns " +
             std::to_string(memory.column_bytes) + ", other " + std::to_string(memory.other_bytes) +
             ")",
         c.description);
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

// Every lookup family of the public API, compared on each target. A new
// lookup (e.g. masks over nodes) is checked by adding its function here.
constexpr LookupCheck kPerTargetChecks[] = {
    CheckSingleLookups,
    CheckBatchLookups,
    CheckFailoverWalks,
    CheckDistinctWalks,
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
                                  const std::string& description) {
  DiffContext c{ring, ref, keys, description, Probes(ref, extra_hashes), {}, {}, {}, {}, "", 0};
  for (const uint32_t probe : c.probes) c.expected.push_back(ref.FindNodeByHash(probe));
  for (const std::string& key : keys) c.expected_key.push_back(ref.FindNode(key));
  const size_t stride = std::max<size_t>(1, c.probes.size() / kDistinctWalks);
  for (size_t i = 0; i < c.probes.size(); i += stride) c.distinct_from.push_back(c.probes[i]);
  if (!keys.empty()) c.distinct_from.push_back(Crc32(keys[0]));
  for (const uint32_t hash : c.distinct_from) c.distinct_expected.push_back(ref.DistinctWalk(hash));

  CheckShape(c);
  CheckPointSequence(c);
  CheckShares(c);
  CheckStats(c);
  ForEachTarget(
      [&](const std::string& target) {
        c.target = target;
        for (const LookupCheck check : kPerTargetChecks) check(c);
      },
      description);
  return c.checks;
}

}  // namespace chash::fuzz
