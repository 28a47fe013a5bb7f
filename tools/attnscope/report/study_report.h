// The report of `attnscope study`: the seed study's experiment (causal attention, every
// backend) told as "guess first, then look": the prediction from each backend's cost model, the
// observation (profiler, allocator, timings with intervals), and the study's published A100
// numbers beside them, with where this machine's ordering agrees or differs and why.
//
// report.json is the source of truth; report.md and the chart are rendered from it. Times are
// per call; "x inplace" is the backend's median over inplace's (the in-place naive baseline of
// the study), with a 95% bootstrap interval. The orderings the study published (flash before
// inplace before math) are checked with the finding rule (finding_rule.h) at intervals that
// hold together at 95% over all pairs of backends (Bonferroni).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ops/attention/backend.h"
#include "tools/attnscope/measure/repetition_plan.h"
#include "tools/attnscope/report/roofline_svg.h"

namespace attnscope::cli {

struct StudyBackend {
  std::string backend;
  std::optional<std::string> unsupported_reason;  // the Error a backend threw
  // Prediction (Backend::cost_model).
  ops::attention::CostModel predicted;
  // Observation: one profiled call, and the unprofiled timed calls (one per round).
  int steps_observed_min = 0, steps_observed_max = 0;
  std::size_t temporary_bytes = 0;   // the allocator's peak above the inputs during the call
  std::vector<std::string> kernels;  // distinct kernel names (GPU only), launch order
  std::vector<double> times_ms;
  std::string trace_file;  // the Chrome trace of the profiled call, relative to the report
};

struct StudySetup {
  ops::attention::Shape shape;  // causal prefill: q_len = kv_len
  std::string device;           // Context::describe()
  std::string cpu;
  int threads = 0;
  RoundsRun rounds;
};

// The widest deciding interval (relative width of the pairs' ratios at the adjusted level):
// the adaptive loop stops once it is below the target.
double study_widest_width(const std::vector<StudyBackend>& backends);

nlohmann::json build_study_report(const StudySetup& setup,
                                  const std::vector<StudyBackend>& backends);
std::string study_markdown(const nlohmann::json& report);
// ("time.svg", SVG): median ms per call per backend.
std::pair<std::string, std::string> study_chart(const nlohmann::json& report);
// ("roofline.svg", SVG): every backend that ran as a point at its cost model's FLOPs over the
// bytes it moves at least (temporaries included) and its median time, under `roofs`.
std::pair<std::string, std::string> study_roofline(const nlohmann::json& report,
                                                   const Roofs& roofs);

}  // namespace attnscope::cli
