// chash stats: what a ring costs and how evenly it spreads keys.
#include <cstdio>

#include "cli_common.h"
#include "commands.h"

namespace chash::cli {

int RunStats(const Args& args) {
  Result<Options> options = Options::Parse(args, {"servers", "mode", "multiple"}, {"json"});
  if (!options.ok()) return Fail("stats", options.status().message());
  Result<Ring> ring = LoadRingFromOptions(options.value());
  if (!ring.ok()) return Fail("stats", ring.status().message());
  const RingStats stats = ComputeRingStats(ring.value());
  // Identity (include/chash/identity.h): the configuration, the points as
  // held (one more O(points) pass), and the backend snapshot.
  const std::string fingerprint = RingFingerprint(ring.value()).Hex();
  const std::string points_digest = PointsDigest(ring.value()).Hex();
  const std::string backends = BackendFingerprint(ring.value()).Hex();
  if (options.value().Has("json")) {
    std::string json = RingStatsJson(stats);
    json.pop_back();  // '}'
    json += ",\"fingerprint\":\"" + fingerprint + "\",\"points_digest\":\"" + points_digest +
            "\",\"backend_fingerprint\":\"" + backends + "\"}";
    std::printf("%s\n", json.c_str());
    return 0;
  }
  std::printf("mode              %s", std::string(FlavorName(ring.value().flavor())).c_str());
  if (ring.value().flavor() == Flavor::kPingoraV2) {
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
  std::printf("build time        %.1f ms\n", stats.build_ms);
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
