// chash stats: what a ring costs and how evenly it spreads keys.
#include <cstdio>
#include <optional>

#include "cli_common.h"
#include "commands.h"
#include "plots.h"
#include "progress.h"
#include "svg.h"

namespace chash::cli {
namespace {

// Each server's exact share (one more O(points) scan), with the ratio
// computed as ComputeRingStats does, so its max and min are the stats'.
std::vector<NodeShare> Shares(const Ring& ring) {
  const std::vector<uint64_t> hashes = NodeHashShares(ring);
  double total_weight = 0;
  for (uint32_t id = 0; id < ring.num_nodes(); ++id) total_weight += ring.node(id).weight;
  std::vector<NodeShare> shares(ring.num_nodes());
  for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
    const uint32_t weight = ring.node(id).weight;
    const double share = static_cast<double>(hashes[id]) / 4294967296.0;
    shares[id] = {.node = id,
                  .address = ring.node(id).address.written,
                  .weight = weight,
                  .hashes = hashes[id],
                  .ratio = weight == 0 ? 0 : share / (weight / total_weight)};
  }
  return shares;
}

// "shares":[{"node","address","weight","hashes","ratio"}], ratio null for
// drained servers.
std::string SharesJson(const std::vector<NodeShare>& shares) {
  std::string json = "\"shares\":[";
  for (const NodeShare& share : shares) {
    json += (share.node ? ",{" : "{") + std::string("\"node\":") + std::to_string(share.node) +
            ",\"address\":" + JsonString(share.address) +
            ",\"weight\":" + std::to_string(share.weight) +
            ",\"hashes\":" + std::to_string(share.hashes) +
            ",\"ratio\":" + (share.weight == 0 ? std::string("null") : JsonNumber(share.ratio)) +
            "}";
  }
  return json + "]";
}

}  // namespace

int RunStats(const Args& args) {
  Result<Options> options = ParseRingCommandOptions(args, {"plot"}, {"json"});
  if (!options.ok()) return Fail("stats", options.status().message());
  Result<Ring> ring = LoadRingFromOptions(options.value());
  if (!ring.ok()) return Fail("stats", ring.status().message());
  if (ring.value().empty()) {
    return Fail("stats", "the ring has no points (no servers, or every weight is 0): no cost or "
                         "evenness to report");
  }
  const double build_ms = ring.value().build_seconds() * 1e3;
  std::optional<ProgressPhase> progress;
  progress.emplace("stats: exact shares and fingerprints of " +
                   WithCommas(ring.value().num_points()) + " points");
  const RingStats stats = ComputeRingStats(ring.value());
  // Identity (include/chash/identity.h): the configuration, the points as
  // held (one more O(points) pass), and the backend snapshot.
  const std::string fingerprint = RingFingerprint(ring.value()).Hex();
  const std::string points_digest = PointsDigest(ring.value()).Hex();
  const std::string backends = BackendFingerprint(ring.value()).Hex();
  const bool per_server = options.value().Has("json") || options.value().Has("plot");
  const std::vector<NodeShare> shares =
      per_server ? Shares(ring.value()) : std::vector<NodeShare>{};
  progress.reset();
  if (const auto plot = options.value().Get("plot")) {
    // The values drawn, without build_ms, so the picture is deterministic.
    const std::string data = "{\"cv_predicted\":" + JsonNumber(stats.cv_predicted) +
                             ",\"cv_measured\":" + JsonNumber(stats.cv_measured) + "," +
                             SharesJson(shares) + "}";
    std::string label = std::string(FlavorName(ring.value().flavor())) + " ring, " +
                        std::to_string(ring.value().point_multiple()) + " points per weight, " +
                        WithCommas(stats.points) + " points";
    const Status written =
        WritePlot(*plot, StatsSvg(stats, shares, label, data, svg::CommandLine("stats", args)));
    if (!written.ok()) return Fail("stats", written.message());
  }
  if (options.value().Has("json")) {
    Result<std::string> stats_json = RingStatsJson(stats);
    if (!stats_json.ok()) return Fail("stats", stats_json.status().message());
    std::string json = std::move(stats_json).value();
    json.pop_back();  // '}'
    json += ",\"build_ms\":" + JsonNumber(build_ms);
    json += ",\"fingerprint\":\"" + fingerprint + "\",\"points_digest\":\"" + points_digest +
            "\",\"backend_fingerprint\":\"" + backends + "\"," + SharesJson(shares) + "}";
    std::printf("%s\n", json.c_str());
    return 0;
  }
  std::printf("mode              %s", std::string(FlavorName(ring.value().flavor())).c_str());
  if (ring.value().flavor() == Flavor::kPingoraV2 ||
      ring.value().point_multiple() != kDefaultPointMultiple) {
    std::printf(" (multiple %u)", ring.value().point_multiple());
  }
  std::printf("\n");
  std::printf("nodes             %s\n", WithCommas(stats.nodes).c_str());
  std::printf("points generated  %s\n", WithCommas(stats.points_generated).c_str());
  std::printf("points kept       %s\n", WithCommas(stats.points).c_str());
  std::printf("collisions        %s\n", WithCommas(stats.collisions).c_str());
  std::printf("column bytes      %s\n", WithCommas(stats.column_bytes).c_str());
  std::printf("other bytes       %s\n", WithCommas(stats.other_bytes).c_str());
  std::printf("index bytes       %s\n", WithCommas(stats.index_bytes).c_str());
  std::printf("collision table   %s bytes (dropped points kept for masked lookups)\n",
              WithCommas(stats.collision_table_bytes).c_str());
  std::printf("bytes per point   %.2f\n", stats.bytes_per_point);
  std::printf("build time        %.1f ms\n", build_ms);
  std::printf("CV predicted      %.4f%%\n", stats.cv_predicted * 100);
  std::printf("CV measured       %.4f%%\n", stats.cv_measured * 100);
  std::printf("share ratio       max %.4f  min %.4f\n", stats.max_share_ratio,
              stats.min_share_ratio);
  std::printf("fingerprint       %s\n", fingerprint.c_str());
  std::printf("points digest     %s\n", points_digest.c_str());
  std::printf("backends          %s\n", backends.c_str());
  return 0;
}

}  // namespace chash::cli
