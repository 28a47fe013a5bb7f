#include "tools/attnscope/report/svg_chart.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace attnscope::cli {

namespace {

constexpr int kLabelWidth = 110;
constexpr int kBarMaxWidth = 420;
constexpr int kRowHeight = 24;
constexpr int kBarsTop = 36;
constexpr int kWidth = kLabelWidth + kBarMaxWidth + 120;

}  // namespace

std::string escape_xml(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string bar_chart_svg(const std::string& title, const std::string& unit,
                          const std::vector<Bar>& bars) {
  double largest = 0;
  for (const Bar& bar : bars) largest = std::max(largest, bar.value);
  const int height = kBarsTop + kRowHeight * static_cast<int>(bars.size()) + 12;
  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"13\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"8\" y=\"22\" font-weight=\"bold\">" << escape_xml(title) << "</text>\n";
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const int y = kBarsTop + kRowHeight * static_cast<int>(i);
    const double width = largest > 0 ? kBarMaxWidth * bars[i].value / largest : 0.0;
    svg << std::fixed << std::setprecision(1) << "<text x=\"" << kLabelWidth - 8 << "\" y=\""
        << y + 16 << "\" text-anchor=\"end\">" << escape_xml(bars[i].label) << "</text>\n"
        << "<rect x=\"" << kLabelWidth << "\" y=\"" << y + 4 << "\" width=\"" << width
        << "\" height=\"" << kRowHeight - 8 << "\" fill=\"#4878a8\"/>\n"
        << "<text x=\"" << kLabelWidth + width + 6 << "\" y=\"" << y + 16 << "\">"
        << std::setprecision(3) << bars[i].value << " " << escape_xml(unit) << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace attnscope::cli
