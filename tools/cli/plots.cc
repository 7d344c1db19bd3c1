#include "plots.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "cli_common.h"
#include "svg.h"

namespace chash::cli {
namespace {

using svg::Attrs;
using svg::Document;
using svg::Frame;
using svg::Scale;

constexpr const char* kMeasured = "#d62728";
constexpr const char* kFormula = "#1f77b4";
constexpr const char* kBytes = "#8c8c8c";
constexpr const char* kTarget = "#2ca02c";
constexpr const char* kRecommended = "#9467bd";
constexpr const char* kCurrent = "#000000";
constexpr const char* kOld = "#1f77b4";
constexpr const char* kNew = "#ff7f0e";

using svg::Format;

// A point of a plan plot: its series, its K and its value, as data-*
// attributes (what tests and readers of the SVG look up).
Attrs PlanPoint(std::string_view series, const std::string& k, std::string value) {
  return {{"data-series", std::string(series)}, {"data-k", k}, {"data-value", std::move(value)}};
}

std::string PercentLabel(double fraction) {
  const double percent = 100 * fraction;
  return Format(percent >= 1 ? "%.0f%%" : percent >= 0.1 ? "%.1f%%" : "%.2f%%", percent);
}

std::string BytesLabel(double bytes) {
  static const char* const kUnits[] = {"B", "kB", "MB", "GB", "TB"};
  int unit = 0;
  while (bytes >= 1000 && unit < 4) {
    bytes /= 1000;
    ++unit;
  }
  return Format("%.0f", bytes) + " " + kUnits[unit];
}

std::string KLabel(double k) { return Format("%.0f", k); }
std::string CountLabel(double n) { return Format("%.0f", n); }
std::string RatioLabel(double r) { return Format("%.3g", r); }
std::string SharePercentLabel(double fraction) { return Format("%.3g%%", 100 * fraction); }

// Annotations over lines: a white halo keeps them readable.
constexpr const char* kHalo =
    "stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\" stroke-linejoin=\"round\"";
constexpr double kPlotTop = 84;  // title, subtitle and a legend row above

// The metadata block: the scales, then the command's own --json text.
std::string Metadata(std::string_view kind, std::string_view command,
                     const std::vector<std::pair<std::string, Scale>>& scales,
                     std::string_view json) {
  std::string out = "{\"kind\":" + JsonString(kind) + ",\"command\":" + JsonString(command);
  for (const auto& [name, scale] : scales) out += ",\"" + name + "\":" + scale.Json();
  return out + ",\"data\":" + std::string(json) + "}";
}

// Log domain around the positive values, padded by `pad` each side;
// [fallback_lo, fallback_hi] if there is none.
std::pair<double, double> LogDomain(const std::vector<double>& values, double pad,
                                    double fallback_lo, double fallback_hi) {
  double lo = INFINITY, hi = 0;
  for (const double v : values) {
    if (v > 0 && std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (hi == 0) return {fallback_lo, fallback_hi};
  if (hi / lo < 4) {  // too narrow for readable log ticks
    const double middle = std::sqrt(lo * hi);
    lo = std::min(lo, middle / 2);
    hi = std::max(hi, middle * 2);
  }
  return {lo / pad, hi * pad};
}

// A value's pixel on a log scale; values <= 0 sit on the lower edge, marked.
double LogY(const Scale& y, double value, Attrs& attrs) {
  if (value > 0) return y.Map(value);
  attrs.push_back({"data-clamped", "true"});
  return y.Map(y.d0);
}

// A CV mark: its y (values <= 0 on the lower edge, marked) and its data
// attributes (PlanPoint).
std::pair<double, Attrs> CvMark(const Scale& y, std::string_view series, const std::string& k,
                                double cv) {
  Attrs attrs = PlanPoint(series, k, JsonNumber(cv));
  const double py = LogY(y, cv, attrs);
  return {py, std::move(attrs)};
}

// The CV target across the plot, labelled.
void DrawCvTarget(Document& doc, const Frame& frame, const Scale& y, double target) {
  const double ty = y.Map(target);
  doc.Line(frame.x0(), ty, frame.x1(doc), ty,
           std::string("stroke=\"") + kTarget + "\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"",
           {{"data-series", "cv_target"}, {"data-value", JsonNumber(target)}});
  doc.Text(frame.x0() + 6, ty - 5, "CV target " + Format("%.4g%%", 100 * target), 11, "start",
           std::string("fill=\"") + kTarget + "\" " + kHalo);
}

// The recommended value of `what` (K, or a program's setting), a dashed
// vertical line, labelled.
void DrawRecommended(Document& doc, const Frame& frame, const Scale& x, std::string_view what,
                     uint64_t value) {
  const double px = x.Map(static_cast<double>(value));
  doc.Line(px, frame.y0(), px, frame.y1(doc),
           std::string("stroke=\"") + kRecommended +
               "\" stroke-width=\"1.5\" stroke-dasharray=\"3 3\"",
           {{"data-series", "recommended"}, {"data-k", std::to_string(value)}});
  doc.Text(px + 4, frame.y0() + 12,
           "recommended " + std::string(what) + " = " + std::to_string(value), 11, "start",
           std::string("fill=\"") + kRecommended + "\" " + kHalo);
}

void Diamond(Document& doc, double x, double y, double r, std::string_view style,
             const Attrs& attrs) {
  doc.Polyline({{x, y - r}, {x + r, y}, {x, y + r}, {x - r, y}, {x, y - r}}, style, attrs);
}

}  // namespace

std::string PlanSvg(const Plan& plan, const RingOptions& current,
                    const std::vector<ServerEntry>& servers, std::string_view servers_name,
                    std::string_view json, std::string_view command) {
  uint64_t weighted = 0, total_weight = 0;
  for (const ServerEntry& server : servers) {
    weighted += server.weight > 0;
    total_weight += server.weight;
  }
  const auto formula = [&](double k) {
    return weighted == 0 ? 0.0
                         : PredictedCv(weighted, k * static_cast<double>(total_weight) /
                                                     static_cast<double>(weighted));
  };

  Document doc(960, 600);
  Frame frame;
  frame.top = kPlotTop;
  frame.bottom = 96;
  std::vector<double> ks = {static_cast<double>(current.point_multiple)};
  std::vector<double> cvs = {plan.cv_target, plan.current.cv_measured, plan.current.cv_predicted};
  std::vector<double> bytes = {static_cast<double>(plan.current_bytes)};
  for (const PlanRow& row : plan.rows) {
    ks.push_back(row.multiple);
    if (row.skipped) continue;
    cvs.push_back(row.stats.cv_measured);
    cvs.push_back(row.stats.cv_predicted);
    bytes.push_back(static_cast<double>(row.bytes_per_ring));
  }
  const auto [k_lo, k_hi] = LogDomain(ks, 1.4, 1, 1000);
  cvs.push_back(formula(k_lo));
  cvs.push_back(formula(k_hi));
  const auto [cv_lo, cv_hi] = LogDomain(cvs, 1.3, 1e-4, 1);
  const auto [b_lo, b_hi] = LogDomain(bytes, 1.5, 1, 1e6);
  const Scale x{k_lo, k_hi, frame.x0(), frame.x1(doc), true};
  const Scale y{cv_lo, cv_hi, frame.y1(doc), frame.y0(), true};
  const Scale y2{b_lo, b_hi, frame.y1(doc), frame.y0(), true};

  const std::string mode(FlavorName(current.flavor));
  doc.SetHeader("chash plan: CV against points per weight unit",
                "CV (stddev / mean of load share over weight share) predicted by the formula "
                "and measured on real rings, and ring bytes, against K",
                Metadata("plan", command, {{"x", x}, {"y", y}, {"y2", y2}}, json));
  svg::DrawFrame(doc, frame,
                 "Load balance vs points per weight unit: " + std::string(servers_name) + ", " +
                     WithCommas(plan.current.nodes) + " servers",
                 "measured = exact shares of the 2^32 key hashes on real pingora-v2 rings "
                 "(collisions included); formula = sqrt((N-1)/(N k+1))",
                 command);
  svg::DrawXAxis(doc, frame, x, svg::LogTicks(k_lo, k_hi, KLabel),
                 "K, points per weight unit (log scale)");
  svg::DrawYAxis(doc, frame, y, svg::LogTicks(cv_lo, cv_hi, PercentLabel),
                 "CV of share / weight share, % (log scale)");
  svg::DrawYAxis(doc, frame, y2, svg::LogTicks(b_lo, b_hi, BytesLabel),
                 "bytes a ring: columns + index + collision table (log scale)", "right");

  // The formula as a curve over the whole K range.
  std::vector<std::pair<double, double>> curve;
  for (int i = 0; i <= 120; ++i) {
    const double k =
        std::pow(10.0, std::log10(k_lo) + i * (std::log10(k_hi) - std::log10(k_lo)) / 120);
    if (formula(k) > 0) curve.push_back({x.Map(k), y.Map(formula(k))});
  }
  doc.Polyline(curve, std::string("stroke=\"") + kFormula + "\" stroke-width=\"1.5\"",
               {{"data-series", "cv_formula"}});

  DrawCvTarget(doc, frame, y, plan.cv_target);

  // Ring bytes (right axis), then measured CV as a line through its marks.
  std::vector<std::pair<double, double>> bytes_line, measured_line;
  for (const PlanRow& row : plan.rows) {
    if (row.skipped) continue;
    bytes_line.push_back({x.Map(row.multiple), y2.Map(static_cast<double>(row.bytes_per_ring))});
    Attrs attrs;
    measured_line.push_back({x.Map(row.multiple), LogY(y, row.stats.cv_measured, attrs)});
  }
  doc.Polyline(bytes_line, std::string("stroke=\"") + kBytes + "\" stroke-width=\"1.5\"");
  doc.Polyline(measured_line, std::string("stroke=\"") + kMeasured + "\" stroke-width=\"1.5\"");
  for (const PlanRow& row : plan.rows) {
    const double px = x.Map(row.multiple);
    const std::string k = std::to_string(row.multiple);
    if (row.skipped) {
      doc.Text(px, frame.y1(doc) - 6, "skipped", 9, "middle", "fill=\"#999999\"", -90);
      continue;
    }
    const double b = static_cast<double>(row.bytes_per_ring);
    doc.Rect(px - 3.5, y2.Map(b) - 3.5, 7, 7, std::string("fill=\"") + kBytes + "\"",
             PlanPoint("bytes_per_ring", k, std::to_string(row.bytes_per_ring)));
    const auto [py, predicted] = CvMark(y, "cv_predicted", k, row.stats.cv_predicted);
    doc.Circle(px, py, 4,
               std::string("fill=\"#ffffff\" stroke=\"") + kFormula + "\" stroke-width=\"1.5\"",
               predicted);
    const auto [my, measured] = CvMark(y, "cv_measured", k, row.stats.cv_measured);
    doc.Circle(px, my, 4.5, std::string("fill=\"") + kMeasured + "\"", measured);
  }

  if (plan.recommended) DrawRecommended(doc, frame, x, "K", *plan.recommended);

  // The current ring: measured (diamond) and predicted, and its bytes.
  const std::string ck = std::to_string(current.point_multiple);
  const double cx = x.Map(current.point_multiple);
  doc.Rect(cx - 4, y2.Map(static_cast<double>(plan.current_bytes)) - 4, 8, 8,
           std::string("fill=\"none\" stroke=\"") + kCurrent + "\" stroke-width=\"1.5\"",
           PlanPoint("current_bytes", ck, std::to_string(plan.current_bytes)));
  const auto [cpy, cur_predicted] =
      CvMark(y, "current_cv_predicted", ck, plan.current.cv_predicted);
  doc.Circle(cx, cpy, 5,
             std::string("fill=\"none\" stroke=\"") + kCurrent + "\" stroke-width=\"1.5\"",
             cur_predicted);
  const auto [cmy, cur_measured] = CvMark(y, "current_cv_measured", ck, plan.current.cv_measured);
  Diamond(doc, cx, cmy, 7, std::string("fill=\"") + kCurrent + "\" stroke=\"" + kCurrent + "\"",
          cur_measured);
  const double collided = plan.current.points_generated == 0
                              ? 0
                              : static_cast<double>(plan.current.collisions) /
                                    static_cast<double>(plan.current.points_generated);
  const bool label_left = cx > (frame.x0() + frame.x1(doc)) / 2;
  doc.Text(cx + (label_left ? -10 : 10), cmy - 10,
           "current " + mode + ", K = " + ck + ": measured " +
               Format("%.4g%%", 100 * plan.current.cv_measured) + ", formula " +
               Format("%.4g%%", 100 * plan.current.cv_predicted),
           11, label_left ? "end" : "start", std::string("font-weight=\"bold\" ") + kHalo);
  doc.Text(cx + (label_left ? -10 : 10), cmy + 4,
           WithCommas(plan.current.points_generated) + " points, " +
               Format("%.3g%%", 100 * collided) + " collided, " +
               (current.flavor == Flavor::kPingoraV2 ? "address"
                : current.flavor == Flavor::kResty   ? "id"
                                                     : "config") +
               "-order ties",
           11, label_left ? "end" : "start", kHalo);

  svg::DrawLegendRow(doc, frame.x0() - 8, 66,
                     {{"dot", kMeasured, "CV measured"},
                      {"circle", kFormula, "CV formula (the line: any K)"},
                      {"square", kBytes, "bytes a ring (right axis)"},
                      {"diamond", kCurrent, "current ring (open: formula)"},
                      {"dash", kTarget, "CV target"}});
  return doc.Finish();
}

std::string SettingPlanSvg(std::string_view flavor, std::string_view setting,
                           std::string_view servers_name, const std::vector<SettingPoint>& points,
                           double cv_target, std::optional<uint64_t> recommended,
                           std::string_view json, std::string_view command) {
  Document doc(960, 600);
  Frame frame;
  frame.top = kPlotTop;
  frame.bottom = 96;
  std::vector<double> values, cvs = {cv_target}, bytes;
  for (const SettingPoint& point : points) {
    values.push_back(static_cast<double>(point.value));
    cvs.push_back(point.cv_measured);
    bytes.push_back(static_cast<double>(point.chash_bytes));
    if (point.program_bytes > 0) bytes.push_back(static_cast<double>(point.program_bytes));
  }
  const auto [v_lo, v_hi] = LogDomain(values, 1.4, 1, 1000);
  const auto [cv_lo, cv_hi] = LogDomain(cvs, 1.3, 1e-4, 1);
  const auto [b_lo, b_hi] = LogDomain(bytes, 1.5, 1, 1e6);
  const Scale x{v_lo, v_hi, frame.x0(), frame.x1(doc), true};
  const Scale y{cv_lo, cv_hi, frame.y1(doc), frame.y0(), true};
  const Scale y2{b_lo, b_hi, frame.y1(doc), frame.y0(), true};
  doc.SetHeader("chash plan: CV against " + std::string(setting),
                "CV (stddev / mean of load share over weight share) measured on real " +
                    std::string(flavor) + " rings, and the bytes of their points, against " +
                    std::string(setting),
                Metadata("plan_setting", command, {{"x", x}, {"y", y}, {"y2", y2}}, json));
  svg::DrawFrame(doc, frame,
                 "Load balance vs " + std::string(setting) + ": " + std::string(servers_name) +
                     ", " + std::string(flavor),
                 "measured = exact shares of the key hashes; bytes: the program's own "
                 "structure (from its sources) and chash's columns",
                 command);
  svg::DrawXAxis(doc, frame, x, svg::LogTicks(v_lo, v_hi, KLabel),
                 std::string(setting) + " (log scale)");
  svg::DrawYAxis(doc, frame, y, svg::LogTicks(cv_lo, cv_hi, PercentLabel),
                 "CV of share / weight share, % (log scale)");
  svg::DrawYAxis(doc, frame, y2, svg::LogTicks(b_lo, b_hi, BytesLabel),
                 "bytes of the points (log scale)", "right");

  DrawCvTarget(doc, frame, y, cv_target);

  std::vector<std::pair<double, double>> measured_line;
  for (const SettingPoint& point : points) {
    const std::string v = std::to_string(point.value);
    const double px = x.Map(static_cast<double>(point.value));
    doc.Rect(px - 3.5, y2.Map(static_cast<double>(point.chash_bytes)) - 3.5, 7, 7,
             std::string("fill=\"") + kBytes + "\"",
             PlanPoint("chash_bytes", v, std::to_string(point.chash_bytes)));
    if (point.program_bytes > 0) {
      doc.Rect(px - 3.5, y2.Map(static_cast<double>(point.program_bytes)) - 3.5, 7, 7,
               std::string("fill=\"none\" stroke=\"") + kBytes + "\"",
               PlanPoint("program_bytes", v, std::to_string(point.program_bytes)));
    }
    const auto [my, measured] = CvMark(y, "cv_measured", v, point.cv_measured);
    doc.Circle(px, my, 4.5, std::string("fill=\"") + kMeasured + "\"", measured);
    measured_line.push_back({px, my});
  }
  doc.Polyline(measured_line, std::string("stroke=\"") + kMeasured + "\" stroke-width=\"1.5\"",
               {{"data-series", "cv_measured_line"}});
  if (recommended) DrawRecommended(doc, frame, x, setting, *recommended);
  return doc.Finish();
}

std::string StatsSvg(const RingStats& stats, const std::vector<NodeShare>& shares,
                     std::string_view ring_label, std::string_view json, std::string_view command) {
  std::vector<const NodeShare*> sorted;
  for (const NodeShare& share : shares) {
    if (share.weight > 0) sorted.push_back(&share);
  }
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const NodeShare* a, const NodeShare* b) { return a->ratio < b->ratio; });
  double mean = 0;
  for (const NodeShare* share : sorted) mean += share->ratio;
  if (!sorted.empty()) mean /= static_cast<double>(sorted.size());
  const double sd = stats.cv_measured * mean, sd_predicted = stats.cv_predicted * mean;

  Document doc(960, 580);
  Frame frame;
  frame.top = kPlotTop;
  frame.right = 40;
  double lo = std::min(mean - 2.2 * sd, mean - 1.2 * sd_predicted);
  double hi = std::max(mean + 2.2 * sd, mean + 1.2 * sd_predicted);
  for (const NodeShare* share : sorted) {
    lo = std::min(lo, share->ratio);
    hi = std::max(hi, share->ratio);
  }
  if (!(hi > lo)) {
    lo = mean - 0.5;
    hi = mean + 0.5;
  }
  const double pad = (hi - lo) * 0.06;
  lo = std::max(0.0, lo - pad);
  hi += pad;
  const double n = static_cast<double>(std::max<size_t>(sorted.size(), 1));
  const Scale x{0.5, n + 0.5, frame.x0(), frame.x1(doc), false};
  const Scale y{lo, hi, frame.y1(doc), frame.y0(), false};

  doc.SetHeader("chash stats: share of the key space over weight share, per server",
                "each server's exact share of the 2^32 key hashes divided by its weight share, "
                "sorted, with bands at the mean +- 1 and 2 measured standard deviations",
                Metadata("stats", command, {{"x", x}, {"y", y}}, json));
  svg::DrawFrame(doc, frame,
                 "Share of keys / share of weight, " + WithCommas(sorted.size()) +
                     " servers, sorted: CV " + Format("%.4f%%", 100 * stats.cv_measured) +
                     " (formula " + Format("%.4f%%", 100 * stats.cv_predicted) + ")",
                 std::string(ring_label) + "; max " + Format("%.4f", stats.max_share_ratio) +
                     ", min " + Format("%.4f", stats.min_share_ratio) +
                     "; exact shares of the 2^32 key hashes",
                 command);
  // Bands first, so the servers draw over them.
  const auto band = [&](double k, const char* opacity) {
    const double top = y.Map(std::min(hi, mean + k * sd)),
                 bottom = y.Map(std::max(lo, mean - k * sd));
    doc.Rect(frame.x0(), top, frame.x1(doc) - frame.x0(), bottom - top,
             std::string("fill=\"") + kMeasured + "\" fill-opacity=\"" + opacity + "\"",
             {{"data-series", "band"}, {"data-sigmas", Format("%.0f", k)}});
  };
  band(2, "0.08");
  band(1, "0.16");
  svg::DrawXAxis(doc, frame, x, svg::LinearTicks(1, n, 8, CountLabel),
                 "servers of weight > 0, sorted by share / weight share (rank)");
  svg::DrawYAxis(doc, frame, y, svg::LinearTicks(lo, hi, 8, RatioLabel),
                 "share of key hashes / weight share (1 = fair)");
  doc.Line(frame.x0(), y.Map(mean), frame.x1(doc), y.Map(mean), "stroke=\"#333333\"",
           {{"data-series", "mean"}, {"data-value", JsonNumber(mean)}});
  for (const double sign : {-1.0, 1.0}) {
    const double py = y.Map(mean + sign * sd_predicted);
    doc.Line(
        frame.x0(), py, frame.x1(doc), py,
        std::string("stroke=\"") + kFormula + "\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"",
        {{"data-series", "formula_band"}});
  }
  std::vector<std::pair<double, double>> line;
  for (size_t i = 0; i < sorted.size(); ++i) {
    line.push_back({x.Map(static_cast<double>(i + 1)), y.Map(sorted[i]->ratio)});
  }
  doc.Polyline(line, "stroke=\"#222222\" stroke-width=\"1.5\"", {{"data-series", "ratio_sorted"}});
  if (sorted.size() <= 200) {
    for (size_t i = 0; i < sorted.size(); ++i) {
      doc.Circle(line[i].first, line[i].second, 3.5, "fill=\"#222222\"",
                 {{"data-series", "ratio"},
                  {"data-node", std::to_string(sorted[i]->node)},
                  {"data-rank", std::to_string(i + 1)},
                  {"data-value", JsonNumber(sorted[i]->ratio)}});
    }
  }
  if (!sorted.empty()) {
    doc.Text(line.front().first + 6, line.front().second + 14,
             "min: " + sorted.front()->address + " " + Format("%.4f", sorted.front()->ratio), 11,
             "start", kHalo);
    doc.Text(line.back().first - 6, line.back().second - 8,
             "max: " + sorted.back()->address + " " + Format("%.4f", sorted.back()->ratio), 11,
             "end", kHalo);
  }
  svg::DrawLegendRow(doc, frame.x0() - 8, 66,
                     {{"line", "#222222", "share / weight share, one point a server"},
                      {"band", kMeasured, "mean +- 1 and 2 measured std devs"},
                      {"dash", kFormula, "mean +- the formula's std dev"}});
  return doc.Finish();
}

std::string DiffSvg(const RingDiff& diff, std::string_view old_label, std::string_view new_label,
                    std::string_view json, std::string_view command) {
  const size_t count = diff.nodes.size();
  const double n = static_cast<double>(std::max<size_t>(count, 1));
  const bool bars = count <= 64;
  Document doc(960, 660);
  Frame top;
  top.top = kPlotTop;
  top.right = 40;
  top.bottom = 660 - 340;
  Frame bottom = top;
  bottom.top = 370;
  bottom.bottom = bars ? 126 : 86;

  const auto share = [](uint64_t hashes) { return static_cast<double>(hashes) / kKeySpace; };
  double share_hi = 0, moved_hi = 0;
  for (const NodeDiff& node : diff.nodes) {
    share_hi = std::max({share_hi, share(node.old_hashes), share(node.new_hashes)});
    moved_hi = std::max({moved_hi, share(node.moved_out), share(node.moved_in)});
  }
  share_hi = share_hi > 0 ? share_hi * 1.08 : 1;
  moved_hi = moved_hi > 0 ? moved_hi * 1.08 : 1;
  const Scale x{0, n, top.x0(), top.x1(doc), false};
  const Scale y{0, share_hi, top.y1(doc), top.y0(), false};
  const Scale y_moved{-moved_hi, moved_hi, bottom.y1(doc), bottom.y0(), false};

  doc.SetHeader("chash diff: per server, old and new share, moved out and moved in",
                "exact shares of the 2^32 key hashes on the old and new rings, and the "
                "shares that change server",
                Metadata("diff", command, {{"x", x}, {"y", y}, {"y_moved", y_moved}}, json));
  svg::DrawFrame(doc, top,
                 "Ring diff: " + Format("%.4f%%", 100 * diff.moved_fraction()) +
                     " of the key space moves, " + WithCommas(count) + " servers",
                 "old: " + std::string(old_label) + ";  new: " + std::string(new_label), command);
  // Bars are labelled by address below; lines get server numbers.
  const std::vector<svg::Tick> no_ticks;
  svg::DrawXAxis(doc, top, x, no_ticks, "");
  if (!bars) svg::DrawXAxis(doc, bottom, x, svg::LinearTicks(0, n, 8, CountLabel), "");
  svg::DrawYAxis(doc, top, y, svg::LinearTicks(0, share_hi, 6, SharePercentLabel),
                 "share of the key space");
  svg::DrawYAxis(doc, bottom, y_moved, svg::LinearTicks(-moved_hi, moved_hi, 6, SharePercentLabel),
                 "moved out (-) / in (+)");
  doc.Line(bottom.x0(), y_moved.Map(0), bottom.x1(doc), y_moved.Map(0), "stroke=\"#333333\"");
  doc.Line(bottom.x0(), bottom.y1(doc), bottom.x1(doc), bottom.y1(doc), "stroke=\"#333333\"");
  doc.Text((bottom.x0() + bottom.x1(doc)) / 2, doc.height() - 30,
           "servers, in the old ring's order, then those only in the new ring", 12, "middle");

  struct Series {
    const char* name;
    const char* color;
    const Scale* scale;
    double sign;
    double slot;  // bar position within the server's cell, 0 or 1
    uint64_t NodeDiff::*field;
  };
  const Series series[] = {
      {"old_share", kOld, &y, 1, 0, &NodeDiff::old_hashes},
      {"new_share", kNew, &y, 1, 1, &NodeDiff::new_hashes},
      {"moved_out", kMeasured, &y_moved, -1, 0, &NodeDiff::moved_out},
      {"moved_in", kTarget, &y_moved, 1, 1, &NodeDiff::moved_in},
  };
  const double cell = (top.x1(doc) - top.x0()) / n;
  for (const Series& s : series) {
    std::vector<std::pair<double, double>> line;
    for (size_t i = 0; i < count; ++i) {
      const double value = share(diff.nodes[i].*(s.field));
      const double v0 = s.scale->Map(0), v1 = s.scale->Map(s.sign * value);
      if (bars) {
        const double bx = x.Map(static_cast<double>(i)) + cell * (0.1 + 0.4 * s.slot);
        doc.Rect(bx, std::min(v0, v1), cell * 0.4, std::abs(v1 - v0),
                 std::string("fill=\"") + s.color + "\"",
                 {{"data-series", s.name},
                  {"data-node", std::to_string(i)},
                  {"data-value", Format("%.9f", value)}});
      } else {
        line.push_back({x.Map(static_cast<double>(i) + 0.5), v1});
      }
    }
    if (!bars) {
      doc.Polyline(line, std::string("stroke=\"") + s.color + "\" stroke-width=\"1\"",
                   {{"data-series", s.name}});
    }
  }
  if (bars) {
    for (size_t i = 0; i < count; ++i) {
      doc.Text(x.Map(static_cast<double>(i) + 0.5), bottom.y1(doc) + 10, diff.nodes[i].address, 10,
               "end", "", -35);
    }
  }
  svg::DrawLegendRow(doc, top.x0() - 8, 66,
                     {{"square", kOld, "share on the old ring"},
                      {"square", kNew, "share on the new ring"},
                      {"square", kMeasured, "moved out: old ring's keys now elsewhere"},
                      {"square", kTarget, "moved in"}});
  return doc.Finish();
}

Status WritePlot(const std::string& path, const std::string& svg) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out << svg;
  out.close();
  if (!out) return Status(StatusCode::kBadArgument, "--plot: cannot write '" + path + "'");
  return Status();
}

}  // namespace chash::cli
