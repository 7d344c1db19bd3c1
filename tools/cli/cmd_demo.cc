// chash demo: Cloudflare's fleet-scale scenario (2,048 servers x weight 625) on a built-in fleet.
//
// 2,048 servers of weight 625 (disk-proportional weights, as Cloudflare's
// Pingora Backend Router had): the v1 ring at 160 points per weight unit
// (204,800,000 points) beside the v2 ring at multiple 16 (20,480,000 points).
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>

#include "cli_common.h"
#include "commands.h"
#include "progress.h"

namespace chash::cli {
namespace {

std::string MiB(uint64_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

void Row(const char* label, const std::string& v1, const std::string& v2) {
  std::printf("  %-34s %22s %22s\n", label, v1.c_str(), v2.c_str());
}

std::string Format(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

}  // namespace

int RunDemo(const Args& args) {
  Result<Options> parsed = Options::Parse(args, {"nodes", "weight", "multiple"}, {});
  if (!parsed.ok()) return Fail("demo", parsed.status().message());
  const Options& options = parsed.value();
  Result<FleetShape> shape = FleetShapeFrom(options);
  if (!shape.ok()) return Fail("demo", shape.status().message());
  const FleetShape& fleet = shape.value();

  const uint32_t n = fleet.nodes, w = fleet.weight, m = fleet.multiple;
  std::printf("chash demo: %s servers x weight %s (10.0.x.y:443), built-in fleet\n",
              WithCommas(n).c_str(), WithCommas(w).c_str());
  std::printf("  v1 = pingora-ketama v1 / nginx point chain, 160 points per weight unit\n");
  std::printf("  v2 = pingora-ketama v2, multiple %u (address-order tie-break)\n\n", m);

  std::printf("building v2 ring...\n");
  Result<Ring> v2 = BuildFleet(fleet, Flavor::kPingoraV2, m);
  if (!v2.ok()) return Fail("demo", v2.status().message());
  std::printf("building v1 ring...\n");
  Result<Ring> v1 = BuildFleet(fleet, Flavor::kPingoraV1, kDefaultPointMultiple);
  if (!v1.ok()) return Fail("demo", v1.status().message());
  const uint64_t peak_rss = PeakRssBytes();
  std::printf("measuring shares (exact, one ring scan each)...\n\n");
  std::optional<ProgressPhase> progress;
  progress.emplace("exact shares of " + WithCommas(v1.value().num_points()) + " + " +
                   WithCommas(v2.value().num_points()) + " points");
  const RingStats s1 = ComputeRingStats(v1.value());
  const RingStats s2 = ComputeRingStats(v2.value());
  progress.reset();

  Row("", "v1 (160/weight)", "v2 (" + std::to_string(m) + "/weight)");
  Row("points generated", WithCommas(s1.points_generated), WithCommas(s2.points_generated));
  Row("points kept", WithCommas(s1.points), WithCommas(s2.points));
  Row("collisions dropped", WithCommas(s1.collisions), WithCommas(s2.collisions));
  Row("collisions, % of generated",
      Format("%.3f%%", 100.0 * s1.collisions / std::max<uint64_t>(1, s1.points_generated)),
      Format("%.3f%%", 100.0 * s2.collisions / std::max<uint64_t>(1, s2.points_generated)));
  Row("chash columns (measured)",
      MiB(s1.column_bytes) + Format(" %.2f B/pt", s1.bytes_per_point),
      MiB(s2.column_bytes) + Format(" %.2f B/pt", s2.bytes_per_point));
  Row("pingora v1 points, 8 B (computed)", MiB(8 * s1.points), MiB(8 * s2.points));
  Row("nginx points, 16 B (computed)", MiB(16 * s1.points), MiB(16 * s2.points));
  Row("CV predicted sqrt((N-1)/(Nk+1))", Format("%.4f%%", 100 * s1.cv_predicted),
      Format("%.4f%%", 100 * s2.cv_predicted));
  Row("CV measured (exact shares)", Format("%.4f%%", 100 * s1.cv_measured),
      Format("%.4f%%", 100 * s2.cv_measured));
  Row("max / min share ratio",
      Format("%.4f", s1.max_share_ratio) + Format(" / %.4f", s1.min_share_ratio),
      Format("%.4f", s2.max_share_ratio) + Format(" / %.4f", s2.min_share_ratio));
  Row("build time", Format("%.2f s", v1.value().build_seconds()),
      Format("%.2f s", v2.value().build_seconds()));
  std::printf("\n  peak RSS with both rings built: %s (%.2f B per generated point)\n\n",
              MiB(peak_rss).c_str(),
              static_cast<double>(peak_rss) /
                  static_cast<double>(s1.points_generated + s2.points_generated));

  std::printf("a few keys, routed by both rings:\n");
  for (const char* key : {"/index.html", "/img/logo.png", "/video/seg-00042.ts",
                          "/api/v1/users/1234", "/static/app.js"}) {
    const Ring& r1 = v1.value();
    const Ring& r2 = v2.value();
    const std::string& a1 = r1.node(r1.FindNode(key)).address.written;
    const std::string& a2 = r2.node(r2.FindNode(key)).address.written;
    std::printf("  %-24s v1 -> %-16s v2 -> %-16s %s\n", key, a1.c_str(), a2.c_str(),
                a1 == a2 ? "same" : "moves");
  }
  // Sampled, and labelled so: the exact moved fraction is `chash diff`.
  std::mt19937 rng(42);
  constexpr uint32_t kSamples = 1'000'000;
  uint32_t same = 0;
  for (uint32_t i = 0; i < kSamples; ++i) {
    const uint32_t hash = static_cast<uint32_t>(rng());
    same += v1.value().FindNodeByHash(hash) == v2.value().FindNodeByHash(hash);
  }
  std::printf("\n%.2f%% of 1,000,000 random key hashes route to the same server on both "
              "rings:\nswitching rings at once would move the rest, so migrate gradually.\n",
              100.0 * same / kSamples);
  return 0;
}

}  // namespace chash::cli
