#include "tools/attnscope/compare_report.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

#include "profiler/summary.h"
#include "tools/attnscope/profile_run.h"
#include "tools/attnscope/svg_chart.h"

namespace attnscope::cli {

namespace {

using nlohmann::json;

std::string fixed(double value, int decimals) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(decimals) << value;
  return text.str();
}

std::string percent(double share) { return fixed(100.0 * share, 1) + "%"; }

std::string range(int low, int high) {
  return low == high ? std::to_string(low) : std::to_string(low) + ".." + std::to_string(high);
}

std::string bytes_text(const json& value) {
  return profiler::binary_bytes(value.get<std::size_t>());
}

// The cases of one prompt length, in the report's (registry) order.
std::vector<json> cases_at(const json& report, std::int64_t prompt_len) {
  std::vector<json> out;
  for (const json& c : report["cases"]) {
    if (c["prompt_len"].get<std::int64_t>() == prompt_len) out.push_back(c);
  }
  return out;
}

std::vector<std::int64_t> prompt_lengths(const json& report) {
  std::vector<std::int64_t> lengths;
  for (const json& c : report["cases"]) {
    const auto p = c["prompt_len"].get<std::int64_t>();
    if (std::find(lengths.begin(), lengths.end(), p) == lengths.end()) lengths.push_back(p);
  }
  return lengths;
}

// Sentences about one phase ("prefill" or "decode") at one prompt length.
void phase_findings(const std::vector<json>& cases, std::int64_t prompt_len,
                    const std::string& phase, std::vector<std::string>& findings) {
  const std::string key = phase == "prefill" ? "prefill_ms_median" : "decode_ms_per_token_median";
  const std::string unit = phase == "prefill" ? " ms" : " ms/token";
  const std::string where = phase + " at prompt length " + std::to_string(prompt_len);
  auto by_time = [&](const json& a, const json& b) { return a[key] < b[key]; };
  const json& fastest = *std::min_element(cases.begin(), cases.end(), by_time);
  const json& slowest = *std::max_element(cases.begin(), cases.end(), by_time);
  std::string sentence = "Fastest " + where + ": " + fastest["backend"].get<std::string>() + " (" +
                         fixed(fastest[key], 3) + unit;
  const json& speedup = fastest[phase + "_speedup_vs_naive"];
  if (!speedup.is_null()) sentence += ", " + fixed(speedup, 2) + "x naive";
  sentence += "); slowest: " + slowest["backend"].get<std::string>() + " (" +
              fixed(slowest[key], 3) + unit + ", " +
              fixed(slowest[key].get<double>() / fastest[key].get<double>(), 2) + "x the fastest).";
  findings.push_back(sentence);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    for (std::size_t j = i + 1; j < cases.size(); ++j) {
      const double simple = cases[i][key], elaborate = cases[j][key];
      if (simple >= elaborate) continue;
      findings.push_back("Simpler " + cases[i]["backend"].get<std::string>() +
                         " beats more elaborate " + cases[j]["backend"].get<std::string>() +
                         " at " + where + ": " + fixed(simple, 3) + " vs " + fixed(elaborate, 3) +
                         unit + " (" + fixed(elaborate / simple, 2) + "x).");
    }
  }
}

void length_findings(const std::vector<json>& cases, std::int64_t prompt_len,
                     std::vector<std::string>& findings) {
  phase_findings(cases, prompt_len, "prefill", findings);
  phase_findings(cases, prompt_len, "decode", findings);
  auto by = [](const char* key) {
    return [key](const json& a, const json& b) { return a[key] < b[key]; };
  };
  const auto [low_share, high_share] =
      std::minmax_element(cases.begin(), cases.end(), by("prefill_attention_share"));
  const auto [low_decode, high_decode] =
      std::minmax_element(cases.begin(), cases.end(), by("decode_attention_share"));
  findings.push_back("Attention's share of a step at prompt length " + std::to_string(prompt_len) +
                     ": prefill from " + percent((*low_share)["prefill_attention_share"]) + " (" +
                     (*low_share)["backend"].get<std::string>() + ") to " +
                     percent((*high_share)["prefill_attention_share"]) + " (" +
                     (*high_share)["backend"].get<std::string>() + "), decode from " +
                     percent((*low_decode)["decode_attention_share"]) + " (" +
                     (*low_decode)["backend"].get<std::string>() + ") to " +
                     percent((*high_decode)["decode_attention_share"]) + " (" +
                     (*high_decode)["backend"].get<std::string>() + ").");
  const auto [small, large] =
      std::minmax_element(cases.begin(), cases.end(), by("prefill_temporary_bytes"));
  findings.push_back("Largest attention temporaries in a prefill of " + std::to_string(prompt_len) +
                     " tokens: " + (*large)["backend"].get<std::string>() + " (" +
                     bytes_text((*large)["prefill_temporary_bytes"]) +
                     " per call); smallest: " + (*small)["backend"].get<std::string>() + " (" +
                     bytes_text((*small)["prefill_temporary_bytes"]) + ").");
}

std::vector<std::string> findings_of(const json& report) {
  std::vector<std::string> findings;
  for (std::int64_t p : prompt_lengths(report)) length_findings(cases_at(report, p), p, findings);
  int mismatches = 0, temporary_mismatches = 0;
  for (const json& c : report["cases"]) {
    mismatches += static_cast<int>(c["step_mismatches"].size());
    if (c["prefill_temporary_bytes"] != c["prefill_temporary_bytes_expected"] ||
        c["decode_temporary_bytes"] != c["decode_temporary_bytes_expected"]) {
      ++temporary_mismatches;
    }
  }
  findings.push_back(mismatches == 0 ? "Every profiled attention call ran exactly the steps its "
                                       "backend's cost model predicts."
                                     : std::to_string(mismatches) +
                                           " profiled steps ran a different number of attention "
                                           "steps than the cost model predicts (listed below).");
  findings.push_back(temporary_mismatches == 0
                         ? "Measured attention temporaries equal the cost model in every case."
                         : std::to_string(temporary_mismatches) +
                               " cases measured temporaries that differ from the cost model "
                               "(see the tables).");
  const json& overhead = report["overhead"];
  findings.push_back("Profiling added a median of " + fixed(overhead["median_percent"], 2) +
                     "% to a decode step (from " + fixed(overhead["min_percent"], 2) + "% to " +
                     fixed(overhead["max_percent"], 2) + "% across cases).");
  return findings;
}

}  // namespace

json build_report(const CompareSetup& setup, const std::vector<CaseResult>& cases) {
  std::map<std::int64_t, const CaseResult*> naive_at;
  for (const CaseResult& c : cases) {
    if (c.backend == "naive") naive_at[c.prompt_len] = &c;
  }
  json out_cases = json::array();
  std::vector<double> overheads;
  for (const CaseResult& c : cases) {
    const double prefill = median(c.prefill_ms), decode = median(c.decode_ms);
    const double decode_profiled = median(c.decode_profiled_ms);
    const double overhead = 100.0 * (decode_profiled - decode) / decode;
    overheads.push_back(overhead);
    json speedup_prefill = nullptr, speedup_decode = nullptr;
    if (const auto naive = naive_at.find(c.prompt_len); naive != naive_at.end()) {
      speedup_prefill = median(naive->second->prefill_ms) / prefill;
      speedup_decode = median(naive->second->decode_ms) / decode;
    }
    out_cases.push_back({
        {"backend", c.backend},
        {"prompt_len", c.prompt_len},
        {"prefill_ms", c.prefill_ms},
        {"prefill_ms_median", prefill},
        {"decode_ms", c.decode_ms},
        {"decode_ms_per_token_median", decode},
        {"decode_profiled_ms", c.decode_profiled_ms},
        {"decode_profiled_ms_median", decode_profiled},
        {"decode_overhead_percent", overhead},
        {"prefill_speedup_vs_naive", speedup_prefill},
        {"decode_speedup_vs_naive", speedup_decode},
        {"prefill_attention_share", c.prefill_attention_ms / c.prefill_forward_ms},
        {"decode_attention_share", c.decode_attention_ms / c.decode_forward_ms},
        {"prefill_steps_observed", {c.prefill_steps_observed_min, c.prefill_steps_observed_max}},
        {"prefill_steps_expected", c.prefill_steps_expected},
        {"decode_steps_observed", {c.decode_steps_observed_min, c.decode_steps_observed_max}},
        {"decode_steps_expected", {c.decode_steps_expected_min, c.decode_steps_expected_max}},
        {"step_mismatches", c.step_mismatches},
        {"prefill_temporary_bytes", c.prefill_temporary_bytes},
        {"prefill_temporary_bytes_expected", c.prefill_temporary_bytes_expected},
        {"decode_temporary_bytes", c.decode_temporary_bytes},
        {"decode_temporary_bytes_expected", c.decode_temporary_bytes_expected},
        {"prefill_peak_memory_bytes", c.prefill_peak_bytes},
    });
  }
  json report = {
      {"format", "attnscope-compare"},
      {"version", 1},
      {"setup",
       {{"model", setup.model},
        {"cpu", setup.cpu},
        {"threads", setup.threads},
        {"device", setup.device.empty() ? nlohmann::json() : nlohmann::json(setup.device)},
        {"dtype", setup.dtype},
        {"decode_steps", setup.gen},
        {"repetitions", setup.reps}}},
      {"cases", out_cases},
      {"overhead",
       {{"median_percent", median(overheads)},
        {"min_percent", *std::min_element(overheads.begin(), overheads.end())},
        {"max_percent", *std::max_element(overheads.begin(), overheads.end())}}},
  };
  report["findings"] = findings_of(report);
  return report;
}

std::string report_markdown(const json& report) {
  const json& setup = report["setup"];
  std::ostringstream md;
  md << "# attnscope compare: " << setup["model"].get<std::string>() << "\n\n";
  if (setup.value("device", json()).is_string()) {
    md << "GPU " << setup["device"].get<std::string>() << ", " << setup["dtype"].get<std::string>()
       << "; steps timed to the end of their kernels, attention shares from device time, CUDA "
          "graphs off; ";
  } else {
    md << "CPU " << setup["cpu"].get<std::string>() << ", " << setup["threads"] << " threads; ";
  }
  md << setup["repetitions"] << " repetitions of a prefill then " << setup["decode_steps"]
     << " decode steps per backend and prompt length. Decode steps alternate profiled and "
        "unprofiled (P U U P); decode ms/token is the median of the unprofiled ones, prefill "
        "ms the median of the profiled prefills. Sizes in binary units (KiB, MiB).\n\n";
  md << "## Findings\n\n";
  for (const json& finding : report["findings"]) md << "- " << finding.get<std::string>() << "\n";
  for (std::int64_t p : prompt_lengths(report)) {
    md << "\n## Prompt length " << p << "\n\n"
       << "| backend | prefill ms | vs naive | decode ms/token | vs naive | attention share "
          "prefill / decode | steps per layer prefill / decode (cost model) | temporaries "
          "prefill (cost model) | temporaries decode (cost model) | peak memory prefill | "
          "profiler overhead decode |\n"
       << "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const json& c : cases_at(report, p)) {
      auto speedup = [](const json& value) {
        return value.is_null() ? std::string("-") : fixed(value, 2) + "x";
      };
      md << "| " << c["backend"].get<std::string>() << " | " << fixed(c["prefill_ms_median"], 3)
         << " | " << speedup(c["prefill_speedup_vs_naive"]) << " | "
         << fixed(c["decode_ms_per_token_median"], 3) << " | "
         << speedup(c["decode_speedup_vs_naive"]) << " | " << percent(c["prefill_attention_share"])
         << " / " << percent(c["decode_attention_share"]) << " | "
         << range(c["prefill_steps_observed"][0], c["prefill_steps_observed"][1]) << " / "
         << range(c["decode_steps_observed"][0], c["decode_steps_observed"][1]) << " ("
         << c["prefill_steps_expected"].get<int>() << " / "
         << range(c["decode_steps_expected"][0], c["decode_steps_expected"][1]) << ") | "
         << bytes_text(c["prefill_temporary_bytes"]) << " ("
         << bytes_text(c["prefill_temporary_bytes_expected"]) << ") | "
         << bytes_text(c["decode_temporary_bytes"]) << " ("
         << bytes_text(c["decode_temporary_bytes_expected"]) << ") | "
         << bytes_text(c["prefill_peak_memory_bytes"]) << " | "
         << fixed(c["decode_overhead_percent"], 2) << "% |\n";
    }
    md << "\n![prefill](prefill_ms_p" << p << ".svg) ![decode](decode_ms_p" << p << ".svg)\n";
  }
  md << "\n## Steps that disagree with the cost model\n\n";
  bool any = false;
  for (const json& c : report["cases"]) {
    for (const json& line : c["step_mismatches"]) {
      md << "- " << c["backend"].get<std::string>() << ": " << line.get<std::string>() << "\n";
      any = true;
    }
  }
  if (!any) md << "None: every profiled attention call matched its cost model.\n";
  return md.str();
}

std::vector<std::pair<std::string, std::string>> report_charts(const json& report) {
  std::vector<std::pair<std::string, std::string>> charts;
  for (std::int64_t p : prompt_lengths(report)) {
    std::vector<Bar> prefill, decode;
    for (const json& c : cases_at(report, p)) {
      prefill.push_back({c["backend"], c["prefill_ms_median"]});
      decode.push_back({c["backend"], c["decode_ms_per_token_median"]});
    }
    const std::string model = report["setup"]["model"];
    charts.emplace_back(
        "prefill_ms_p" + std::to_string(p) + ".svg",
        bar_chart_svg(model + ": prefill of " + std::to_string(p) + " tokens (median)", "ms",
                      prefill));
    charts.emplace_back(
        "decode_ms_p" + std::to_string(p) + ".svg",
        bar_chart_svg(model + ": decode after " + std::to_string(p) + " tokens (median per token)",
                      "ms", decode));
  }
  return charts;
}

}  // namespace attnscope::cli
