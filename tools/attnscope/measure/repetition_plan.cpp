// The adaptive number of repetitions (tools/attnscope/measure/repetition_plan.h).
#include "tools/attnscope/measure/repetition_plan.h"

#include <CLI/CLI.hpp>
#include <chrono>

#include "tools/attnscope/cli/elapsed.h"
#include "tools/attnscope/cli/machine_info.h"

namespace attnscope::cli {

bool RepetitionPlan::another_round(int rounds, double elapsed_s,
                                   const std::function<double()>& widest_percent) const {
  if (rounds < min_reps) return true;
  if (budget_s <= 0 || rounds >= max_reps) return false;
  if (elapsed_s + elapsed_s / rounds > budget_s) return false;
  return widest_percent() > target_percent;
}

nlohmann::json RepetitionPlan::to_json() const {
  return {{"min_repetitions", min_reps},
          {"max_repetitions", max_reps},
          {"budget_s", budget_s},
          {"target_percent", target_percent}};
}

void add_repetition_flags(CLI::App& app, RepetitionPlan& plan, const std::string& what) {
  app.add_option("--reps", plan.min_reps, "Rounds at least (each " + what + ")")
      ->capture_default_str()
      ->check(CLI::Range(2, 1000));
  app.add_option("--budget-s", plan.budget_s,
                 "Seconds to spend on more rounds until the intervals that decide the findings "
                 "are narrower than --target-percent (0: exactly --reps rounds)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--target-percent", plan.target_percent,
                 "Width of the deciding ratio intervals to stop at, in percent of the ratio")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 1000.0));
  app.add_option("--max-reps", plan.max_reps, "Rounds at most")
      ->capture_default_str()
      ->check(CLI::Range(2, 1000));
}

RoundsRun run_rounds(const RepetitionPlan& plan, int threads,
                     const std::function<double()>& widest_percent,
                     const std::function<void(int round)>& round) {
  RunConditions conditions;
  conditions.start(threads);
  const auto start = std::chrono::steady_clock::now();
  RoundsRun run;
  run.plan = plan;
  while (plan.another_round(run.rounds, seconds_since(start), widest_percent)) {
    round(run.rounds);
    ++run.rounds;
    conditions.sample();
  }
  conditions.finish();
  run.elapsed_s = seconds_since(start);
  run.conditions = conditions.to_json();
  return run;
}

}  // namespace attnscope::cli
