#include "svg.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace chash::cli::svg {
namespace {

constexpr const char* kFont = "font-family=\"DejaVu Sans,Verdana,sans-serif\"";
constexpr const char* kAxisColor = "#333333";
constexpr const char* kGridColor = "#e2e2e2";

}  // namespace

std::string Format(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string Escape(std::string_view text, bool attribute) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '"' && attribute) {
      out += "&quot;";
    } else if (c == '\'' && attribute) {
      out += "&apos;";
    } else {
      out += (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') ? '?' : c;
    }
  }
  return out;
}

std::string Num(double value) {
  if (!std::isfinite(value)) value = 0;
  std::string text = Format("%.2f", value);
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  if (text == "-0") text = "0";
  return text;
}

Document::Document(double width, double height) : width_(width), height_(height) {}

void Document::Element(std::string_view open, const Attrs& attrs) {
  body_ += open;
  for (const auto& [name, value] : attrs) body_ += " " + name + "=\"" + Escape(value) + "\"";
  body_ += "/>\n";
}

void Document::Line(double x1, double y1, double x2, double y2, std::string_view style,
                    const Attrs& attrs) {
  Element("<line x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(x2) + "\" y2=\"" +
              Num(y2) + "\" " + std::string(style),
          attrs);
}

void Document::Rect(double x, double y, double width, double height, std::string_view style,
                    const Attrs& attrs) {
  Element("<rect x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"" + Num(std::max(0.0, width)) +
              "\" height=\"" + Num(std::max(0.0, height)) + "\" " + std::string(style),
          attrs);
}

void Document::Circle(double cx, double cy, double r, std::string_view style, const Attrs& attrs) {
  Element("<circle cx=\"" + Num(cx) + "\" cy=\"" + Num(cy) + "\" r=\"" + Num(r) + "\" " +
              std::string(style),
          attrs);
}

void Document::Polyline(const std::vector<std::pair<double, double>>& points,
                        std::string_view style, const Attrs& attrs) {
  std::string list;
  for (const auto& [x, y] : points) list += (list.empty() ? "" : " ") + Num(x) + "," + Num(y);
  const bool filled = style.find("fill=") != std::string_view::npos;
  Element(
      "<polyline points=\"" + list + "\" " + (filled ? "" : "fill=\"none\" ") + std::string(style),
      attrs);
}

void Document::Text(double x, double y, std::string_view text, double size, std::string_view anchor,
                    std::string_view extra_style, double rotate) {
  body_ += "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" font-size=\"" + Num(size) + "\" " +
           (extra_style.find("font-family=") == std::string_view::npos ? kFont : "") +
           " text-anchor=\"" + std::string(anchor) + "\"";
  if (rotate != 0) {
    body_ += " transform=\"rotate(" + Num(rotate) + " " + Num(x) + " " + Num(y) + ")\"";
  }
  if (!extra_style.empty()) body_ += " " + std::string(extra_style);
  body_ += ">" + Escape(text, false) + "</text>\n";
}

void Document::OpenGroup(const Attrs& attrs) {
  body_ += "<g";
  for (const auto& [name, value] : attrs) body_ += " " + name + "=\"" + Escape(value) + "\"";
  body_ += ">\n";
}

void Document::CloseGroup() { body_ += "</g>\n"; }

void Document::SetHeader(std::string_view title, std::string_view desc,
                         std::string_view metadata_json) {
  header_ = "<title>" + Escape(title, false) + "</title>\n<desc>" + Escape(desc, false) +
            "</desc>\n<metadata id=\"chash-plot-data\">" + Escape(metadata_json, false) +
            "</metadata>\n";
}

std::string Document::Finish() const {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
         "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" +
         Num(width_) + "\" height=\"" + Num(height_) + "\" viewBox=\"0 0 " + Num(width_) + " " +
         Num(height_) + "\">\n" + header_ + "<rect x=\"0\" y=\"0\" width=\"" + Num(width_) +
         "\" height=\"" + Num(height_) + "\" fill=\"#ffffff\"/>\n" + body_ + "</svg>\n";
}

double Scale::Map(double value) const {
  double t;
  if (log) {
    t = (std::log10(value) - std::log10(d0)) / (std::log10(d1) - std::log10(d0));
  } else {
    t = (value - d0) / (d1 - d0);
  }
  if (!std::isfinite(t)) t = 0;
  return p0 + t * (p1 - p0);
}

std::string Scale::Json() const {
  return std::string("{\"log\":") + (log ? "true" : "false") + ",\"domain\":[" +
         Format("%.17g", d0) + "," + Format("%.17g", d1) + "],\"range\":[" + Format("%.17g", p0) +
         "," + Format("%.17g", p1) + "]}";
}

std::vector<Tick> LinearTicks(double d0, double d1, int count, std::string (*label)(double)) {
  std::vector<Tick> ticks;
  const double span = d1 - d0;
  if (!(span > 0) || count < 1) return ticks;
  const double raw = span / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  for (double i = std::ceil(d0 / step - 1e-9); i * step <= d1 + step * 1e-9; i += 1) {
    const double value = std::abs(i * step) < step * 1e-9 ? 0 : i * step;
    ticks.push_back({value, label(value)});
  }
  return ticks;
}

std::vector<Tick> LogTicks(double d0, double d1, std::string (*label)(double)) {
  std::vector<Tick> ticks;
  if (!(d0 > 0 && d1 > d0)) return ticks;
  for (int e = static_cast<int>(std::floor(std::log10(d0))); e <= std::ceil(std::log10(d1)); ++e) {
    for (int m = 1; m <= 9; ++m) {
      const double value = m * std::pow(10.0, e);
      if (value < d0 * (1 - 1e-9) || value > d1 * (1 + 1e-9)) continue;
      const bool major = m == 1 || m == 2 || m == 5;
      ticks.push_back({value, major ? label(value) : ""});
    }
  }
  return ticks;
}

void DrawFrame(Document& doc, const Frame& frame, std::string_view title, std::string_view subtitle,
               std::string_view command) {
  doc.Text(frame.x0(), 24, title, 16, "start", "font-weight=\"bold\"");
  if (!subtitle.empty()) doc.Text(frame.x0(), 44, subtitle, 12, "start", "fill=\"#444444\"");
  doc.Text(8, doc.height() - 10, "made by: " + std::string(command), 10, "start",
           "fill=\"#666666\" font-family=\"DejaVu Sans Mono,monospace\"");
}

void DrawXAxis(Document& doc, const Frame& frame, const Scale& x, const std::vector<Tick>& ticks,
               std::string_view label) {
  const double y1 = frame.y1(doc);
  for (const Tick& tick : ticks) {
    const double px = x.Map(tick.value);
    if (px < frame.x0() - 0.5 || px > frame.x1(doc) + 0.5) continue;
    if (!tick.label.empty()) {
      doc.Line(px, frame.y0(), px, y1, std::string("stroke=\"") + kGridColor + "\"");
      doc.Text(px, y1 + 18, tick.label, 11, "middle");
    }
    doc.Line(px, y1, px, y1 + (tick.label.empty() ? 3 : 6),
             std::string("stroke=\"") + kAxisColor + "\"");
  }
  doc.Line(frame.x0(), y1, frame.x1(doc), y1, std::string("stroke=\"") + kAxisColor + "\"");
  doc.Text((frame.x0() + frame.x1(doc)) / 2, y1 + 40, label, 12, "middle");
}

void DrawYAxis(Document& doc, const Frame& frame, const Scale& y, const std::vector<Tick>& ticks,
               std::string_view label, std::string_view side) {
  const bool left = side == "left";
  const double ax = left ? frame.x0() : frame.x1(doc);
  const double out = left ? -1 : 1;
  for (const Tick& tick : ticks) {
    const double py = y.Map(tick.value);
    if (py < frame.y0() - 0.5 || py > frame.y1(doc) + 0.5) continue;
    if (!tick.label.empty()) {
      if (left)
        doc.Line(frame.x0(), py, frame.x1(doc), py, std::string("stroke=\"") + kGridColor + "\"");
      doc.Text(ax + out * 9, py + 4, tick.label, 11, left ? "end" : "start");
    }
    doc.Line(ax, py, ax + out * (tick.label.empty() ? 3 : 6), py,
             std::string("stroke=\"") + kAxisColor + "\"");
  }
  doc.Line(ax, frame.y0(), ax, frame.y1(doc), std::string("stroke=\"") + kAxisColor + "\"");
  const double lx = left ? 18 : doc.width() - 14;
  doc.Text(lx, (frame.y0() + frame.y1(doc)) / 2, label, 12, "middle", "", left ? -90 : 90);
}

namespace {

// One legend entry: its sample at x..x+32 around cy, its text after.
void LegendEntryAt(Document& doc, double x, double cy, const LegendEntry& e) {
  const std::string color = "\"" + e.color + "\"";
  if (e.kind == "line" || e.kind == "dash") {
    doc.Line(x + 8, cy, x + 32, cy,
             "stroke=" + color + " stroke-width=\"2\"" +
                 (e.kind == "dash" ? " stroke-dasharray=\"6 4\"" : ""));
  } else if (e.kind == "dot") {
    doc.Circle(x + 20, cy, 4, "fill=" + color);
  } else if (e.kind == "circle") {
    doc.Circle(x + 20, cy, 4, "fill=\"#ffffff\" stroke=" + color + " stroke-width=\"1.5\"");
  } else if (e.kind == "square") {
    doc.Rect(x + 16, cy - 4, 8, 8, "fill=" + color);
  } else if (e.kind == "diamond") {
    doc.Polyline({{x + 20, cy - 6}, {x + 26, cy}, {x + 20, cy + 6}, {x + 14, cy}, {x + 20, cy - 6}},
                 "fill=" + color + " stroke=" + color);
  } else {  // band
    doc.Rect(x + 8, cy - 5, 24, 10, "fill=" + color + " fill-opacity=\"0.35\"");
  }
  doc.Text(x + 38, cy + 4, e.text, 11);
}

// About the width of `text` at 11 px in DejaVu Sans.
double TextWidth(std::string_view text) { return 5.9 * static_cast<double>(text.size()); }

}  // namespace

void DrawLegend(Document& doc, double x, double y, const std::vector<LegendEntry>& entries) {
  double width = 0;
  for (const LegendEntry& entry : entries) width = std::max(width, TextWidth(entry.text));
  const double row = 17;
  doc.Rect(x, y, width + 44, row * static_cast<double>(entries.size()) + 8,
           "fill=\"#ffffff\" fill-opacity=\"0.9\" stroke=\"#bbbbbb\"");
  for (size_t i = 0; i < entries.size(); ++i) {
    LegendEntryAt(doc, x, y + 4 + row * static_cast<double>(i) + row / 2, entries[i]);
  }
}

void DrawLegendRow(Document& doc, double x, double y, const std::vector<LegendEntry>& entries) {
  for (const LegendEntry& entry : entries) {
    LegendEntryAt(doc, x, y, entry);
    x += 38 + TextWidth(entry.text) + 16;
  }
}

std::string CommandLine(std::string_view command, const std::vector<std::string_view>& args) {
  std::string line = "chash " + std::string(command);
  for (const std::string_view arg : args) {
    const bool plain = !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) ||
             std::string_view("-_./=,:%+@").find(c) != std::string_view::npos;
    });
    if (plain) {
      line += " " + std::string(arg);
      continue;
    }
    line += " '";
    for (const char c : arg) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += "'";
  }
  return line;
}

}  // namespace chash::cli::svg
