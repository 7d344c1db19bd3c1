// `chash plan` on another program's ring (haproxy, ketama-md5,
// varnish-shard, envoy-ring, envoy-maglev): the program's own setting that
// buys evenness, tried value by value on real rings of the operator's
// fleet, and the smallest value that meets the CV target.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "chash/diff.h"
#include "flavors.h"  // engine/: CHASH_CRC32_FLAVOR_CASES
#include "builder/flavor_points.h"  // engine/: IsPrime
#include "chash/stats.h"
#include "cli_common.h"
#include "commands.h"
#include "plots.h"
#include "progress.h"
#include "svg.h"

namespace chash::cli {
namespace {

// What plan varies on a flavor's ring.
struct Setting {
  std::string name;   // as the program's config spells it
  std::string apply;  // how an operator sets value V, with V where it goes
  std::vector<uint64_t> values;
};

constexpr uint32_t kHaproxyMaxWeight = 256;  // HAProxy's `weight` bound

uint64_t NextPrime(uint64_t n) {
  while (!internal::IsPrime(n)) ++n;
  return n;
}

// The values tried, from the ring's current options and servers: every one
// a program accepts (HAProxy's weights stay within 256, Envoy's minimum
// within its maximum, Maglev's table at least the hosts and prime).
Result<Setting> SettingOf(const RingOptions& ring, const ServersInput& input) {
  switch (ring.flavor) {
    case Flavor::kHaproxy: {
      uint32_t heaviest = 0;
      for (const ProgramServer& server : input.program)
        heaviest = std::max(heaviest, server.weight);
      Setting setting{"weight scale", "every server's weight x V (at most 256)", {}};
      for (uint64_t scale = 1; heaviest > 0 && scale * heaviest <= kHaproxyMaxWeight; scale *= 2) {
        setting.values.push_back(scale);
      }
      return setting;
    }
    case Flavor::kKetamaMd5: {
      Setting setting{"pingora-v2 multiple",
                      "libmemcached's 160 points a server are fixed: a pingora-v2 ring with "
                      "--multiple V over the same servers",
                      {}};
      for (const uint32_t k : DefaultPlanMultiples()) setting.values.push_back(k);
      return setting;
    }
    case Flavor::kVarnishShard:
      return Setting{"replicas",
                     "shard director .replicas = V (vmod_directors)",
                     {8, 16, 32, 67, 128, 256, 512, 1024}};
    case Flavor::kEnvoyRing: {
      Setting setting{"minimum_ring_size", "ring_hash_lb_config.minimum_ring_size: V", {}};
      for (uint64_t size = 1024; size <= ring.envoy_ring.maximum_ring_size; size *= 2) {
        setting.values.push_back(size);
      }
      return setting;
    }
    case Flavor::kEnvoyMaglev: {
      Setting setting{"table_size", "maglev_lb_config.table_size: V (a prime)", {}};
      for (uint64_t size = 1u << 16; size <= 4194304; size *= 2) {
        const uint64_t prime = NextPrime(size + 1);
        if (prime >= input.program.size()) setting.values.push_back(prime);
      }
      return setting;
    }
    CHASH_CRC32_FLAVOR_CASES:
      break;
  }
  return Status(StatusCode::kBadArgument, "not another program's flavor");
}

// The candidate ring of `value`.
Result<Ring> BuildCandidate(const RingOptions& current, const ServersInput& input, uint64_t value) {
  RingOptions options = current;
  switch (current.flavor) {
    case Flavor::kHaproxy: {
      ServersInput scaled = input;
      for (ProgramServer& server : scaled.program) {
        server.weight = static_cast<uint32_t>(server.weight * value);
      }
      return BuildServersInput(scaled, options);
    }
    case Flavor::kKetamaMd5:
      return BuildRingFromServers(
          input.servers,
          {.flavor = Flavor::kPingoraV2, .point_multiple = static_cast<uint32_t>(value)},
          input.name);
    case Flavor::kVarnishShard:
      options.varnish.replicas = static_cast<uint32_t>(value);
      break;
    case Flavor::kEnvoyRing:
      options.envoy_ring.minimum_ring_size = value;
      break;
    case Flavor::kEnvoyMaglev:
      options.maglev.table_size = value;
      break;
    CHASH_CRC32_FLAVOR_CASES:
      break;
  }
  return BuildServersInput(input, options);
}

// What chash spends on a ring's points: its columns, search index and
// collision table (plan.h's bytes_per_ring), from its stats.
uint64_t ChashBytes(const RingStats& stats) {
  return stats.column_bytes + stats.index_bytes + stats.collision_table_bytes;
}

struct Row {
  uint64_t value = 0;
  RingStats stats;
  double moved_fraction = 0;
  bool moved_exact = true;
};

std::string RowJson(const Row& row) {
  return "{\"value\":" + std::to_string(row.value) +
         ",\"points\":" + std::to_string(row.stats.points) +
         ",\"cv_measured\":" + JsonNumber(row.stats.cv_measured) +
         ",\"max_share_ratio\":" + JsonNumber(row.stats.max_share_ratio) +
         ",\"min_share_ratio\":" + JsonNumber(row.stats.min_share_ratio) +
         ",\"program_bytes\":" + std::to_string(row.stats.program_bytes) +
         ",\"chash_bytes\":" + std::to_string(ChashBytes(row.stats)) +
         ",\"moved_fraction\":" + JsonNumber(row.moved_fraction) +
         ",\"moved_exact\":" + (row.moved_exact ? "true" : "false") + "}";
}

}  // namespace

int RunProgramPlan(const Args& args, const Options& options) {
  for (const char* name : {"multiples", "rings", "max-points"}) {
    if (options.Has(name)) {
      return Fail("plan", std::string("--") + name +
                              " plans pingora-v2 multiples; on another program's ring plan "
                              "tries that program's own setting");
    }
  }
  double cv_target = 0.02;
  if (const auto text = options.Get("cv-target")) {
    Result<double> target = ParseFraction("cv-target", *text);
    if (!target.ok() || target.value() == 0) {
      return Fail("plan",
                  "--cv-target must be a fraction in (0, 1] or a percentage, got '" + *text + "'");
    }
    cv_target = target.value();
  }
  ServersInput input;
  Result<Ring> current_ring = LoadRingFromOptions(options, &input);
  if (!current_ring.ok()) return Fail("plan", current_ring.status().message());
  const Ring& current = current_ring.value();
  if (current.empty()) {
    return Fail("plan", input.name + ": no server with a weight above 0: nothing to plan");
  }
  const RingOptions& current_options = current.options();
  Result<Setting> setting = SettingOf(current_options, input);
  if (!setting.ok()) return Fail("plan", setting.status().message());
  const RingStats current_stats = ComputeRingStats(current);

  std::vector<Row> rows;
  std::optional<ProgressPhase> progress;
  if (ProgressEnabled()) progress.emplace("plan: building each candidate");
  for (size_t i = 0; i < setting.value().values.size(); ++i) {
    const uint64_t value = setting.value().values[i];
    if (progress) {
      progress->SetDetail(setting.value().name + " " + std::to_string(value));
      progress->SetFraction(static_cast<double>(i) /
                            static_cast<double>(setting.value().values.size()));
    }
    Result<Ring> candidate = BuildCandidate(current_options, input, value);
    if (!candidate.ok()) return Fail("plan", candidate.status().message());
    Result<RingDiff> diff = DiffRings(current, candidate.value());
    if (!diff.ok()) return Fail("plan", diff.status().message());
    rows.push_back({.value = value,
                    .stats = ComputeRingStats(candidate.value()),
                    .moved_fraction = diff.value().moved_fraction(),
                    .moved_exact = diff.value().exact});
  }
  progress.reset();
  std::optional<uint64_t> recommended;
  for (const Row& row : rows) {
    if (row.stats.cv_measured <= cv_target) {
      recommended = row.value;
      break;
    }
  }

  const std::string flavor(FlavorName(current_options.flavor));
  const Row current_row{.value = 0, .stats = current_stats};
  if (options.Has("json") || options.Has("plot")) {
    std::string json = "{\"servers\":" + JsonString(input.name) +
                       ",\"flavor\":" + JsonString(flavor) +
                       ",\"setting\":" + JsonString(setting.value().name) +
                       ",\"cv_target\":" + JsonNumber(cv_target) +
                       ",\"current\":" + RowJson(current_row) + ",\"candidates\":[";
    for (size_t i = 0; i < rows.size(); ++i) {
      if (i > 0) json += ',';
      json += RowJson(rows[i]);
    }
    json +=
        "],\"recommended\":" + (recommended ? std::to_string(*recommended) : std::string("null")) +
        "}";
    if (const auto plot = options.Get("plot")) {
      std::vector<SettingPoint> points;
      for (const Row& row : rows) {
        points.push_back(
            {row.value, row.stats.cv_measured, row.stats.program_bytes, ChashBytes(row.stats)});
      }
      const Status written = WritePlot(
          *plot, SettingPlanSvg(flavor, setting.value().name, input.name, points, cv_target,
                                recommended, json, svg::CommandLine("plan", args)));
      if (!written.ok()) return Fail("plan", written.message());
    }
    if (options.Has("json")) {
      std::printf("%s\n", json.c_str());
      return 0;
    }
  }

  std::printf("servers   %s: %s nodes, %s ring\n", input.name.c_str(),
              WithCommas(current_stats.nodes).c_str(), flavor.c_str());
  std::printf(
      "current   %s points, CV measured %s, share / weight share %.4f..%.4f, "
      "%s bytes in the program, %s in chash\n",
      WithCommas(current_stats.points).c_str(), Percent(current_stats.cv_measured, 4).c_str(),
      current_stats.min_share_ratio, current_stats.max_share_ratio,
      WithCommas(current_stats.program_bytes).c_str(), WithCommas(ChashBytes(current_stats)).c_str());
  std::printf("target    CV <= %s; candidates: %s (%s)\n\n", Percent(cv_target, 4).c_str(),
              setting.value().name.c_str(), setting.value().apply.c_str());
  std::printf("%10s %12s %12s %9s %9s %15s %13s %10s\n", "V", "points", "CV measured", "max r",
              "min r", "program bytes", "chash bytes", "moved");
  for (const Row& row : rows) {
    std::string moved = row.moved_exact ? "" : "~";
    moved += Percent(row.moved_fraction, 4);
    const std::string program_bytes =
        row.stats.program_bytes > 0 ? WithCommas(row.stats.program_bytes) : "-";
    std::printf("%10llu %12s %12s %9.4f %9.4f %15s %13s %10s%s\n",
                static_cast<unsigned long long>(row.value), WithCommas(row.stats.points).c_str(),
                Percent(row.stats.cv_measured, 4).c_str(), row.stats.max_share_ratio,
                row.stats.min_share_ratio, program_bytes.c_str(),
                WithCommas(ChashBytes(row.stats)).c_str(), moved.c_str(),
                recommended == row.value ? "  <-" : "");
  }
  if (std::any_of(rows.begin(), rows.end(), [](const Row& row) { return !row.moved_exact; })) {
    std::printf(
        "\n~ the rings hash keys differently: the share moved is expected, each key's "
        "two answers taken as independent\n");
  }
  if (recommended) {
    std::printf(
        "\nrecommended: %s = %llu, the smallest value whose measured CV is within %s\n"
        "  (%s); the keys that move: migrate gradually (chash route --rollout)\n",
        setting.value().name.c_str(), static_cast<unsigned long long>(*recommended),
        Percent(cv_target, 4).c_str(), setting.value().apply.c_str());
  } else {
    std::printf("\nno value tried meets CV <= %s: accept a larger target\n",
                Percent(cv_target, 4).c_str());
  }
  return 0;
}

}  // namespace chash::cli
