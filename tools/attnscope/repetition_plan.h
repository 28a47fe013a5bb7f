// How many repetitions a timed comparison runs: rounds of every cell, at least --reps; with
// --budget-s more rounds follow while the widest interval that decides a finding is wider than
// --target-percent of its ratio and one more round (at the average round's time so far) still
// fits in the budget; --max-reps caps them. Shared by `compare` and `study`.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <nlohmann/json.hpp>

namespace attnscope::cli {

struct RepetitionPlan {
  int min_reps = 5;
  int max_reps = 100;
  double budget_s = 0;  // 0: exactly min_reps rounds
  double target_percent = 5;

  // Whether round number rounds + 1 is due after `elapsed_s` seconds; `widest_percent` is asked
  // only when the answer depends on it.
  bool another_round(int rounds, double elapsed_s,
                     const std::function<double()>& widest_percent) const;
  // min/max repetitions, budget and target, for a report's setup.
  nlohmann::json to_json() const;
};

// --reps, --budget-s, --target-percent and --max-reps. `what` says what one round runs.
void add_repetition_flags(CLI::App& app, RepetitionPlan& plan, const std::string& what);

}  // namespace attnscope::cli
