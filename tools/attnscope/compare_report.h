// The comparison report of `attnscope compare`: measured cases in, report.json, report.md and
// SVG bar charts out, with findings written as sentences computed from the numbers.
//
// report.json is the source of truth: the Markdown and the charts are rendered from it, so
// every number in them can be recomputed from the JSON (speedup = naive's median / the
// backend's median, per phase and prompt length). "Simpler" and "more elaborate" follow the
// registry's order (naive, inplace, math, fused, flash): each pair where an earlier backend is
// faster than a later one is stated.
//
// On a GPU the steps are timed to the end of their kernels, and attention shares are device
// times (the kernels inside the attention scopes over those inside the forward step).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attnscope::cli {

// One backend at one prompt length, over all repetitions.
struct CaseResult {
  std::string backend;
  std::int64_t prompt_len = 0;
  std::vector<double> prefill_ms;          // one per repetition (profiled prefill, wall clock)
  std::vector<double> decode_ms;           // every unprofiled decode step
  std::vector<double> decode_profiled_ms;  // every profiled decode step
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
  int threads = 0;
  std::string device;  // "" on the CPU, else Context::describe() ("cuda: NVIDIA H200, ...")
  std::string dtype = "f32";
  std::int64_t gen = 0;
  int reps = 0;
};

nlohmann::json build_report(const CompareSetup& setup, const std::vector<CaseResult>& cases);
std::string report_markdown(const nlohmann::json& report);
// (file name, SVG text): prefill ms and decode ms per token per prompt length.
std::vector<std::pair<std::string, std::string>> report_charts(const nlohmann::json& report);

}  // namespace attnscope::cli
