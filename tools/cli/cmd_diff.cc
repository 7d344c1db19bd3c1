// chash diff: the exact share of the key space that changes backend between
// two rings (include/chash/diff.h), overall, per backend and at a rollout.
#include <cstdio>
#include <optional>

#include "cli_common.h"
#include "commands.h"
#include "plots.h"
#include "progress.h"
#include "svg.h"

namespace chash::cli {
namespace {

std::string Percent(double fraction) { return cli::Percent(fraction, 6); }

double Share(uint64_t hashes) { return static_cast<double>(hashes) / kKeySpace; }

std::string RingJson(const Ring& ring, const std::string& path) {
  return "{\"servers\":" + JsonString(path) + ",\"flavor\":" + JsonString(FlavorName(ring.flavor())) +
         ",\"mode\":" + JsonString(FlavorName(ring.flavor())) +
         ",\"multiple\":" + std::to_string(ring.point_multiple()) +
         ",\"points\":" + std::to_string(ring.num_points()) +
         ",\"fingerprint\":" + JsonString(RingFingerprint(ring).Hex()) + "}";
}

void PrintRing(const char* label, const Ring& ring, const std::string& path) {
  std::printf("%s  %s: %s, %u points per weight unit, %s points, fingerprint %s\n", label,
              path.c_str(), std::string(FlavorName(ring.flavor())).c_str(), ring.point_multiple(),
              WithCommas(ring.num_points()).c_str(), RingFingerprint(ring).Short().c_str());
}

}  // namespace

int RunDiff(const Args& args) {
  Result<Options> parsed =
      ParseRingCommandOptions(args,
                              {"new-servers", "new-flavor", "new-multiple", "rollout", "new-ring",
                               "plot", "new-nginx-conf", "new-upstream"},
                              {"json"});
  if (!parsed.ok()) return Fail("diff", parsed.status().message());
  const Options& options = parsed.value();
  ServersInput old_input;
  Result<Ring> old_ring = LoadRingFromOptions(options, &old_input);
  if (!old_ring.ok()) return Fail("diff", old_ring.status().message());
  const RingOptions old_ring_options = FirstRingOptions(options, old_ring.value());
  if (options.Has("new-ring") &&
      (options.Has("new-servers") || options.Has("new-nginx-conf") || options.Has("new-upstream") ||
       options.Has("new-flavor") || options.Has("new-multiple"))) {
    return Fail("diff", "--new-ring cannot be combined with --new-servers, --new-nginx-conf, "
                        "--new-upstream, --new-flavor or --new-multiple");
  }
  if (options.Has("ring") && !options.Has("new-ring") && !options.Has("new-servers") &&
      !options.Has("new-nginx-conf")) {
    return Fail("diff", "--ring needs --new-ring RINGFILE, --new-servers FILE or "
                        "--new-nginx-conf FILE");
  }
  Result<Ring> new_ring = options.Has("new-ring")
                              ? LoadRingFromSnapshotOption(options, "new-ring")
                              : LoadNewRingFromOptions(options, old_ring_options);
  if (!new_ring.ok()) return Fail("diff", new_ring.status().message());
  // A share of keys moved is a figure about keys that have a server on
  // both sides: an empty ring makes it meaningless (all keys lost, or none
  // ever placed), and an operator must see that as an error, not 100%.
  if (old_ring.value().empty() || new_ring.value().empty()) {
    return Fail("diff", std::string("the ") + (old_ring.value().empty() ? "old" : "new") +
                            " ring has no points (no servers, or every weight is 0): every key "
                            "would have no server, no share moves");
  }
  double rollout = 1;
  if (const auto text = options.Get("rollout")) {
    Result<double> fraction = ParseFraction("rollout", *text);
    if (!fraction.ok()) return Fail("diff", fraction.status().message());
    rollout = fraction.value();
  }
  const std::string old_path = options.Has("ring") ? *options.Get("ring") : old_input.name;
  const std::string new_path =
      options.Has("new-ring") ? *options.Get("new-ring") : ServersInputName(options, "new-");

  std::optional<ProgressPhase> progress;
  progress.emplace("diff: merging " + WithCommas(old_ring.value().num_points()) + " and " +
                   WithCommas(new_ring.value().num_points()) + " points");
  Result<RingDiff> diffed = DiffRings(old_ring.value(), new_ring.value());
  progress.reset();
  if (!diffed.ok()) return Fail("diff", diffed.status().message());
  const RingDiff& diff = diffed.value();
  if (options.Has("json") || options.Has("plot")) {
    std::string json =
        "{\"moved_fraction\":" + JsonNumber(diff.moved_fraction()) +
        ",\"exact\":" + (diff.exact ? "true" : "false") + ",\"moved_hashes\":" + std::to_string(diff.moved_hashes) +
        ",\"key_space\":" + std::to_string(kKeySpace) + ",\"rollout\":" + JsonNumber(rollout) +
        ",\"moved_fraction_at_rollout\":" + JsonNumber(diff.moved_fraction_at(rollout)) +
        ",\"old\":" + RingJson(old_ring.value(), old_path) +
        ",\"new\":" + RingJson(new_ring.value(), new_path) + ",\"nodes\":[";
    for (size_t i = 0; i < diff.nodes.size(); ++i) {
      const NodeDiff& node = diff.nodes[i];
      char numbers[256];
      std::snprintf(numbers, sizeof numbers,
                    ",\"old_share\":%.9f,\"new_share\":%.9f,\"moved_out\":%.9f,"
                    "\"moved_in\":%.9f}",
                    Share(node.old_hashes), Share(node.new_hashes), Share(node.moved_out),
                    Share(node.moved_in));
      json += (i ? ",{" : "{") + std::string("\"backend\":") + JsonString(node.backend) +
              ",\"address\":" + JsonString(node.address) +
              ",\"in_old\":" + (node.old_node != Ring::kNoNode ? "true" : "false") +
              ",\"in_new\":" + (node.new_node != Ring::kNoNode ? "true" : "false") + numbers;
    }
    json += "]}";
    if (const auto plot = options.Get("plot")) {
      const auto label = [](const Ring& ring, const std::string& path) {
        return path + ", " + std::string(FlavorName(ring.flavor())) + " " +
               std::to_string(ring.point_multiple()) + "/weight, " + WithCommas(ring.num_points()) +
               " points";
      };
      const Status written = WritePlot(
          *plot, DiffSvg(diff, label(old_ring.value(), old_path), label(new_ring.value(), new_path),
                         json, svg::CommandLine("diff", args)));
      if (!written.ok()) return Fail("diff", written.message());
    }
    if (options.Has("json")) {
      std::printf("%s\n", json.c_str());
      return 0;
    }
  }
  PrintRing("old ring", old_ring.value(), old_path);
  PrintRing("new ring", new_ring.value(), new_path);
  if (diff.exact) {
    std::printf("moved     %s of the key space (%s of %s key hashes), exact\n",
                Percent(diff.moved_fraction()).c_str(), WithCommas(diff.moved_hashes).c_str(),
                WithCommas(kKeySpace).c_str());
  } else {
    // The rings hash a key with different functions: a key's two answers
    // are independent draws, so this is an expectation, not a count.
    std::printf("moved     %s of keys expected (the rings hash keys differently: each key's "
                "two answers taken as independent)\n",
                Percent(diff.moved_fraction()).c_str());
  }
  if (options.Has("rollout")) {
    std::printf("rollout   at %s of keys on the new ring: %s of keys expected to move\n",
                Percent(rollout).c_str(), Percent(diff.moved_fraction_at(rollout)).c_str());
  }
  std::printf("\n%-28s %12s %12s %12s %12s\n", "backend", "old share", "new share", "moved out",
              "moved in");
  for (const NodeDiff& node : diff.nodes) {
    std::printf("%-28s %12s %12s %12s %12s\n", node.address.c_str(),
                Percent(Share(node.old_hashes)).c_str(), Percent(Share(node.new_hashes)).c_str(),
                Percent(Share(node.moved_out)).c_str(), Percent(Share(node.moved_in)).c_str());
  }
  return 0;
}

}  // namespace chash::cli
