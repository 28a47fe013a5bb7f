// The report of `attnscope study` (tools/attnscope/report/study_report.h).
#include "tools/attnscope/report/study_report.h"

#include <algorithm>
#include <sstream>

#include "profiler/summary.h"
#include "runtime/dtype.h"
#include "tools/attnscope/measure/attention_timing.h"
#include "tools/attnscope/report/finding_rule.h"
#include "tools/attnscope/report/markdown.h"
#include "tools/attnscope/report/report_json.h"
#include "tools/attnscope/report/statistics.h"
#include "tools/attnscope/report/svg_chart.h"

namespace attnscope::cli {

namespace {

using nlohmann::json;

// The seed study's A100 measurements (PyTorch, B=8, H=16, T=1024, D=64, causal, f16), set beside
// the backend of this runtime that reproduces each. Kernels or ms < 0: not published.
struct Published {
  const char* backend;
  const char* counterpart;
  int kernels;
  double ms;
};
constexpr Published kPublished[] = {
    {"naive", "naive PyTorch attention", 6, -1},
    {"inplace", "in-place naive (masked_fill_)", 5, 1.955},
    {"math", "SDPA math", 20, 7.239},
    {"fused", "none (SDPA's fused paths are single kernels)", -1, -1},
    {"flash", "SDPA flash", 1, 0.1468},
};
constexpr const char* kUnmatched = "SDPA cuDNN 0.1863 ms and SDPA memory-efficient 0.2779 ms";

// The study's orderings: (faster, slower) with their published ratio.
struct Ordering {
  const char* faster;
  const char* slower;
};
constexpr Ordering kOrderings[] = {{"inplace", "math"}, {"flash", "inplace"}, {"flash", "math"}};

const Published* published_for(const std::string& backend) {
  for (const Published& p : kPublished) {
    if (backend == p.backend) return &p;
  }
  return nullptr;
}

// Empty at the study's shape; else a sentence saying this run's differs, so its ratios need not
// follow the study's.
std::string shape_note(const json& setup) {
  const ops::attention::Shape& study = kStudyShape;
  const bool same = setup["batch"] == study.batch && setup["heads"] == study.q_heads &&
                    setup["seq_len"] == study.q_len && setup["head_dim"] == study.head_dim;
  if (same) return "";
  return "\nThis run's shape (B=" + setup["batch"].dump() + ", H=" + setup["heads"].dump() +
         ", T=" + setup["seq_len"].dump() + ", D=" + setup["head_dim"].dump() +
         ") is not the study's (B=" + std::to_string(study.batch) +
         ", H=" + std::to_string(study.q_heads) + ", T=" + std::to_string(study.q_len) +
         ", D=" + std::to_string(study.head_dim) +
         "): the ratios need not follow the study's, since the score-sized temporaries that "
         "separate the backends grow with T x T.\n";
}

// The measured backends (those that ran), in the report's order.
std::vector<const StudyBackend*> measured(const std::vector<StudyBackend>& backends) {
  std::vector<const StudyBackend*> out;
  for (const StudyBackend& b : backends) {
    if (!b.unsupported_reason && !b.times_ms.empty()) out.push_back(&b);
  }
  return out;
}

std::vector<PairRatio> study_pairs(const std::vector<const StudyBackend*>& ran, double level) {
  std::vector<std::vector<double>> cells;
  for (const StudyBackend* b : ran) cells.push_back(b->times_ms);
  return pairwise_ratios(cells, level);
}

int pair_count(std::size_t n) { return static_cast<int>(n * (n - 1) / 2); }

const json* backend_entry(const json& report, const std::string& name) {
  for (const json& b : report["backends"]) {
    if (b["backend"] == name && b.contains("observation")) return &b;
  }
  return nullptr;
}

// The comparison stored for (first, second) in either order, as time(slow) / time(fast) where
// `fast` is the study's faster one: the verdict is "faster" when this machine agrees.
std::optional<json> oriented(const json& report, const std::string& fast, const std::string& slow) {
  for (const json& c : report["comparisons"]) {
    if (c["first"] == fast && c["second"] == slow) return c;
    if (c["first"] == slow && c["second"] == fast) {
      const Estimate flipped = {
          1.0 / c["ratio"].get<double>(),
          {1.0 / c["interval"][1].get<double>(), 1.0 / c["interval"][0].get<double>()}};
      return comparison_json(flipped);
    }
  }
  return std::nullopt;
}

std::string bytes(const json& value) { return profiler::binary_bytes(value.get<std::size_t>()); }

// How the threads enter a CPU explanation: none with one thread.
std::string threads_clause(int threads) {
  if (threads <= 1) return " (one thread here, so no step gains from parallelism)";
  return " and how well each step keeps the " + std::to_string(threads) + " threads busy";
}

// Why two backends differ, from what the prediction says they move and launch.
std::string why(const json& report, const json& fast, const json& slow) {
  const json& pf = fast["prediction"];
  const json& ps = slow["prediction"];
  const bool gpu = report["setup"]["device"].get<std::string>().starts_with("cuda");
  std::string text = slow["backend"].get<std::string>() + " runs " +
                     std::to_string(ps["steps"].get<int>()) + " steps per call against " +
                     std::to_string(pf["steps"].get<int>()) + " and moves at least " +
                     bytes(ps["bytes_at_least"]) + " against " + bytes(pf["bytes_at_least"]) +
                     " (its temporaries written and read once, plus q, k, v and out); ";
  text += gpu ? "on a GPU every step is a kernel launch and a pass through device memory, so "
                "both the launches and the bytes count"
              : "on the CPU a step is a function call with no launch cost, so what separates "
                "them is the memory traffic of the score-sized temporaries" +
                    threads_clause(report["setup"]["threads"].get<int>());
  return text;
}

std::string ordering_sentence(const json& report, const Ordering& order) {
  const json* fast = backend_entry(report, order.faster);
  const json* slow = backend_entry(report, order.slower);
  const Published* pf = published_for(order.faster);
  const Published* ps = published_for(order.slower);
  if (!fast || !slow || !pf || !ps) return "";
  const std::optional<json> here = oriented(report, order.faster, order.slower);
  if (!here) return "";
  const std::string study = std::string(order.slower) + " / " + order.faster + " = " +
                            fixed(ps->ms / pf->ms, 1) + "x on the A100";
  const std::string measured_here =
      fixed((*here)["ratio"], 2) + "x " + interval_text((*here)["interval"], 2) + " here";
  const std::string reps = std::to_string(report["setup"]["rounds"].get<int>()) + " repetitions";
  std::string verdict;
  if ((*here)["verdict"] == "faster") {
    verdict = "agrees: " + std::string(order.faster) + " is faster";
  } else if ((*here)["verdict"] == "slower") {
    verdict = "differs: " + std::string(order.slower) + " is faster here";
  } else {
    verdict = "cannot tell: indistinguishable at " + reps + " (could differ by up to " +
              fixed((*here)["could_differ_percent"], 1) + "%)";
  }
  return study + ", " + measured_here + ": " + verdict + ". Why: " + why(report, *fast, *slow) +
         ".";
}

// "flash < fused (2.10x [1.9, 2.3]) < naive ~ inplace (could differ by up to 4.0%) < math": the
// backends by median, each step to the next decided by the finding rule.
std::string ranking(const json& report) {
  std::vector<json> ran;
  for (const json& b : report["backends"]) {
    if (b.contains("observation")) ran.push_back(b);
  }
  std::sort(ran.begin(), ran.end(), [](const json& a, const json& b) {
    return a["observation"]["median_ms"] < b["observation"]["median_ms"];
  });
  std::string text = ran.empty() ? "" : ran[0]["backend"].get<std::string>();
  for (std::size_t i = 1; i < ran.size(); ++i) {
    const std::optional<json> step = oriented(report, ran[i - 1]["backend"], ran[i]["backend"]);
    if (!step) continue;
    const bool win = (*step)["verdict"] == "faster";
    text += win ? " < " : " ~ ";
    text += ran[i]["backend"].get<std::string>() + " (" +
            (win ? fixed((*step)["ratio"], 2) + "x " + interval_text((*step)["interval"], 2)
                 : "could differ by up to " + fixed((*step)["could_differ_percent"], 1) + "%") +
            ")";
  }
  return text;
}

std::vector<std::string> study_findings(const json& report) {
  std::vector<std::string> findings;
  findings.push_back(
      "Fastest to slowest here (< : faster with 95% joint confidence, ~ : "
      "indistinguishable): " +
      ranking(report) + ".");
  int step_mismatch = 0, temporary_mismatch = 0;
  for (const json& b : report["backends"]) {
    if (!b.contains("observation")) continue;
    const json& o = b["observation"];
    const int predicted = b["prediction"]["steps"];
    step_mismatch += o["steps_observed"][0] != predicted || o["steps_observed"][1] != predicted;
    temporary_mismatch += o["temporary_bytes"] != b["prediction"]["temporary_bytes"];
  }
  findings.push_back(step_mismatch == 0
                         ? "Every backend ran exactly the steps its cost model predicts."
                         : std::to_string(step_mismatch) +
                               " backends ran a different number of steps than predicted.");
  findings.push_back(temporary_mismatch == 0
                         ? "Every backend's measured temporaries equal its cost model."
                         : std::to_string(temporary_mismatch) +
                               " backends measured temporaries that differ from the cost model.");
  for (const Ordering& order : kOrderings) {
    const std::string sentence = ordering_sentence(report, order);
    if (!sentence.empty()) findings.push_back("The study's " + sentence);
  }
  return findings;
}

using Align = MarkdownTable::Align;

// "-" for null, else the number with `decimals`.
std::string or_dash(const json& value, int decimals) {
  return value.is_null() ? std::string("-") : fixed(value, decimals);
}

std::string prediction_table(const json& report) {
  MarkdownTable table({{"backend", Align::Left},
                       {"steps per call"},
                       {"temporaries"},
                       {"useful GFLOP"},
                       {"bytes moved, at least"}});
  for (const json& b : report["backends"]) {
    if (!b.contains("prediction")) continue;
    const json& p = b["prediction"];
    table.add_row({b["backend"], p["steps"].dump(), bytes(p["temporary_bytes"]),
                   significant(p["useful_flops"].get<double>() / 1e9, 3),
                   bytes(p["bytes_at_least"])});
  }
  return table.text();
}

std::string observation_table(const json& report) {
  MarkdownTable table({{"backend", Align::Left},
                       {"steps seen"},
                       {"temporaries measured"},
                       {"reps"},
                       {"median ms [95% CI]"},
                       {"x inplace [95% CI]"},
                       {"GFLOP/s"},
                       {"kernels (GPU)", Align::Left}});
  for (const json& b : report["backends"]) {
    if (b.contains("error")) {
      table.add_row({b["backend"], "unsupported: " + b["error"].get<std::string>()});
      continue;
    }
    const json& o = b["observation"];
    std::string kernels;
    for (const json& k : o["kernels"]) {
      kernels += (kernels.empty() ? "" : ", ") + k.get<std::string>();
    }
    table.add_row({b["backend"], o["steps_observed"][0].dump(), bytes(o["temporary_bytes"]),
                   o["repetitions"].dump(),
                   fixed(o["median_ms"], 3) + " " + interval_text(o["interval_ms"], 3),
                   o["x_inplace"].is_null() ? std::string("-")
                                            : fixed(o["x_inplace"], 2) + "x " +
                                                  interval_text(o["x_inplace_interval"], 2),
                   fixed(o["gflop_per_s"], 1), kernels.empty() ? "-" : kernels});
  }
  return table.text();
}

std::string published_table(const json& report) {
  MarkdownTable table({{"backend", Align::Left},
                       {"study's counterpart", Align::Left},
                       {"study kernels"},
                       {"steps here"},
                       {"study ms"},
                       {"x inplace (study)"},
                       {"ms here"},
                       {"x inplace here"}});
  for (const json& b : report["backends"]) {
    const json& p = b["published_a100"];
    const bool ran = b.contains("observation");
    table.add_row({b["backend"], p["counterpart"],
                   p["kernels"].is_null() ? std::string("-") : p["kernels"].dump(),
                   ran ? b["observation"]["steps_observed"][0].dump() : "-", or_dash(p["ms"], 3),
                   or_dash(p["x_inplace"], 2), ran ? fixed(b["observation"]["median_ms"], 3) : "-",
                   ran ? or_dash(b["observation"]["x_inplace"], 2) : "-"});
  }
  return table.text();
}

}  // namespace

double study_widest_width(const std::vector<StudyBackend>& backends) {
  const std::vector<const StudyBackend*> ran = measured(backends);
  const double level = per_interval_confidence(kReportConfidence, pair_count(ran.size()));
  return widest_relative_width(study_pairs(ran, level));
}

json build_study_report(const StudySetup& setup, const std::vector<StudyBackend>& backends) {
  const std::vector<const StudyBackend*> ran = measured(backends);
  const StudyBackend* baseline = nullptr;
  for (const StudyBackend* b : ran) {
    if (b->backend == "inplace") baseline = b;
  }
  const ops::attention::Shape& shape = setup.shape;
  json entries = json::array();
  for (const StudyBackend& b : backends) {
    json entry = {{"backend", b.backend}};
    const Published* p = published_for(b.backend);
    entry["published_a100"] = {{"counterpart", p ? p->counterpart : "none"},
                               {"kernels", p && p->kernels >= 0 ? json(p->kernels) : json()},
                               {"ms", p && p->ms >= 0 ? json(p->ms) : json()},
                               {"x_inplace", p && p->ms >= 0 ? json(p->ms / 1.955) : json()}};
    if (b.unsupported_reason) {
      entry["error"] = *b.unsupported_reason;
      entries.push_back(entry);
      continue;
    }
    entry["prediction"] = {{"steps", b.predicted.steps},
                           {"temporary_bytes", b.predicted.temporary_bytes},
                           {"useful_flops", b.predicted.flops},
                           {"bytes_at_least", b.predicted.bytes_with_temporaries()}};
    const Estimate time = median_estimate(b.times_ms, kReportConfidence);
    json observation = {{"steps_observed", {b.steps_observed_min, b.steps_observed_max}},
                        {"temporary_bytes", b.temporary_bytes},
                        {"kernels", b.kernels},
                        {"repetitions", b.times_ms.size()},
                        {"times_ms", b.times_ms},
                        {"gflop_per_s", b.predicted.flops / (time.value * 1e-3) / 1e9},
                        {"trace", b.trace_file}};
    observation.update(estimate_fields("median_ms", "interval_ms", time));
    std::optional<Estimate> x_inplace;
    if (baseline) x_inplace = ratio_estimate(b.times_ms, baseline->times_ms, kReportConfidence);
    observation.update(estimate_fields("x_inplace", "x_inplace_interval", x_inplace));
    entry["observation"] = observation;
    entries.push_back(entry);
  }
  const int decisions = pair_count(ran.size());
  const double level = per_interval_confidence(kReportConfidence, decisions);
  json comparisons = json::array();
  for (const PairRatio& pair : study_pairs(ran, level)) {
    json c = comparison_json(pair.ratio);
    c["first"] = ran[pair.first]->backend;
    c["second"] = ran[pair.second]->backend;
    comparisons.push_back(c);
  }
  const json setup_json = {
      {"batch", shape.batch},       {"heads", shape.q_heads}, {"seq_len", shape.q_len},
      {"head_dim", shape.head_dim}, {"causal", shape.causal}, {"dtype", dtype_name(shape.dtype)},
      {"device", setup.device},     {"cpu", setup.cpu},       {"threads", setup.threads}};
  json report =
      report_skeleton("attnscope-study", 1, setup_json, setup.rounds,
                      statistics_json(decisions, level, 100.0 * study_widest_width(backends)));
  report["backends"] = entries;
  report["comparisons"] = comparisons;
  report["published_unmatched"] = kUnmatched;
  report["findings"] = study_findings(report);
  return report;
}

std::string study_markdown(const json& report) {
  const json& setup = report["setup"];
  std::ostringstream md;
  md << "# attnscope study: causal attention, B=" << setup["batch"] << ", H=" << setup["heads"]
     << ", T=" << setup["seq_len"] << ", D=" << setup["head_dim"] << ", "
     << setup["dtype"].get<std::string>() << "\n\n"
     << "Device " << setup["device"].get<std::string>() << " (CPU "
     << setup["cpu"].get<std::string>() << "). " << setup["rounds"]
     << " repetitions per backend, one timed call each, the backends interleaved within each "
        "round (at least "
     << setup["min_repetitions"] << "; budget " << fixed(setup["budget_s"], 0)
     << " s, target width " << fixed(setup["target_percent"], 1) << "%, widest deciding interval "
     << fixed(report["statistics"]["widest_deciding_width_percent"], 1) << "% after "
     << fixed(setup["elapsed_s"], 0)
     << " s). Brackets are 95% percentile-bootstrap intervals; the ranking and the orderings use "
        "intervals that hold together at 95% over the "
     << report["statistics"]["decisions"]
     << " pairs of backends, and call a backend faster only when the interval excludes 1.0."
     << few_repetitions_note(setup["rounds"].get<int>()) << "\n\n"
     << conditions_markdown(report) << "## 1. The prediction (cost models)\n\n"
     << prediction_table(report) << "\n## 2. The observation\n\n"
     << observation_table(report) << "\n## 3. The study's A100 numbers beside this machine\n\n"
     << published_table(report) << shape_note(setup)
     << "\nNot reproduced here: " << report["published_unmatched"].get<std::string>()
     << ". The study measured f16 on an A100; compare orderings and ratios, not absolute "
        "times.\n\n## Findings\n\n"
     << findings_markdown(report) << "\n## 4. Traces and chart\n\n";
  for (const json& b : report["backends"]) {
    if (b.contains("observation")) {
      const std::string file = b["observation"]["trace"];
      md << "- " << b["backend"].get<std::string>() << ": [" << file << "](" << file
         << ") (open in https://ui.perfetto.dev)\n";
    }
  }
  md << "\n![median time per call](time.svg)\n";
  return md.str();
}

std::pair<std::string, std::string> study_chart(const json& report) {
  std::vector<Bar> bars;
  for (const json& b : report["backends"]) {
    if (b.contains("observation")) bars.push_back({b["backend"], b["observation"]["median_ms"]});
  }
  const json& s = report["setup"];
  return {"time.svg", bar_chart_svg("causal attention B=" + s["batch"].dump() +
                                        " H=" + s["heads"].dump() + " T=" + s["seq_len"].dump() +
                                        " D=" + s["head_dim"].dump() + " (median per call)",
                                    "ms", bars)};
}

std::pair<std::string, std::string> study_roofline(const json& report, const Roofs& roofs) {
  std::vector<RooflinePoint> points;
  for (const json& b : report["backends"]) {
    if (!b.contains("observation")) continue;
    const std::string name = b["backend"];
    points.push_back({name, name, false, b["prediction"]["useful_flops"].get<double>(),
                      b["prediction"]["bytes_at_least"].get<double>(),
                      b["observation"]["median_ms"].get<double>() / 1e3});
  }
  const json& s = report["setup"];
  return {"roofline.svg", roofline_svg("causal attention B=" + s["batch"].dump() +
                                           " H=" + s["heads"].dump() + " T=" + s["seq_len"].dump() +
                                           " D=" + s["head_dim"].dump() + " on the roofline",
                                       roofs, points, "")};
}

}  // namespace attnscope::cli
