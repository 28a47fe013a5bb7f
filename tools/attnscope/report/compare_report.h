// The comparison report of `attnscope compare`: measured cases in, report.json, report.md and
// SVG bar charts out, with findings written as sentences computed from the numbers.
//
// report.json is the source of truth: the Markdown and the charts are rendered from it, so
// every number in them can be recomputed from the JSON (speedup = naive's median / the
// backend's median, per phase and prompt length). Each repetition is one sample: its prefill
// time, the median of its unprofiled decode steps, and its profiling overhead (median profiled
// over median unprofiled decode step, minus 1), so runs, not steps, are what the intervals
// count (steps of one run share its conditions and are not independent).
//
// The noise rule (tools/attnscope/report/statistics.h, finding_rule.h): every median and ratio
// carries a percentile-bootstrap interval. The tables show 95% intervals. The findings are decided
// by the comparisons: every pair of backends per phase and prompt length, plus the pooled profiling
// overhead, with Bonferroni-adjusted intervals so that all of them hold together at 95%; a
// backend "beats" another only when that interval excludes 1.0, otherwise the finding says the
// two are indistinguishable and by how much they could differ. "Simpler" and "more elaborate"
// follow the registry's order (naive, inplace, math, fused, flash).
//
// On a GPU the steps are timed to the end of their kernels, and attention shares are device
// times (the kernels inside the attention scopes over those inside the forward step).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/attnscope/measure/repetition_plan.h"

namespace attnscope::cli {

// One backend at one prompt length, over all repetitions.
struct CaseResult {
  std::string backend;
  std::int64_t prompt_len = 0;
  std::vector<double> prefill_ms;          // one per repetition (profiled prefill, wall clock)
  std::vector<double> decode_ms;           // per repetition, the median unprofiled decode step
  std::vector<double> decode_profiled_ms;  // per repetition, the median profiled decode step
  std::vector<double> overhead_percent;    // per repetition, profiled over unprofiled - 1
  double prefill_attention_ms = 0, prefill_forward_ms = 0;  // summed over profiled prefills
  double decode_attention_ms = 0, decode_forward_ms = 0;    // summed over profiled decodes
  int prefill_steps_observed_min = 0, prefill_steps_observed_max = 0, prefill_steps_expected = 0;
  int decode_steps_observed_min = 0, decode_steps_observed_max = 0;
  int decode_steps_expected_min = 0, decode_steps_expected_max = 0;
  std::vector<std::string> step_mismatches;  // one line per step that disagreed
  std::size_t prefill_temporary_bytes = 0, prefill_temporary_bytes_expected = 0;
  std::size_t decode_temporary_bytes = 0, decode_temporary_bytes_expected = 0;
  std::size_t prefill_peak_bytes = 0;  // the allocator's absolute peak during a prefill
};

struct CompareSetup {
  std::string model;
  std::string cpu;
  std::string cpu_kernels;  // machine_info.h's cpu_kernels()
  int threads = 0;
  std::string device;  // "" on the CPU, else Context::describe() ("cuda: NVIDIA H200, ...")
  std::string dtype = "f32";
  std::uint64_t weight_bytes = 0;  // bytes of weights a decode step reads (LanguageModel)
  std::int64_t gen = 0;
  RoundsRun rounds;
};

// The widest deciding interval (relative to its ratio, (high - low) / ratio) over the pairs of
// backends at each phase and prompt length, at the findings' adjusted confidence: the adaptive
// loop of `compare` stops once it is below the target. Needs at least 2 repetitions per case.
double widest_deciding_width(const std::vector<CaseResult>& cases);

nlohmann::json build_report(const CompareSetup& setup, const std::vector<CaseResult>& cases);
std::string report_markdown(const nlohmann::json& report);
// (file name, SVG text): prefill ms and decode ms per token per prompt length.
std::vector<std::pair<std::string, std::string>> report_charts(const nlohmann::json& report);

}  // namespace attnscope::cli
