#include "tools/attnscope/report/svg_heatmap.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "tools/attnscope/report/svg_chart.h"

namespace attnscope::cli {

namespace {

constexpr int kCellWidth = 22;
constexpr int kCellHeight = 16;
constexpr int kCellsLeft = 70;  // row numbers and the rows' name
constexpr int kCellsTop = 64;   // title, the columns' name and their numbers
constexpr int kLegendWidth = 14;
constexpr int kLegendHeight = 160;
const char* const kZeroColour = "#e6e6e6";

// The colour scale, light to dark: three stops, linear between them in RGB.
struct Rgb {
  double r, g, b;
};
constexpr Rgb kStops[] = {{253, 224, 197}, {227, 74, 51}, {90, 0, 0}};

std::string colour_at(double t) {  // t in [0, 1]
  const double scaled = std::clamp(t, 0.0, 1.0) * 2.0;
  const int i = std::min(static_cast<int>(scaled), 1);
  const double f = scaled - i;
  const Rgb& a = kStops[i];
  const Rgb& b = kStops[i + 1];
  char text[8];
  std::snprintf(text, sizeof(text), "#%02x%02x%02x", static_cast<int>(a.r + f * (b.r - a.r) + 0.5),
                static_cast<int>(a.g + f * (b.g - a.g) + 0.5),
                static_cast<int>(a.b + f * (b.b - a.b) + 0.5));
  return text;
}

std::string short_number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g", value);
  return text;
}

}  // namespace

std::string heatmap_svg(const HeatMap& map) {
  const int rows = static_cast<int>(map.cells.size());
  int columns = 0;
  double lowest = 0, highest = 0;  // the positive values' range
  for (const std::vector<double>& row : map.cells) {
    columns = std::max(columns, static_cast<int>(row.size()));
    for (double value : row) {
      if (value <= 0) continue;
      lowest = lowest > 0 ? std::min(lowest, value) : value;
      highest = std::max(highest, value);
    }
  }
  // log10 of the scale's ends; one decade wide at least, so a single value still has a scale.
  const double low = lowest > 0 ? std::floor(std::log10(lowest)) : 0.0;
  const double high = highest > 0 ? std::max(std::ceil(std::log10(highest)), low + 1) : 1.0;
  const auto position = [&](double value) { return (std::log10(value) - low) / (high - low); };

  const int legend_x = kCellsLeft + columns * kCellWidth + 40;
  const int width = legend_x + kLegendWidth + 120;
  const int height = kCellsTop + std::max(rows * kCellHeight, kLegendHeight + 40) + 24;
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"8\" y=\"22\" font-size=\"13\" font-weight=\"bold\">" << escape_xml(map.title)
      << "</text>\n"
      << "<text x=\"" << kCellsLeft << "\" y=\"" << kCellsTop - 22 << "\">"
      << escape_xml(map.columns_name) << "</text>\n"
      << "<text x=\"8\" y=\"" << kCellsTop - 6 << "\">" << escape_xml(map.rows_name) << "</text>\n";
  for (int c = 0; c < columns; ++c) {
    svg << "<text x=\"" << kCellsLeft + c * kCellWidth + kCellWidth / 2 << "\" y=\""
        << kCellsTop - 6 << "\" text-anchor=\"middle\">" << c << "</text>\n";
  }
  for (int r = 0; r < rows; ++r) {
    const int y = kCellsTop + r * kCellHeight;
    svg << "<text x=\"" << kCellsLeft - 6 << "\" y=\"" << y + 12 << "\" text-anchor=\"end\">" << r
        << "</text>\n";
    const std::vector<double>& row = map.cells[static_cast<std::size_t>(r)];
    for (std::size_t c = 0; c < row.size(); ++c) {
      const double value = row[c];
      svg << "<rect x=\"" << kCellsLeft + static_cast<int>(c) * kCellWidth << "\" y=\"" << y
          << "\" width=\"" << kCellWidth - 1 << "\" height=\"" << kCellHeight - 1 << "\" fill=\""
          << (value > 0 ? colour_at(position(value)) : kZeroColour) << "\"><title>"
          << escape_xml(map.rows_name) << " " << r << ", " << escape_xml(map.columns_name) << " "
          << c << ": " << short_number(value) << "</title></rect>\n";
    }
  }
  // The legend: the scale from 10^high (top) down to 10^low, a label per decade, then 0.
  svg << "<defs><linearGradient id=\"scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">"
      << "<stop offset=\"0\" stop-color=\"" << colour_at(0) << "\"/><stop offset=\"0.5\" "
      << "stop-color=\"" << colour_at(0.5) << "\"/><stop offset=\"1\" stop-color=\"" << colour_at(1)
      << "\"/></linearGradient></defs>\n"
      << "<text x=\"" << legend_x << "\" y=\"" << kCellsTop - 6 << "\">" << escape_xml(map.unit)
      << "</text>\n"
      << "<rect x=\"" << legend_x << "\" y=\"" << kCellsTop << "\" width=\"" << kLegendWidth
      << "\" height=\"" << kLegendHeight << "\" fill=\"url(#scale)\"/>\n";
  const int decades = static_cast<int>(high - low);
  const int step = std::max(1, decades / 8);
  for (int d = 0; d <= decades; d += step) {
    const int y = kCellsTop + kLegendHeight - kLegendHeight * d / decades;
    svg << "<text x=\"" << legend_x + kLegendWidth + 4 << "\" y=\"" << y + 4 << "\">1e"
        << static_cast<int>(low) + d << "</text>\n";
  }
  svg << "<rect x=\"" << legend_x << "\" y=\"" << kCellsTop + kLegendHeight + 12 << "\" width=\""
      << kLegendWidth << "\" height=\"" << kCellHeight - 1 << "\" fill=\"" << kZeroColour
      << "\"/>\n"
      << "<text x=\"" << legend_x + kLegendWidth + 4 << "\" y=\"" << kCellsTop + kLegendHeight + 24
      << "\">0 (equal)</text>\n"
      << "</svg>\n";
  return svg.str();
}

}  // namespace attnscope::cli
