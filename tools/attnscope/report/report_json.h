// How reports write numbers, intervals and comparisons into their JSON and Markdown, so that
// `compare` and `study` read alike: an interval is [low, high]; a comparison of two cells is its
// ratio, interval, verdict (finding_rule.h) and how much the two could differ; the "statistics"
// block says how the intervals were made; report_skeleton is what every timed report starts
// with. (The Markdown parts are in markdown.h.)
#pragma once

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "tools/attnscope/measure/repetition_plan.h"
#include "tools/attnscope/report/finding_rule.h"
#include "tools/attnscope/report/statistics.h"

namespace attnscope::cli {

// The confidence of the tables' intervals, and of all the findings' comparisons together.
inline constexpr double kReportConfidence = 0.95;

// `value` with `decimals` digits after the point.
inline std::string fixed(double value, int decimals) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(decimals) << value;
  return text.str();
}

// `value` with at least `digits` significant digits (and at least 2 decimals): 0.0000338, not
// 0.00, for a small GFLOP count.
inline std::string significant(double value, int digits) {
  int decimals = 2;
  if (value != 0.0 && std::abs(value) < 1.0) {
    decimals =
        std::max(decimals, digits - 1 - static_cast<int>(std::floor(std::log10(std::abs(value)))));
  }
  return fixed(value, decimals);
}

// The fewest repetitions whose bootstrap intervals mean much (statistics.h: below it the
// resampled medians take only a few values); a report with fewer says so beside its brackets.
inline constexpr int kFewestMeaningfulRepetitions = 5;

inline std::string few_repetitions_note(int repetitions) {
  if (repetitions >= kFewestMeaningfulRepetitions) return "";
  return " With only " + std::to_string(repetitions) +
         " repetitions these are not real 95% intervals (a bootstrap of so few medians takes a "
         "handful of values): read them as the spread seen, and use --reps " +
         std::to_string(kFewestMeaningfulRepetitions) + " or more to decide.";
}

// "[1.02, 1.10]" from a JSON interval. (Appended, not `"[" + ...`: once that operator+ is
// inlined, GCC 12 at -O3 can warn of an overlap that cannot happen, -Wrestrict's known false
// positive in std::string.)
inline std::string interval_text(const nlohmann::json& interval, int decimals) {
  std::string text = "[";
  text += fixed(interval[0], decimals);
  text += ", ";
  text += fixed(interval[1], decimals);
  text += "]";
  return text;
}

inline nlohmann::json interval_json(const Interval& interval) {
  return {interval.low, interval.high};
}

// An estimate as a report's table row holds it: {value_key: its value, interval_key: its
// interval}, both null when there is none (a ratio to a baseline that did not run).
inline nlohmann::json estimate_fields(const std::string& value_key, const std::string& interval_key,
                                      const std::optional<Estimate>& estimate) {
  if (!estimate) return {{value_key, nullptr}, {interval_key, nullptr}};
  return {{value_key, estimate->value}, {interval_key, interval_json(estimate->interval)}};
}

// {"ratio", "interval", "verdict", "could_differ_percent"} for time(second) / time(first).
inline nlohmann::json comparison_json(const Estimate& ratio) {
  return {{"ratio", ratio.value},
          {"interval", interval_json(ratio.interval)},
          {"verdict", verdict_name(verdict_of(ratio.interval))},
          {"could_differ_percent", could_differ_percent(ratio.interval)}};
}

// The report's "statistics": the bootstrap, the tables' and the family's confidence, and the
// `decisions` the findings make, each at `per_decision_confidence` (per_interval_confidence),
// with the widest deciding interval in percent of its ratio.
inline nlohmann::json statistics_json(int decisions, double per_decision_confidence,
                                      double widest_deciding_width_percent) {
  return {{"method", "percentile bootstrap over repetitions"},
          {"resamples", kResamples},
          {"table_confidence", kReportConfidence},
          {"family_confidence", kReportConfidence},
          {"decisions", decisions},
          {"per_decision_confidence", per_decision_confidence},
          {"widest_deciding_width_percent", widest_deciding_width_percent}};
}

// What every timed report (compare, study) starts with: its format and version, its `setup`
// with the rounds run and their plan, the conditions of the run and its `statistics`
// (statistics_json). The caller adds its results, then the findings computed from them.
inline nlohmann::json report_skeleton(const std::string& format, int version, nlohmann::json setup,
                                      const RoundsRun& rounds, nlohmann::json statistics) {
  setup["rounds"] = rounds.rounds;
  setup["elapsed_s"] = rounds.elapsed_s;
  setup.update(rounds.plan.to_json());
  return {{"format", format},
          {"version", version},
          {"setup", std::move(setup)},
          {"conditions", rounds.conditions},
          {"statistics", std::move(statistics)}};
}

}  // namespace attnscope::cli
