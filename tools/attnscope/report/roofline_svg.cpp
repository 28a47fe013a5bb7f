#include "tools/attnscope/report/roofline_svg.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

#include "tools/attnscope/report/svg_chart.h"

namespace attnscope::cli {

namespace {

constexpr double kImageWidth = 760, kImageHeight = 520;
constexpr double kPlotLeft = 80, kPlotRight = 560, kPlotTop = 44,
                 kPlotBottom = 440;  // the plot area
constexpr const char* kPalette[] = {"#4878a8", "#d0603a", "#5a9e4b", "#8a5fb0",
                                    "#c4a22f", "#3aa6a6", "#b0457a", "#6b6b6b"};
constexpr const char* kOtherOps = "#9a9a9a";

// A log axis from 10^low to 10^high (whole decades) onto [from, to] pixels.
struct LogAxis {
  double low = 0, high = 1, from = 0, to = 1;
  double pixel(double value) const {
    return from + (std::log10(value) - low) / (high - low) * (to - from);
  }
};

// Whole decades around [smallest, largest], one more on each side.
LogAxis decades(double smallest, double largest, double from, double to) {
  return {std::floor(std::log10(smallest)) - 1, std::ceil(std::log10(largest)) + 1, from, to};
}

// 10^k as a short number: 0.01, 1, 100, 1e+04.
std::string decade_label(int k, double unit) {
  std::ostringstream text;
  const double value = std::pow(10.0, k) / unit;
  if (value >= 1e-2 && value < 1e4) {
    text << value;
  } else {
    text << std::setprecision(0) << std::scientific << value;
  }
  return text.str();
}

bool drawable(const RooflinePoint& p) { return p.flops > 0 && p.bytes > 0 && p.seconds > 0; }

}  // namespace

std::string roofline_svg(const std::string& title, const Roofs& roofs,
                         const std::vector<RooflinePoint>& points, const std::string& legend_note) {
  const double ridge = roofs.flops_per_s / roofs.bytes_per_s;
  double min_x = ridge, max_x = ridge, min_y = roofs.flops_per_s, max_y = roofs.flops_per_s;
  for (const RooflinePoint& p : points) {
    if (!drawable(p)) continue;
    min_x = std::min(min_x, p.flops / p.bytes);
    max_x = std::max(max_x, p.flops / p.bytes);
    min_y = std::min(min_y, p.flops / p.seconds);
    max_y = std::max(max_y, p.flops / p.seconds);
  }
  const LogAxis x = decades(min_x, max_x, kPlotLeft, kPlotRight);
  LogAxis y = decades(min_y, max_y, kPlotBottom, kPlotTop);
  y.high = std::ceil(std::log10(3 * max_y));  // room above the compute roof for its label, no more

  std::ostringstream svg;
  svg << std::fixed << std::setprecision(1);
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kImageWidth << "\" height=\""
      << kImageHeight << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"8\" y=\"22\" font-weight=\"bold\" font-size=\"14\">" << escape_xml(title)
      << "</text>\n";
  // Decade grid and labels.
  for (int k = static_cast<int>(x.low); k <= static_cast<int>(x.high); ++k) {
    const double px = x.pixel(std::pow(10.0, k));
    svg << "<line x1=\"" << px << "\" y1=\"" << kPlotTop << "\" x2=\"" << px << "\" y2=\""
        << kPlotBottom << "\" stroke=\"#e4e4e4\"/>\n<text x=\"" << px << "\" y=\""
        << kPlotBottom + 16 << "\" text-anchor=\"middle\">" << decade_label(k, 1) << "</text>\n";
  }
  for (int k = static_cast<int>(y.low); k <= static_cast<int>(y.high); ++k) {
    const double py = y.pixel(std::pow(10.0, k));
    svg << "<line x1=\"" << kPlotLeft << "\" y1=\"" << py << "\" x2=\"" << kPlotRight << "\" y2=\""
        << py << "\" stroke=\"#e4e4e4\"/>\n<text x=\"" << kPlotLeft - 6 << "\" y=\"" << py + 4
        << "\" text-anchor=\"end\">" << decade_label(k, 1e9) << "</text>\n";
  }
  svg << "<rect x=\"" << kPlotLeft << "\" y=\"" << kPlotTop << "\" width=\""
      << kPlotRight - kPlotLeft << "\" height=\"" << kPlotBottom - kPlotTop
      << "\" fill=\"none\" stroke=\"#444\"/>\n"
      << "<text x=\"" << (kPlotLeft + kPlotRight) / 2 << "\" y=\"" << kPlotBottom + 34
      << "\" text-anchor=\"middle\">arithmetic intensity (FLOP per byte moved)</text>\n"
      << "<text x=\"18\" y=\"" << (kPlotTop + kPlotBottom) / 2
      << "\" text-anchor=\"middle\" transform=\"rotate(-90 18 " << (kPlotTop + kPlotBottom) / 2
      << ")\">GFLOP/s</text>\n";

  // The roof: bandwidth x intensity up to the ridge, then flat, clipped to the plot.
  const double x_start = std::max(std::pow(10.0, x.low), std::pow(10.0, y.low) / roofs.bytes_per_s);
  const double x_end = std::pow(10.0, x.high);
  svg << "<polyline fill=\"none\" stroke=\"#222\" stroke-width=\"2\" points=\"" << x.pixel(x_start)
      << "," << y.pixel(x_start * roofs.bytes_per_s) << " " << x.pixel(ridge) << ","
      << y.pixel(roofs.flops_per_s) << " " << x.pixel(x_end) << "," << y.pixel(roofs.flops_per_s)
      << "\"/>\n";
  std::ostringstream roof_labels;
  roof_labels << std::setprecision(1) << std::fixed << roofs.flops_per_s / 1e9 << " GFLOP/s";
  svg << "<text x=\"" << kPlotRight - 4 << "\" y=\"" << y.pixel(roofs.flops_per_s) - 6
      << "\" text-anchor=\"end\">" << roof_labels.str() << "</text>\n";
  std::ostringstream bandwidth;
  bandwidth << std::setprecision(1) << std::fixed << roofs.bytes_per_s / 1e9 << " GB/s";
  svg << "<text x=\"" << x.pixel(x_start) + 6 << "\" y=\""
      << y.pixel(x_start * roofs.bytes_per_s) - 8 << "\">" << bandwidth.str() << "</text>\n"
      << "<line x1=\"" << x.pixel(ridge) << "\" y1=\"" << y.pixel(roofs.flops_per_s) << "\" x2=\""
      << x.pixel(ridge) << "\" y2=\"" << kPlotBottom
      << "\" stroke=\"#222\" stroke-dasharray=\"3,3\"/>\n"
      << "<text x=\"" << x.pixel(ridge) + 4 << "\" y=\"" << kPlotBottom - 6 << "\">ridge "
      << std::setprecision(2) << ridge << std::setprecision(1) << "</text>\n";

  // The points, a colour per series in order of first appearance.
  std::map<std::string, std::string> colours;
  std::vector<std::string> series_order;
  std::vector<std::string> not_drawn;
  for (const RooflinePoint& p : points) {
    if (!drawable(p)) {
      if (std::find(not_drawn.begin(), not_drawn.end(), p.label) == not_drawn.end()) {
        not_drawn.push_back(p.label);
      }
      continue;
    }
    if (!colours.contains(p.series)) {
      const std::size_t n = series_order.size();
      colours[p.series] = p.series == "other ops" ? kOtherOps : kPalette[n % std::size(kPalette)];
      series_order.push_back(p.series);
    }
    const std::string& colour = colours[p.series];
    const double px = x.pixel(p.flops / p.bytes), py = y.pixel(p.flops / p.seconds);
    svg << "<circle cx=\"" << px << "\" cy=\"" << py << "\" r=\"5\" fill=\""
        << (p.hollow ? "white" : colour) << "\" stroke=\"" << colour << "\" stroke-width=\"2\">"
        << "<title>" << escape_xml(p.label) << "</title></circle>\n"
        << "<text x=\"" << px + 8 << "\" y=\"" << py + 4 << "\" font-size=\"10\" fill=\"#333\">"
        << escape_xml(p.label) << "</text>\n";
  }
  // Legend, right of the plot.
  double ly = kPlotTop + 8;
  for (const std::string& series : series_order) {
    svg << "<circle cx=\"" << kPlotRight + 22 << "\" cy=\"" << ly << "\" r=\"5\" fill=\""
        << colours[series] << "\"/>\n<text x=\"" << kPlotRight + 32 << "\" y=\"" << ly + 4 << "\">"
        << escape_xml(series) << "</text>\n";
    ly += 18;
  }
  if (!legend_note.empty()) {
    svg << "<text x=\"" << kPlotRight + 14 << "\" y=\"" << ly + 8 << "\" font-size=\"10\">"
        << escape_xml(legend_note) << "</text>\n";
  }
  double footer = kPlotBottom + 56;
  svg << "<text x=\"8\" y=\"" << footer << "\" font-size=\"10\">" << escape_xml(roofs.caption)
      << "</text>\n";
  if (!not_drawn.empty()) {
    std::string names;
    for (const std::string& name : not_drawn) names += (names.empty() ? "" : ", ") + name;
    footer += 14;
    svg << "<text x=\"8\" y=\"" << footer
        << "\" font-size=\"10\">not drawn (no FLOPs): " << escape_xml(names) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace attnscope::cli
