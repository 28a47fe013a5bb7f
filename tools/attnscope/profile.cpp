// `attnscope profile`: runs a model (prefill, then decode steps) or the attention op alone with
// the profiler on, and writes what it saw: a Chrome trace (--trace), the summary table
// (--summary, the default when no file is asked for) and the summary as JSON (--json).
//
// After the table it prints the profiler's overhead on decode steps (profiled vs unprofiled
// steps of the same run, see profile_run.h) and, for every profiled step, the steps observed
// directly inside each attention call against the backend's cost model.
#include <fstream>
#include <iomanip>
#include <iostream>

#include "profiler/chrome_trace.h"
#include "profiler/summary.h"
#include "profiler/summary_json.h"
#include "runtime/error.h"
#include "tools/attnscope/commands.h"
#include "tools/attnscope/common.h"
#include "tools/attnscope/profile_run.h"

namespace attnscope::cli {

namespace {

struct ProfileFlags {
  std::string model;
  std::string op;
  std::string attention = "naive";
  std::int64_t prompt_len = 128;
  std::int64_t gen = 16;
  AttentionShape shape;
  int reps = 4;
  int threads = 0;
  std::uint64_t seed = 0;
  std::string trace_path;
  std::string json_path;
  bool summary = false;
  std::string sort = "total";
  std::string steps = "all";
};

std::ofstream open_output(const std::string& path) {
  std::ofstream out(path);
  check(out.good(), path, "cannot open for writing");
  return out;
}

// What the run measured beyond the table: overhead and steps against the cost model.
nlohmann::json run_facts(const ProfiledRun& run, const std::string& phase_for_overhead) {
  nlohmann::json steps = nlohmann::json::array();
  for (const StepRecord& step : run.steps) {
    nlohmann::json entry = {{"phase", step.phase},     {"q_len", step.q_len},
                            {"kv_len", step.kv_len},   {"profiled", step.profiled},
                            {"wall_ms", step.wall_ms}, {"peak_bytes", step.peak_bytes}};
    if (step.profiled) {
      entry["attention_ms"] = step.attention_ms;
      entry["attention_calls"] = step.attention_calls;
      entry["steps_observed_min"] = step.steps_observed_min;
      entry["steps_observed_max"] = step.steps_observed_max;
      entry["steps_expected"] = step.expected.steps;
      entry["temporary_bytes"] = step.temporary_bytes;
      entry["temporary_bytes_expected"] = step.expected.temporary_bytes;
    }
    steps.push_back(entry);
  }
  nlohmann::json facts = {{"steps", steps}, {"peak_memory_bytes", run.peak_bytes}};
  if (const auto overhead = measure_overhead(run.steps, phase_for_overhead)) {
    facts["overhead"] = {{"phase", phase_for_overhead},
                         {"profiled_ms", overhead->profiled_ms},
                         {"unprofiled_ms", overhead->unprofiled_ms},
                         {"profiled_steps", overhead->profiled_steps},
                         {"unprofiled_steps", overhead->unprofiled_steps},
                         {"percent", overhead->percent()}};
  }
  return facts;
}

void print_facts(const ProfiledRun& run, const std::string& phase_for_overhead) {
  int profiled = 0, mismatches = 0;
  for (const StepRecord& step : run.steps) {
    if (!step.profiled) continue;
    ++profiled;
    mismatches += step.step_mismatches;
    if (step.step_mismatches) {
      std::cout << step.phase << " step (q_len " << step.q_len << ", kv_len " << step.kv_len
                << "): " << step.step_mismatches << " attention calls with "
                << step.steps_observed_min << ".." << step.steps_observed_max
                << " steps, cost model says " << step.expected.steps << "\n";
    }
  }
  std::cout << "profiled " << profiled << " of " << run.steps.size()
            << " steps; attention calls whose steps differ from the cost model: " << mismatches
            << "; peak memory " << profiler::binary_bytes(run.peak_bytes) << "\n";
  if (const auto overhead = measure_overhead(run.steps, phase_for_overhead)) {
    std::cout << std::fixed << std::setprecision(3) << "profiling overhead on "
              << phase_for_overhead << " steps: " << std::showpos << overhead->percent()
              << std::noshowpos << "% (median " << overhead->profiled_ms << " ms profiled over "
              << overhead->profiled_steps << " steps vs " << overhead->unprofiled_ms
              << " ms unprofiled over " << overhead->unprofiled_steps << ")\n";
  } else {
    std::cout << "profiling overhead: not measured (needs profiled and unprofiled "
              << phase_for_overhead << " steps)\n";
  }
}

int run_profile(const ProfileFlags& flags) {
  Context ctx(flags.threads);
  ProfiledRun run;
  std::string process_name;
  std::string overhead_phase = "decode";
  if (!flags.op.empty()) {
    const ops::attention::Backend& backend = ops::attention::find_backend(flags.attention);
    run = profile_attention_op(ctx, backend, flags.shape, flags.reps, flags.seed);
    process_name = "attnscope attention." + std::string(backend.name());
    overhead_phase = "attention";
  } else {
    gpt2::Model model = load_model(flags.model, ctx);
    model.set_attention(flags.attention);
    ModelRunOptions options;
    options.prompt_len = flags.prompt_len;
    options.gen = flags.gen;
    options.capture = parse_capture(flags.steps);
    options.seed = flags.seed;
    run = profile_model(ctx, model, options);
    process_name =
        "attnscope " + flags.model + " attention " + std::string(model.attention().name());
  }

  const std::vector<profiler::Event>& events = run.tracer->events();
  const std::vector<profiler::SummaryRow> rows =
      profiler::summarize(events, profiler::parse_sort_key(flags.sort));
  const std::int64_t wall = profiler::wall_ns(events);
  if (!flags.trace_path.empty()) {
    std::ofstream out = open_output(flags.trace_path);
    profiler::write_chrome_trace(run.tracer->trace(), process_name, out);
  }
  if (!flags.json_path.empty()) {
    nlohmann::json json = profiler::summary_json(rows, wall, run.peak_bytes);
    json["run"] = {{"source", process_name}, {"threads", ctx.threads()}, {"cpu", cpu_model()}};
    json["facts"] = run_facts(run, overhead_phase);
    std::ofstream out = open_output(flags.json_path);
    out << json.dump(2) << "\n";
  }
  if (flags.summary || (flags.trace_path.empty() && flags.json_path.empty())) {
    std::cout << process_name << ", " << ctx.threads() << " threads, " << cpu_model() << "\n\n"
              << profiler::format_summary_table(rows, wall) << "\n";
    print_facts(run, overhead_phase);
  }
  return 0;
}

}  // namespace

Subcommand add_profile(CLI::App& app) {
  auto flags = std::make_shared<ProfileFlags>();
  CLI::App* sub = app.add_subcommand(
      "profile", "Profile a model's prefill and decode steps, or the attention op alone");
  CLI::Option* model = sub->add_option("--model", flags->model,
                                       "A model directory or synthetic:NAME (see generate --help)");
  CLI::Option* op = sub->add_option("--op", flags->op, "Profile one op alone instead of a model")
                        ->check(CLI::IsMember({"attention"}))
                        ->excludes(model);
  add_attention_flag(*sub, flags->attention);
  const auto positive = CLI::Range(std::int64_t{1}, std::int64_t{1} << 20);
  sub->add_option("--prompt-len", flags->prompt_len, "Prompt tokens (random ids) to prefill")
      ->capture_default_str()
      ->check(positive);
  sub->add_option("--gen", flags->gen, "Decode steps after the prefill")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 20));
  sub->add_option("--steps", flags->steps, "Steps to capture: prefill, decode or all")
      ->capture_default_str()
      ->check(CLI::IsMember({"prefill", "decode", "all"}));
  sub->add_option("--batch", flags->shape.batch, "--op attention: batch")
      ->capture_default_str()
      ->check(positive);
  sub->add_option("--heads", flags->shape.heads, "--op attention: heads")
      ->capture_default_str()
      ->check(positive);
  sub->add_option("--seq-len", flags->shape.seq_len, "--op attention: causal prefill length")
      ->capture_default_str()
      ->check(positive);
  sub->add_option("--head-dim", flags->shape.head_dim, "--op attention: head dimension")
      ->capture_default_str()
      ->check(positive);
  sub->add_option("--reps", flags->reps, "--op attention: calls after the warm-up")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  add_threads_flag(*sub, flags->threads);
  sub->add_option("--seed", flags->seed, "Seed of the random ids or inputs")->capture_default_str();
  sub->add_option("--trace", flags->trace_path,
                  "Write a Chrome trace (JSON) for Perfetto or chrome://tracing");
  sub->add_flag("--summary", flags->summary,
                "Print the summary table (the default when neither --trace nor --json is given)");
  sub->add_option("--sort", flags->sort, "Summary column to sort by: total, self, calls, name")
      ->capture_default_str()
      ->check(CLI::IsMember(profiler::sort_key_names()));
  sub->add_option("--json", flags->json_path, "Write the summary and the run's facts as JSON");
  sub->callback([model, op] {
    if (model->count() + op->count() == 0) {
      throw CLI::ValidationError("--model", "profile needs --model M or --op attention");
    }
  });
  return {sub, [flags] { return run_profile(*flags); }};
}

}  // namespace attnscope::cli
