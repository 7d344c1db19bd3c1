// chash plan: for a range of point multiples, what balance each buys and
// what it costs, on the user's own servers (include/chash/plan.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "cli_common.h"
#include "commands.h"
#include "plots.h"
#include "progress.h"
#include "svg.h"

namespace chash::cli {
namespace {

std::string Percent(double fraction) { return cli::Percent(fraction, 4); }

Result<std::vector<uint32_t>> ParseMultiples(const std::string& text) {
  std::vector<uint32_t> multiples;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    char* end = nullptr;
    const unsigned long long value = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || end != item.c_str() + item.size() || value == 0 || value > UINT32_MAX) {
      return Status(
          StatusCode::kBadArgument,
          "--multiples must be a comma-separated list of integers >= 1, got '" + text + "'");
    }
    multiples.push_back(static_cast<uint32_t>(value));
    start = comma + 1;
  }
  return multiples;
}

}  // namespace

int RunPlan(const Args& args) {
  Result<Options> parsed = ParseRingCommandOptions(
      args, {"cv-target", "rings", "multiples", "max-points", "plot"}, {"json"});
  if (!parsed.ok()) return Fail("plan", parsed.status().message());
  const Options& options = parsed.value();
  if (options.Has("ring")) {
    return Fail("plan", "plan builds rings from servers: give --servers, --nginx-conf or a "
                        "program's config, not a snapshot");
  }
  const std::optional<std::string> flavor = options.Get("flavor");
  Result<Flavor> named = ParseFlavor(flavor.value_or("nginx"));
  if (!named.ok()) return Fail("plan", named.status().message());
  if (IsProgramFlavor(named.value()) || options.Has("haproxy-cfg") ||
      options.Has("nutcracker-yml") || options.Has("envoy-cluster")) {
    return RunProgramPlan(args, options);
  }
  Result<ServersInput> input = ReadServersInput(options);
  if (!input.ok()) return Fail("plan", input.status().message());
  const std::optional<std::string> path = input.value().name;
  Result<RingOptions> current = RingOptionsFrom(options, "flavor", "multiple");
  if (!current.ok()) return Fail("plan", current.status().message());
  PlanOptions plan_options;
  if (const auto text = options.Get("cv-target")) {
    Result<double> target = ParseFraction("cv-target", *text);
    if (!target.ok() || target.value() == 0) {
      return Fail("plan",
                  "--cv-target must be a fraction in (0, 1] or a percentage, got '" + *text + "'");
    }
    plan_options.cv_target = target.value();
  }
  Result<uint64_t> rings = options.GetUint("rings", 1, 1, 1u << 20);
  if (!rings.ok()) return Fail("plan", rings.status().message());
  plan_options.rings = static_cast<uint32_t>(rings.value());
  Result<uint64_t> max_points =
      options.GetUint("max-points", plan_options.max_points, 1, kHardMaxPoints);
  if (!max_points.ok()) return Fail("plan", max_points.status().message());
  plan_options.max_points = max_points.value();
  if (const auto text = options.Get("multiples")) {
    Result<std::vector<uint32_t>> multiples = ParseMultiples(*text);
    if (!multiples.ok()) return Fail("plan", multiples.status().message());
    plan_options.multiples = multiples.value();
  }
  const Result<std::vector<ServerEntry>> servers = input.value().servers;
  if (std::none_of(servers.value().begin(), servers.value().end(),
                   [](const ServerEntry& entry) { return entry.weight > 0; })) {
    return Fail("plan", *path + ": no server with a weight above 0: nothing to plan");
  }
  if (!input.value().where.empty()) {  // an nginx config: errors name each server's file
    Result<Ring> current_ring = BuildServersInput(input.value(), current.value());
    if (!current_ring.ok()) return Fail("plan", current_ring.status().message());
  }
  std::optional<ProgressPhase> progress;
  if (ProgressEnabled()) {
    progress.emplace("plan: building the current ring and each candidate");
    plan_options.on_progress = [&progress](size_t step, size_t steps, uint32_t multiple) {
      progress->SetDetail(multiple == 0 ? "current ring" : "K = " + std::to_string(multiple));
      progress->SetFraction(static_cast<double>(step) / static_cast<double>(steps));
    };
  }
  Result<Plan> result = PlanPointMultiples(servers.value(), current.value(), plan_options, *path);
  progress.reset();
  if (!result.ok()) return Fail("plan", result.status().message());
  const Plan& plan = result.value();
  const uint64_t r = plan.rings;
  const std::string current_name = std::string(FlavorName(current.value().flavor));

  if (options.Has("json") || options.Has("plot")) {
    std::string json =
        "{\"servers\":" + JsonString(*path) + ",\"nodes\":" + std::to_string(plan.current.nodes) +
        ",\"cv_target\":" + JsonNumber(plan.cv_target) + ",\"rings\":" + std::to_string(r) +
        ",\"mask_bytes\":" + std::to_string(plan.mask_bytes) +
        ",\"current\":{\"flavor\":" + JsonString(current_name) +
        ",\"mode\":" + JsonString(current_name) +
        ",\"multiple\":" + std::to_string(current.value().point_multiple) +
        ",\"points\":" + std::to_string(plan.current.points) +
        ",\"collisions\":" + std::to_string(plan.current.collisions) +
        ",\"bytes_per_ring\":" + std::to_string(plan.current_bytes) +
        ",\"cv_predicted\":" + JsonNumber(plan.current.cv_predicted) +
        ",\"cv_measured\":" + JsonNumber(plan.current.cv_measured) + "},\"candidates\":[";
    for (size_t i = 0; i < plan.rows.size(); ++i) {
      const PlanRow& row = plan.rows[i];
      json += (i ? ",{" : "{") + std::string("\"flavor\":\"pingora-v2\",\"mode\":\"pingora-v2\",\"multiple\":") +
              std::to_string(row.multiple) +
              ",\"points_generated\":" + std::to_string(row.points_generated) +
              ",\"skipped\":" + (row.skipped ? "true" : "false");
      if (!row.skipped) {
        json += ",\"points\":" + std::to_string(row.stats.points) +
                ",\"collisions\":" + std::to_string(row.stats.collisions) +
                ",\"cv_predicted\":" + JsonNumber(row.stats.cv_predicted) +
                ",\"cv_measured\":" + JsonNumber(row.stats.cv_measured) +
                ",\"max_share_ratio\":" + JsonNumber(row.stats.max_share_ratio) +
                ",\"bytes_per_ring\":" + std::to_string(row.bytes_per_ring) +
                ",\"bytes_for_rings\":" + std::to_string(row.bytes_per_ring * r) +
                ",\"bytes_one_ring_with_masks\":" +
                std::to_string(row.bytes_per_ring + r * plan.mask_bytes) +
                ",\"moved_fraction\":" + JsonNumber(row.moved_fraction);
      }
      json += "}";
    }
    json += "],\"recommended_multiple\":" +
            (plan.recommended ? std::to_string(*plan.recommended) : std::string("null")) + "}";
    if (const auto plot = options.Get("plot")) {
      const Status written = WritePlot(*plot, PlanSvg(plan, current.value(), servers.value(), *path,
                                                      json, svg::CommandLine("plan", args)));
      if (!written.ok()) return Fail("plan", written.message());
    }
    if (options.Has("json")) {
      std::printf("%s\n", json.c_str());
      return 0;
    }
  }

  std::printf("servers   %s: %s nodes\n", path->c_str(), WithCommas(plan.current.nodes).c_str());
  std::printf(
      "current   %s, %u points per weight unit: %s points, %s collisions, %s bytes, "
      "CV predicted %s, measured %s\n",
      current_name.c_str(), current.value().point_multiple, WithCommas(plan.current.points).c_str(),
      WithCommas(plan.current.collisions).c_str(), WithCommas(plan.current_bytes).c_str(),
      Percent(plan.current.cv_predicted).c_str(), Percent(plan.current.cv_measured).c_str());
  std::printf("target    CV <= %s; %s ring%s of this fleet (or 1 ring + %s masks of %s bytes)\n",
              Percent(plan.cv_target).c_str(), WithCommas(r).c_str(), r == 1 ? "" : "s",
              WithCommas(r).c_str(), WithCommas(plan.mask_bytes).c_str());
  std::printf("candidates: pingora-v2 rings (address-order ties), K points per weight unit\n\n");
  char rings_column[32];
  std::snprintf(rings_column, sizeof rings_column, "x%llu rings",
                static_cast<unsigned long long>(r));
  std::printf("%8s %12s %10s %12s %12s %13s %15s %15s %10s\n", "K", "points", "collisions",
              "CV predicted", "CV measured", "bytes/ring", rings_column, "1 ring+masks", "moved");
  for (const PlanRow& row : plan.rows) {
    if (row.skipped) {
      std::printf("%8u %12s  skipped: over --max-points %s\n", row.multiple,
                  WithCommas(row.points_generated).c_str(),
                  WithCommas(plan_options.max_points).c_str());
      continue;
    }
    std::printf("%8u %12s %10s %12s %12s %13s %15s %15s %10s%s\n", row.multiple,
                WithCommas(row.stats.points).c_str(), WithCommas(row.stats.collisions).c_str(),
                Percent(row.stats.cv_predicted).c_str(), Percent(row.stats.cv_measured).c_str(),
                WithCommas(row.bytes_per_ring).c_str(), WithCommas(row.bytes_per_ring * r).c_str(),
                WithCommas(row.bytes_per_ring + r * plan.mask_bytes).c_str(),
                Percent(row.moved_fraction).c_str(),
                plan.recommended == row.multiple ? "  <-" : "");
  }
  if (plan.recommended) {
    for (const PlanRow& row : plan.rows) {
      if (row.multiple != *plan.recommended) continue;
      std::printf(
          "\nrecommended: --mode pingora-v2 --multiple %u, the smallest multiple whose "
          "measured CV (%s) is within %s:\n  %s bytes a ring (%s for %s rings), and %s "
          "of the keys move from the current ring: migrate gradually (chash route "
          "--rollout)\n",
          row.multiple, Percent(row.stats.cv_measured).c_str(), Percent(plan.cv_target).c_str(),
          WithCommas(row.bytes_per_ring).c_str(), WithCommas(row.bytes_per_ring * r).c_str(),
          WithCommas(r).c_str(), Percent(row.moved_fraction).c_str());
    }
  } else {
    std::printf(
        "\nno multiple tried meets CV <= %s: try larger ones (--multiples, "
        "--max-points) or accept a larger target\n",
        Percent(plan.cv_target).c_str());
  }
  return 0;
}

}  // namespace chash::cli
