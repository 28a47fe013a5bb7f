// A heat map as a standalone SVG file, written by hand as svg_chart.h's bar charts are: one cell
// per (row, column) value, coloured on a log10 scale from the smallest positive value (light) to
// the largest (dark), cells of exactly 0 in grey; a legend beside it gives the scale. `diverge
// --heatmap` draws layers x heads of the largest attention-output difference.
//
// Layout: a title line, column numbers above the cells, row numbers left of them; cells of 22 x
// 16 pixels, each with a tooltip (<title>) giving its value. Cost: O(rows x columns).
#pragma once

#include <string>
#include <vector>

namespace attnscope::cli {

struct HeatMap {
  std::string title;
  std::string rows_name, columns_name;     // "layer", "head"
  std::string unit;                        // what the legend says the colours measure
  std::vector<std::vector<double>> cells;  // [row][column], every value >= 0
};

std::string heatmap_svg(const HeatMap& map);

}  // namespace attnscope::cli
