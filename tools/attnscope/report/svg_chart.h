// A horizontal bar chart as a standalone SVG file, written by hand (no library): one bar per
// label, scaled to the largest value, the value printed at the end of each bar.
//
// Layout: a title line, then one 24-pixel row per bar; label column 110 px, bars up to 420 px.
// Cost: O(bars).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace attnscope::cli {

struct Bar {
  std::string label;
  double value = 0;
};

// `text` with the characters XML gives a meaning to (& < > ") escaped: for every text an SVG
// file shows.
std::string escape_xml(const std::string& text);

// `unit` follows every printed value ("ms"). Values must be >= 0.
std::string bar_chart_svg(const std::string& title, const std::string& unit,
                          const std::vector<Bar>& bars);

}  // namespace attnscope::cli
