// A small SVG writer for the CLI's --plot pictures: elements, XML escaping,
// linear and log scales with ticks, and a chart frame (title, axes with
// units, the command that made the picture, a JSON <metadata> block with the
// values drawn). Output is deterministic: the same calls give the same bytes
// (fixed number formats, no time, no locale).
#ifndef CHASH_TOOLS_CLI_SVG_H_
#define CHASH_TOOLS_CLI_SVG_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace chash::cli::svg {

// `text` with & < > (and in an attribute value " ') as XML entities; bytes
// below 0x20 other than tab and newline (not allowed in XML 1.0) become '?'.
std::string Escape(std::string_view text, bool attribute = true);
// A coordinate or length: at most 2 decimals, trailing zeros dropped ("12.5").
std::string Num(double value);

using Attrs = std::vector<std::pair<std::string, std::string>>;

// `value` through snprintf's `format` (one double), for labels and data-*.
std::string Format(const char* format, double value);

class Document {
 public:
  Document(double width, double height);

  // `attrs` are written as given, values escaped; `style` is raw attribute
  // text (fill="..." stroke="..."), written by this file's callers only.
  void Line(double x1, double y1, double x2, double y2, std::string_view style,
            const Attrs& attrs = {});
  void Rect(double x, double y, double width, double height, std::string_view style,
            const Attrs& attrs = {});
  void Circle(double cx, double cy, double r, std::string_view style, const Attrs& attrs = {});
  void Polyline(const std::vector<std::pair<double, double>>& points, std::string_view style,
                const Attrs& attrs = {});
  // anchor: start, middle or end; rotate in degrees about (x, y).
  void Text(double x, double y, std::string_view text, double size = 12,
            std::string_view anchor = "start", std::string_view extra_style = "",
            double rotate = 0);
  void OpenGroup(const Attrs& attrs);
  void CloseGroup();
  // <title>, <desc> and <metadata> (JSON text, escaped) right after <svg>.
  void SetHeader(std::string_view title, std::string_view desc, std::string_view metadata_json);

  std::string Finish() const;
  double width() const { return width_; }
  double height() const { return height_; }

 private:
  void Element(std::string_view open, const Attrs& attrs);
  double width_, height_;
  std::string header_;
  std::string body_;
};

// Maps a domain [d0, d1] to pixels [p0, p1], linearly or in log10.
struct Scale {
  double d0 = 0, d1 = 1, p0 = 0, p1 = 1;
  bool log = false;
  double Map(double value) const;
  // {"log":B,"domain":[d0,d1],"range":[p0,p1]}: how a test maps values back.
  std::string Json() const;
};

struct Tick {
  double value;
  std::string label;  // empty: a minor tick
};
// 1-2-5 steps, about `count` ticks over [d0, d1], each labelled by `label`.
std::vector<Tick> LinearTicks(double d0, double d1, int count, std::string (*label)(double));
// 1, 2, 5 x 10^n inside [d0, d1] (d0 > 0), labelled by `label`, minor ticks
// at the other integers of each decade.
std::vector<Tick> LogTicks(double d0, double d1, std::string (*label)(double));

// The plotting area of a chart and its decorations.
struct Frame {
  double left = 80, top = 64, right = 90, bottom = 86;
  double x0() const { return left; }
  double y0() const { return top; }
  double x1(const Document& doc) const { return doc.width() - right; }
  double y1(const Document& doc) const { return doc.height() - bottom; }
};

// Title on top, `command` (the command line that made it) at the bottom
// left, the plot box, grid lines and tick labels of x and y, axis titles.
void DrawFrame(Document& doc, const Frame& frame, std::string_view title, std::string_view subtitle,
               std::string_view command);
void DrawXAxis(Document& doc, const Frame& frame, const Scale& x, const std::vector<Tick>& ticks,
               std::string_view label);
// side: "left" or "right" (a second axis: ticks only, no grid).
void DrawYAxis(Document& doc, const Frame& frame, const Scale& y, const std::vector<Tick>& ticks,
               std::string_view label, std::string_view side = "left");

// A legend box at (x, y) (its top-left): entries of (style sample, text).
struct LegendEntry {
  std::string kind;  // "line", "dash", "dot", "circle", "square", "diamond", "band"
  std::string color;
  std::string text;
};
void DrawLegend(Document& doc, double x, double y, const std::vector<LegendEntry>& entries);
// The same entries in one row starting at (x, y), no box: above a plot.
void DrawLegendRow(Document& doc, double x, double y, const std::vector<LegendEntry>& entries);

// A shell-quoted command line: "chash plan --servers 'my fleet.txt'".
std::string CommandLine(std::string_view command, const std::vector<std::string_view>& args);

}  // namespace chash::cli::svg

#endif  // CHASH_TOOLS_CLI_SVG_H_
