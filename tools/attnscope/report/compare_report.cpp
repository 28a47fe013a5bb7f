#include "tools/attnscope/report/compare_report.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

#include "profiler/summary.h"
#include "tools/attnscope/measure/profile_run.h"
#include "tools/attnscope/report/finding_rule.h"
#include "tools/attnscope/report/markdown.h"
#include "tools/attnscope/report/report_json.h"
#include "tools/attnscope/report/statistics.h"
#include "tools/attnscope/report/svg_chart.h"

namespace attnscope::cli {

namespace {

using nlohmann::json;

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

const char* const kPhases[] = {"prefill", "decode"};

std::string median_key(const std::string& phase) {
  return phase == "prefill" ? "prefill_ms_median" : "decode_ms_per_token_median";
}

const std::vector<double>& samples_of(const CaseResult& c, const std::string& phase) {
  return phase == "prefill" ? c.prefill_ms : c.decode_ms;
}

// Every pair (i < j, registry order) of the cases of one prompt length, per phase: the ratio
// time(j) / time(i) at `confidence`. Calls `visit(phase, pair)`.
template <class Visit>
void for_each_pair(const std::vector<const CaseResult*>& cases, double confidence, Visit visit) {
  for (const char* phase : kPhases) {
    std::vector<std::vector<double>> cells;
    for (const CaseResult* c : cases) cells.push_back(samples_of(*c, phase));
    for (const PairRatio& pair : pairwise_ratios(cells, confidence))
      visit(std::string(phase), pair);
  }
}

std::map<std::int64_t, std::vector<const CaseResult*>> by_prompt_length(
    const std::vector<CaseResult>& cases) {
  std::map<std::int64_t, std::vector<const CaseResult*>> out;
  for (const CaseResult& c : cases) out[c.prompt_len].push_back(&c);
  return out;
}

// The number of decisions the findings make: the pairs, plus the pooled overhead.
int decision_count(const std::vector<CaseResult>& cases) {
  int count = 1;
  for (const auto& [prompt_len, group] : by_prompt_length(cases)) {
    const int n = static_cast<int>(group.size());
    count += 2 * n * (n - 1) / 2;
  }
  return count;
}

std::string repetitions_text(const json& report) {
  return std::to_string(report["setup"]["rounds"].get<int>()) + " repetitions";
}

// The comparisons of one phase at one prompt length, as stored in the report.
std::vector<json> comparisons_at(const json& report, std::int64_t prompt_len,
                                 const std::string& phase) {
  std::vector<json> out;
  for (const json& c : report["comparisons"]) {
    if (c["prompt_len"] == prompt_len && c["phase"] == phase) out.push_back(c);
  }
  return out;
}

// Sentences about one phase ("prefill" or "decode") at one prompt length, decided by the
// comparisons' intervals (finding_rule.h).
void phase_findings(const json& report, const std::vector<json>& cases, std::int64_t prompt_len,
                    const std::string& phase, std::vector<std::string>& findings) {
  const std::string key = median_key(phase);
  const std::string unit = phase == "prefill" ? " ms" : " ms/token";
  const std::string where = phase + " at prompt length " + std::to_string(prompt_len);
  const std::vector<json> pairs = comparisons_at(report, prompt_len, phase);
  auto by_time = [&](const json& a, const json& b) { return a[key] < b[key]; };
  const std::string leader =
      (*std::min_element(cases.begin(), cases.end(), by_time))["backend"].get<std::string>();
  // The leader against every other backend: the ones it does not beat tie with it.
  std::vector<std::string> tied = {leader};
  double tie_spread = 0, lead = -1;
  for (const json& pair : pairs) {
    const std::string first = pair["first"], second = pair["second"];
    if (first != leader && second != leader) continue;
    const std::string other = first == leader ? second : first;
    const bool leader_wins = pair["verdict"] == (first == leader ? "faster" : "slower");
    if (leader_wins) {
      const double low = first == leader ? pair["interval"][0].get<double>()
                                         : 1.0 / pair["interval"][1].get<double>();
      lead = lead < 0 ? low : std::min(lead, low);
    } else {
      tied.push_back(other);
      tie_spread = std::max(tie_spread, pair["could_differ_percent"].get<double>());
    }
  }
  if (tied.size() == 1) {
    findings.push_back("Fastest " + where + ": " + leader + ", faster than every other backend " +
                       "(by at least " + fixed(100.0 * (lead - 1.0), 1) + "% at " +
                       repetitions_text(report) + ").");
  } else {
    std::string names;
    for (std::size_t i = 0; i < tied.size(); ++i) {
      names += (i == 0 ? "" : i + 1 == tied.size() ? " and " : ", ") + tied[i];
    }
    findings.push_back("Fastest " + where + ": no single backend; " + names +
                       " are indistinguishable at " + repetitions_text(report) +
                       " (could differ by up to " + fixed(tie_spread, 1) + "%).");
  }
  for (const json& pair : pairs) {
    if (pair["verdict"] != "faster") continue;
    const std::string first = pair["first"], second = pair["second"];
    auto median_of_backend = [&](const std::string& name) {
      for (const json& c : cases) {
        if (c["backend"] == name) return c[key].get<double>();
      }
      return 0.0;
    };
    findings.push_back("Simpler " + first + " beats more elaborate " + second + " at " + where +
                       ": " + fixed(median_of_backend(first), 3) + " vs " +
                       fixed(median_of_backend(second), 3) + unit + ", " + fixed(pair["ratio"], 2) +
                       "x " + interval_text(pair["interval"], 2) + ".");
  }
}

void length_findings(const json& report, const std::vector<json>& cases, std::int64_t prompt_len,
                     std::vector<std::string>& findings) {
  phase_findings(report, cases, prompt_len, "prefill", findings);
  phase_findings(report, cases, prompt_len, "decode", findings);
  auto by = [](const char* key) {
    return [key](const json& a, const json& b) { return a[key] < b[key]; };
  };
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
  for (std::int64_t p : prompt_lengths(report)) {
    length_findings(report, cases_at(report, p), p, findings);
  }
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
  const Interval interval = {overhead["interval"][0], overhead["interval"][1]};
  const std::string range = interval_text(overhead["interval"], 2);
  const std::string runs = std::to_string(overhead["runs"].get<int>()) + " runs";
  findings.push_back(excludes_zero(interval)
                         ? "Profiling added " + fixed(overhead["median_percent"], 2) + "% " +
                               range + " to a decode step (median over " + runs + " of every case)."
                         : "Profiling's cost on a decode step is indistinguishable from zero at " +
                               runs + " (median " + fixed(overhead["median_percent"], 2) +
                               "%, somewhere in " + range + "%).");
  return findings;
}

// The table of one prompt length: a row per backend.
std::string cases_table(const json& report, std::int64_t prompt_len) {
  MarkdownTable table({{"backend", MarkdownTable::Align::Left},
                       {"reps"},
                       {"prefill ms"},
                       {"vs naive"},
                       {"decode ms/token"},
                       {"vs naive"},
                       {"attention share prefill / decode"},
                       {"weights GB/s decode"},
                       {"steps per layer prefill / decode (cost model)"},
                       {"temporaries prefill (cost model)"},
                       {"temporaries decode (cost model)"},
                       {"peak memory prefill"},
                       {"profiler overhead decode"}});
  auto speedup = [](const json& value, const json& interval) {
    return value.is_null() ? std::string("-") : fixed(value, 2) + "x " + interval_text(interval, 2);
  };
  auto steps = [](const json& observed) { return range(observed[0], observed[1]); };
  auto with_model = [](const json& measured, const json& model) {
    return bytes_text(measured) + " (" + bytes_text(model) + ")";
  };
  for (const json& c : cases_at(report, prompt_len)) {
    table.add_row(
        {c["backend"], c["repetitions"].dump(),
         fixed(c["prefill_ms_median"], 1) + " " + interval_text(c["prefill_ms_interval"], 1),
         speedup(c["prefill_speedup_vs_naive"], c["prefill_speedup_vs_naive_interval"]),
         fixed(c["decode_ms_per_token_median"], 2) + " " +
             interval_text(c["decode_ms_per_token_interval"], 2),
         speedup(c["decode_speedup_vs_naive"], c["decode_speedup_vs_naive_interval"]),
         percent(c["prefill_attention_share"]) + " / " + percent(c["decode_attention_share"]),
         fixed(c["decode_weight_gb_per_s"], 2),
         steps(c["prefill_steps_observed"]) + " / " + steps(c["decode_steps_observed"]) + " (" +
             std::to_string(c["prefill_steps_expected"].get<int>()) + " / " +
             steps(c["decode_steps_expected"]) + ")",
         with_model(c["prefill_temporary_bytes"], c["prefill_temporary_bytes_expected"]),
         with_model(c["decode_temporary_bytes"], c["decode_temporary_bytes_expected"]),
         bytes_text(c["prefill_peak_memory_bytes"]),
         fixed(c["decode_overhead_percent"], 2) + "% " +
             interval_text(c["decode_overhead_percent_interval"], 2)});
  }
  return table.text();
}

}  // namespace

double widest_deciding_width(const std::vector<CaseResult>& cases) {
  const double level = per_interval_confidence(kReportConfidence, decision_count(cases));
  double widest = 0;
  for (const auto& [prompt_len, group] : by_prompt_length(cases)) {
    for_each_pair(group, level, [&](const std::string&, const PairRatio& pair) {
      widest = std::max(widest, pair.ratio.relative_width());
    });
  }
  return widest;
}

json build_report(const CompareSetup& setup, const std::vector<CaseResult>& cases) {
  std::map<std::int64_t, const CaseResult*> naive_at;
  for (const CaseResult& c : cases) {
    if (c.backend == "naive") naive_at[c.prompt_len] = &c;
  }
  json out_cases = json::array();
  std::vector<double> overheads;
  for (const CaseResult& c : cases) {
    const Estimate prefill = median_estimate(c.prefill_ms, kReportConfidence);
    const Estimate decode = median_estimate(c.decode_ms, kReportConfidence);
    const Estimate overhead = median_estimate(c.overhead_percent, kReportConfidence);
    overheads.insert(overheads.end(), c.overhead_percent.begin(), c.overhead_percent.end());
    std::optional<Estimate> prefill_speedup, decode_speedup;
    if (const auto naive = naive_at.find(c.prompt_len); naive != naive_at.end()) {
      prefill_speedup = ratio_estimate(naive->second->prefill_ms, c.prefill_ms, kReportConfidence);
      decode_speedup = ratio_estimate(naive->second->decode_ms, c.decode_ms, kReportConfidence);
    }
    json out_case = {
        {"backend", c.backend},
        {"prompt_len", c.prompt_len},
        {"repetitions", c.prefill_ms.size()},
        {"prefill_ms", c.prefill_ms},
        {"decode_ms", c.decode_ms},
        // A batch-1 decode step reads every weight once: the bandwidth its median achieves.
        {"decode_weight_gb_per_s",
         static_cast<double>(setup.weight_bytes) / (decode.value * 1e-3) / 1e9},
        {"decode_profiled_ms", c.decode_profiled_ms},
        {"decode_profiled_ms_median", median(c.decode_profiled_ms)},
        {"decode_overhead_percent_runs", c.overhead_percent},
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
    };
    out_case.update(estimate_fields("prefill_ms_median", "prefill_ms_interval", prefill));
    out_case.update(
        estimate_fields("decode_ms_per_token_median", "decode_ms_per_token_interval", decode));
    out_case.update(
        estimate_fields("decode_overhead_percent", "decode_overhead_percent_interval", overhead));
    out_case.update(estimate_fields("prefill_speedup_vs_naive", "prefill_speedup_vs_naive_interval",
                                    prefill_speedup));
    out_case.update(estimate_fields("decode_speedup_vs_naive", "decode_speedup_vs_naive_interval",
                                    decode_speedup));
    out_cases.push_back(out_case);
  }
  const int decisions = decision_count(cases);
  const double level = per_interval_confidence(kReportConfidence, decisions);
  json comparisons = json::array();
  for (const auto& [prompt_len, group] : by_prompt_length(cases)) {
    for_each_pair(group, level,
                  [&, p = prompt_len, &g = group](const std::string& phase, const PairRatio& pair) {
                    json entry = comparison_json(pair.ratio);
                    entry.update({{"prompt_len", p},
                                  {"phase", phase},
                                  {"first", g[pair.first]->backend},
                                  {"second", g[pair.second]->backend}});
                    comparisons.push_back(entry);
                  });
  }
  const Estimate pooled = median_estimate(overheads, level);
  const json setup_json = {
      {"model", setup.model},
      {"cpu", setup.cpu},
      {"cpu_kernels", setup.cpu_kernels},
      {"threads", setup.threads},
      {"device", setup.device.empty() ? nlohmann::json() : nlohmann::json(setup.device)},
      {"dtype", setup.dtype},
      {"weight_bytes", setup.weight_bytes},
      {"decode_steps", setup.gen}};
  json report =
      report_skeleton("attnscope-compare", 2, setup_json, setup.rounds,
                      statistics_json(decisions, level, 100.0 * widest_deciding_width(cases)));
  report["cases"] = out_cases;
  report["comparisons"] = comparisons;
  report["overhead"] = {{"median_percent", pooled.value},
                        {"interval", interval_json(pooled.interval)},
                        {"runs", overheads.size()}};
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
    md << "CPU " << setup["cpu"].get<std::string>();
    // Reports from before the field have no kernel level to name.
    if (setup.contains("cpu_kernels")) {
      md << " (cpu kernels " << setup["cpu_kernels"].get<std::string>() << ")";
    }
    md << ", " << setup["threads"] << " threads, " << setup["dtype"].get<std::string>()
       << " weights; ";
  }
  md << "a decode step reads " << bytes_text(setup["weight_bytes"]) << " of weights; ";
  md << setup["rounds"] << " repetitions (rounds) of a prefill then "
     << decode_steps_run(setup["decode_steps"].get<std::int64_t>()) << " decode steps ("
     << setup["decode_steps"] << " profiled) per backend and prompt length, the backends "
     << "interleaved within each round";
  if (setup["budget_s"].get<double>() > 0) {
    md << "; repeated from " << setup["min_repetitions"] << " until every deciding interval was "
       << "narrower than " << fixed(setup["target_percent"], 1) << "% or the "
       << fixed(setup["budget_s"], 0) << " s budget ran out (widest "
       << fixed(report["statistics"]["widest_deciding_width_percent"], 1) << "% after "
       << fixed(setup["elapsed_s"], 0) << " s)";
  }
  md << ". Decode steps alternate profiled and unprofiled (P U U P); a repetition's decode "
        "ms/token is the median of its unprofiled steps, its prefill ms the profiled prefill. "
        "Brackets are 95% percentile-bootstrap intervals over the repetitions; findings use "
        "intervals that hold together at 95% over the report's "
     << report["statistics"]["decisions"]
     << " comparisons (Bonferroni), and call a backend faster only when its interval excludes "
        "1.0. Sizes in binary units (KiB, MiB)."
     << few_repetitions_note(setup["rounds"].get<int>()) << "\n\n";
  md << conditions_markdown(report) << "## Findings\n\n" << findings_markdown(report);
  for (std::int64_t p : prompt_lengths(report)) {
    md << "\n## Prompt length " << p << "\n\n"
       << cases_table(report, p) << "\n![prefill](prefill_ms_p" << p
       << ".svg) ![decode](decode_ms_p" << p << ".svg)\n";
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
