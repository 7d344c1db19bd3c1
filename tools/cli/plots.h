// The pictures of `chash plan|stats|diff --plot FILE.svg`, drawn from the
// same numbers their --json prints.
//
// Each SVG holds, besides the drawing, a <metadata id="chash-plot-data">
// JSON object: "kind", "command" (the command line that made it), the
// scales ("x", "y", ...: {"log", "domain", "range"}) that map a value to
// pixels, and "data", the exact --json text of the same command. Every
// drawn value mark carries data-series and data-value (the value as --json
// prints it) and, per series, data-k (plan) or data-node (stats, diff), so a
// test can check that each mark sits where its --json value maps.
#ifndef CHASH_TOOLS_CLI_PLOTS_H_
#define CHASH_TOOLS_CLI_PLOTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chash/chash.h"
#include "chash/operators.h"

namespace chash::cli {

// CV against K: measured and predicted for each candidate, the formula as a
// curve, ring bytes on a second axis, the current ring, the recommended K
// and the CV target. `json` is the text `plan --json` prints.
std::string PlanSvg(const Plan& plan, const RingOptions& current,
                    const std::vector<ServerEntry>& servers, std::string_view servers_name,
                    std::string_view json, std::string_view command);

// A candidate of `plan` on another program's ring: the setting's value,
// its measured CV and the bytes of its points in the program and in chash.
struct SettingPoint {
  uint64_t value = 0;
  double cv_measured = 0;
  uint64_t program_bytes = 0;  // 0: not the program's ring (ketama's v2 candidates)
  uint64_t chash_bytes = 0;
};

// CV measured against the setting's value (log), with the program's and
// chash's bytes on a second axis, the CV target and the recommended value.
std::string SettingPlanSvg(std::string_view flavor, std::string_view setting,
                           std::string_view servers_name, const std::vector<SettingPoint>& points,
                           double cv_target, std::optional<uint64_t> recommended,
                           std::string_view json, std::string_view command);

// One server's figures on a ring, as `stats --json` lists them in "nodes".
struct NodeShare {
  uint32_t node = 0;
  std::string address;
  uint32_t weight = 0;
  uint64_t hashes = 0;  // of the 2^32 key hashes
  double ratio = 0;     // share / weight share; meaningless for weight 0
};
// Servers of weight > 0 sorted by ratio, with the CV bands.
std::string StatsSvg(const RingStats& stats, const std::vector<NodeShare>& shares,
                     std::string_view ring_label, std::string_view json, std::string_view command);

// Per server: old and new share (top panel), moved out and in (bottom).
// `percent` formats a share as --json prints it.
std::string DiffSvg(const RingDiff& diff, std::string_view old_label, std::string_view new_label,
                    std::string_view json, std::string_view command);

// Writes `svg` to `path` (replacing it). Errors name the path.
Status WritePlot(const std::string& path, const std::string& svg);

}  // namespace chash::cli

#endif  // CHASH_TOOLS_CLI_PLOTS_H_
