// How many repetitions a timed comparison runs: rounds of every cell, at least --reps; with
// --budget-s more rounds follow while the widest interval that decides a finding is wider than
// --target-percent of its ratio and one more round (at the average round's time so far) still
// fits in the budget; --max-reps caps them. Shared by `compare` and `study`, with the loop that
// runs the rounds (run_rounds).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "tools/attnscope/cli/cli11_fwd.h"

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

// What a run of rounds did, for its report.
struct RoundsRun {
  RepetitionPlan plan;
  int rounds = 0;  // rounds run (each gives every cell one repetition)
  double elapsed_s = 0;
  nlohmann::json conditions;  // RunConditions::to_json()
};

// Calls round(r) for r = 0, 1, ... while plan.another_round says one more is due; the load and
// clock of the machine (RunConditions, machine_info.h) are sampled before, after each round and
// at the end. `threads`: the run's own threads.
RoundsRun run_rounds(const RepetitionPlan& plan, int threads,
                     const std::function<double()>& widest_percent,
                     const std::function<void(int round)>& round);

}  // namespace attnscope::cli
