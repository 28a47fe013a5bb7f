// How reports write numbers, intervals and comparisons into their JSON and Markdown, so that
// `compare` and `study` read alike: an interval is [low, high]; a comparison of two cells is its
// ratio, interval, verdict (finding_rule.h) and how much the two could differ.
#pragma once

#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tools/attnscope/finding_rule.h"
#include "tools/attnscope/statistics.h"

namespace attnscope::cli {

// `value` with `decimals` digits after the point.
inline std::string fixed(double value, int decimals) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(decimals) << value;
  return text.str();
}

// "[1.02, 1.10]" from a JSON interval.
inline std::string interval_text(const nlohmann::json& interval, int decimals) {
  return "[" + fixed(interval[0], decimals) + ", " + fixed(interval[1], decimals) + "]";
}

inline nlohmann::json interval_json(const Interval& interval) {
  return {interval.low, interval.high};
}

// {"ratio", "interval", "verdict", "could_differ_percent"} for time(second) / time(first).
inline nlohmann::json comparison_json(const Estimate& ratio) {
  return {{"ratio", ratio.value},
          {"interval", interval_json(ratio.interval)},
          {"verdict", verdict_name(verdict_of(ratio.interval))},
          {"could_differ_percent", could_differ_percent(ratio.interval)}};
}

}  // namespace attnscope::cli
