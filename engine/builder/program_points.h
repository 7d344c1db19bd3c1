// What the other programs' point generators share, and each program's part
// of flavor_points.h's calls: one file a program (haproxy_points.cc,
// ketama_points.cc, varnish_points.cc, envoy_points.cc), dispatched by
// flavor_points.cc. Private to engine/builder/.
#ifndef CHASH_ENGINE_BUILDER_PROGRAM_POINTS_H_
#define CHASH_ENGINE_BUILDER_PROGRAM_POINTS_H_

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "builder/flavor_points.h"
#include "builder/parallel.h"
#include "chash/ring.h"

namespace chash::internal {

struct RingState;

namespace program {

inline Status Bad(StatusCode code, std::string message) {
  return Status(code, std::move(message));
}

// Text the program prints back or hashes: 1..4,096 bytes; `strict` refuses
// whitespace and control bytes (names that go on a command line or in a
// servers file), `no_nul` refuses NUL only (a C string ends there). The
// problem in words, or nullptr.
const char* OpaqueProblem(std::string_view text, bool strict, bool no_nul);

// kBadAddress naming the address (its first 64 bytes) and why.
Status BadAddress(std::string_view text, std::string_view why);

// A node whose address the program takes as opaque text: written and
// hashed as given.
Result<NodeAddress> OpaqueNode(std::string_view address, bool strict, bool no_nul);

uint32_t WeightedNodes(const std::vector<NodeInfo>& nodes);
uint64_t TotalWeight(const std::vector<NodeInfo>& nodes);

// Writes the decimal digits of `value` at `out` (20 bytes of room); their
// count.
inline size_t WriteDecimal(char* out, uint64_t value) noexcept {
  const auto result = std::to_chars(out, out + 20, value);
  return static_cast<size_t>(result.ptr - out);
}

// Splits the nodes into `threads` runs of about equal point counts and runs
// generate(node, offset) for every node of positive count, `offset` the
// index of its first point (the nodes' points follow one another in order).
// `generate` runs as ParallelFor's work: it must not allocate nor throw.
template <typename Generate>
void GenerateEveryNode(const PointCounts& counts, unsigned threads, Generate&& generate) {
  const size_t n = counts.per_node.size();
  std::vector<uint64_t> offset(n + 1, 0);
  for (size_t i = 0; i < n; ++i) offset[i + 1] = offset[i] + counts.per_node[i];
  threads =
      std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(std::max<size_t>(n, 1))));
  std::vector<size_t> first(threads + 1, n);
  first[0] = 0;
  for (size_t i = 0, t = 1; i < n && t < threads; ++i) {
    if (offset[i + 1] * threads >= counts.total * t) first[t++] = i + 1;
  }
  for (unsigned t = 1; t <= threads; ++t) first[t] = std::max(first[t], first[t - 1]);
  ParallelFor(threads, threads, [&](unsigned t) {
    for (size_t i = first[t]; i < first[t + 1]; ++i) {
      if (counts.per_node[i] > 0) generate(static_cast<uint32_t>(i), offset[i]);
    }
  });
}

// Each node's point-string buffer: its host, the separator, room for a
// number. Made before the points are generated, because the generation runs
// as ParallelFor's work, which must not allocate (nor throw). Throws
// std::bad_alloc.
std::vector<std::string> PointPrefixes(const std::vector<NodeInfo>& nodes,
                                       std::string_view separator);

// The string a point is hashed from: the node's prefix then the decimal of
// k, written in place in the prefix's buffer (PointPrefixes' room).
class PointString {
 public:
  explicit PointString(std::string& prefix) noexcept
      : text_(prefix.data()), prefix_size_(prefix.size()) {}
  std::string_view With(uint64_t k) noexcept {
    const size_t digits = WriteDecimal(text_ + prefix_size_, k);
    return std::string_view(text_, prefix_size_ + digits);
  }

 private:
  char* text_;
  size_t prefix_size_;
};

// ---- One program each: its options' checks, how it reads a node, its key
// hash, its point counts and its points. The 32-bit generators write each
// point as a PointSortKey (ties in configuration order) at keys[offset].

// haproxy_points.cc
Status ValidateHaproxyOptions(const HaproxyOptions& options);
Result<NodeAddress> ParseHaproxyNode(std::string_view address, uint32_t weight,
                                     const NodeOptions& node);
KeyHasher HaproxyKeyHasher(const HaproxyOptions& options, uint32_t weighted_nodes) noexcept;
void CountHaproxyPoints(const std::vector<NodeInfo>& nodes, PointCounts& counts);
void GenerateHaproxyPoints(const HaproxyOptions& options, const std::vector<NodeInfo>& nodes,
                           const PointCounts& counts, unsigned threads, uint64_t* keys);

// ketama_points.cc
Status ValidateKetamaOptions(const KetamaOptions& options);
Result<NodeAddress> ParseKetamaNode(const RingOptions& options, std::string_view address,
                                    uint32_t weight, const NodeOptions& node);
KeyHasher KetamaKeyHasher(const KetamaOptions& options, uint32_t weighted_nodes) noexcept;
void CountKetamaPoints(const KetamaOptions& options, const std::vector<NodeInfo>& nodes,
                       PointCounts& counts);
// twemproxy cuts a point label at 85 bytes: kBadAddress for a node whose
// last label is longer.
Status CheckTwemproxyLabels(const std::vector<NodeInfo>& nodes, const PointCounts& counts);
void GenerateKetamaPoints(const KetamaOptions& options, const std::vector<NodeInfo>& nodes,
                          const PointCounts& counts, unsigned threads, uint64_t* keys);

// varnish_points.cc
Status ValidateVarnishOptions(const VarnishOptions& options);
void CountVarnishPoints(const VarnishOptions& options, const std::vector<NodeInfo>& nodes,
                        PointCounts& counts);
void GenerateVarnishPoints(const std::vector<NodeInfo>& nodes, const PointCounts& counts,
                           unsigned threads, uint64_t* keys);
// Whether Varnish looks a key up by bisection (two points, or two equal
// hashes) rather than its fast path (RingState::varnish_bisection).
bool VarnishBisects(const RingState& state) noexcept;

// envoy_points.cc
Status ValidateEnvoyRingOptions(const EnvoyRingOptions& options);
Status ValidateMaglevOptions(const MaglevOptions& options);
Status BuildEnvoyRing(const RingOptions& options, RingState& state, const PointCounts& counts,
                      unsigned threads);
Status BuildMaglevTable(const RingOptions& options, RingState& state);

}  // namespace program
}  // namespace chash::internal

#endif  // CHASH_ENGINE_BUILDER_PROGRAM_POINTS_H_
