// `attnscope compare`: profiles prefill and decode for each chosen attention backend at each
// prompt length and writes a report (DIR/report.json, DIR/report.md, DIR/*.svg) whose findings
// are computed from the measurements (see compare_report.h). With --diff A.json B.json it sets
// two saved profile summaries side by side instead (see compare_diff.h).
//
// Repetitions: rounds, each running every (prompt length, backend) case once, the backends
// interleaved (and the order rotated each round) so that drifts of the machine hit them alike;
// how many rounds is repetition_plan.h's rule. Load average and CPU clock are sampled before,
// between rounds and after (machine_info.h).
//
// Cost: backends x prompt lengths x rounds runs of one prefill and --gen decode steps, on one
// model loaded once. --device cuda runs them on the GPU (steps timed to the end of their kernels,
// attention shares from device time; see profile_run.h), in --dtype.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "ops/attention/registry.h"
#include "runtime/dtype.h"
#include "runtime/error.h"
#include "tools/attnscope/cli/flags.h"
#include "tools/attnscope/cli/machine_info.h"
#include "tools/attnscope/cli/model_loading.h"
#include "tools/attnscope/cli/output_files.h"
#include "tools/attnscope/commands/commands.h"
#include "tools/attnscope/measure/profile_run.h"
#include "tools/attnscope/measure/repetition_plan.h"
#include "tools/attnscope/report/compare_diff.h"
#include "tools/attnscope/report/compare_report.h"
#include "tools/attnscope/report/statistics.h"

namespace attnscope::cli {

namespace {

struct CompareFlags {
  std::string model;
  std::vector<std::string> backends = ops::attention::backend_names();
  std::vector<std::int64_t> prompt_lens = {128, 512};
  std::int64_t gen = 16;
  RepetitionPlan plan;
  DeviceOptions device;
  std::uint64_t seed = 0;
  std::string out_dir;
  std::vector<std::string> diff;
};

// Adds one run (one repetition) to the case: its prefill time, the medians of its unprofiled
// and profiled decode steps, its profiling overhead, and what the profiler saw.
void add_run(const ProfiledRun& run, CaseResult& result) {
  const bool first_run = result.prefill_ms.empty();
  bool first_decode = first_run;
  std::vector<double> unprofiled, profiled;
  for (const StepRecord& step : run.steps) {
    if (step.phase == "prefill") {
      result.prefill_ms.push_back(step.wall_ms);
      result.prefill_attention_ms += step.attention_ms;
      result.prefill_forward_ms += step.forward_ms;
      result.prefill_steps_observed_min = step.steps_observed_min;
      result.prefill_steps_observed_max = step.steps_observed_max;
      result.prefill_steps_expected = step.expected.steps;
      result.prefill_temporary_bytes = step.temporary_bytes;
      result.prefill_temporary_bytes_expected = step.expected.temporary_bytes;
      result.prefill_peak_bytes = std::max(result.prefill_peak_bytes, step.peak_bytes);
    } else if (!step.profiled) {
      unprofiled.push_back(step.wall_ms);
      continue;
    } else {
      profiled.push_back(step.wall_ms);
      result.decode_attention_ms += step.attention_ms;
      result.decode_forward_ms += step.forward_ms;
      auto widen = [&](int& low, int& high, int value) {
        low = first_decode ? value : std::min(low, value);
        high = first_decode ? value : std::max(high, value);
      };
      widen(result.decode_steps_observed_min, result.decode_steps_observed_max,
            step.steps_observed_min);
      widen(result.decode_steps_observed_min, result.decode_steps_observed_max,
            step.steps_observed_max);
      widen(result.decode_steps_expected_min, result.decode_steps_expected_max,
            step.expected.steps);
      first_decode = false;
      result.decode_temporary_bytes = std::max(result.decode_temporary_bytes, step.temporary_bytes);
      result.decode_temporary_bytes_expected =
          std::max(result.decode_temporary_bytes_expected, step.expected.temporary_bytes);
    }
    if (step.step_mismatches) {
      result.step_mismatches.push_back(step.phase + " q_len " + std::to_string(step.q_len) +
                                       ", kv_len " + std::to_string(step.kv_len) + ": " +
                                       std::to_string(step.step_mismatches) + " calls observed " +
                                       std::to_string(step.steps_observed_min) + ".." +
                                       std::to_string(step.steps_observed_max) +
                                       " steps, cost model " + std::to_string(step.expected.steps));
    }
  }
  const double decode = median(unprofiled), decode_profiled = median(profiled);
  result.decode_ms.push_back(decode);
  result.decode_profiled_ms.push_back(decode_profiled);
  result.overhead_percent.push_back(100.0 * (decode_profiled - decode) / decode);
}

int run_compare(const CompareFlags& flags) {
  if (!flags.diff.empty()) {
    std::cout << diff_profiles(flags.diff[0], flags.diff[1]);
    return 0;
  }
  create_output_directory(flags.out_dir);

  const std::unique_ptr<Context> context = make_context(flags.device);
  Context& ctx = *context;
  const std::unique_ptr<LanguageModel> loaded =
      load_model(flags.model, ctx, parse_dtype(flags.device.dtype));
  LanguageModel& model = *loaded;
  const std::vector<const ops::attention::Backend*> backends =
      ops::attention::resolve_backends(flags.backends);
  std::vector<CaseResult> cases;
  for (std::int64_t prompt_len : flags.prompt_lens) {
    for (const ops::attention::Backend* backend : backends) {
      CaseResult result;
      result.backend = std::string(backend->name());
      result.prompt_len = prompt_len;
      cases.push_back(std::move(result));
    }
  }
  auto widest_percent = [&] { return 100.0 * widest_deciding_width(cases); };
  const RoundsRun rounds = run_rounds(flags.plan, ctx.threads(), widest_percent, [&](int round) {
    const std::size_t count = backends.size();
    for (std::size_t i = 0; i < cases.size(); ++i) {
      // Within each prompt length the backends' order rotates by one every round.
      const std::size_t base = i / count * count;
      CaseResult& result = cases[base + (i % count + static_cast<std::size_t>(round)) % count];
      std::cerr << "compare: round " << round + 1 << ", " << result.backend << ", prompt "
                << result.prompt_len << "\n";
      model.set_attention(result.backend);
      ModelRunOptions options;
      options.prompt_len = result.prompt_len;
      options.gen = flags.gen;
      options.seed = flags.seed + static_cast<std::uint64_t>(round);
      add_run(profile_model(ctx, model, options), result);
    }
  });
  CompareSetup setup;
  setup.model = flags.model;
  setup.cpu = cpu_model();
  setup.cpu_kernels = cpu_kernels();
  setup.threads = ctx.threads();
  if (ctx.device() == Device::CUDA) setup.device = ctx.describe();
  setup.dtype = flags.device.dtype;
  setup.weight_bytes = model.weight_bytes();
  setup.gen = flags.gen;
  setup.rounds = rounds;
  const nlohmann::json report = build_report(setup, cases);
  const std::string markdown = report_markdown(report);
  write_report_files(flags.out_dir, report, markdown, report_charts(report));
  std::cout << markdown;
  return 0;
}

}  // namespace

Subcommand add_compare(CLI::App& app) {
  auto flags = std::make_shared<CompareFlags>();
  CLI::App* sub = app.add_subcommand(
      "compare",
      "Profile every attention backend on a model and write a report, or diff two "
      "profile summaries");
  CLI::Option* model = sub->add_option("-m,--model", flags->model,
                                       "A model directory or synthetic:NAME (see generate --help)");
  add_attention_list_flag(*sub, flags->backends, AttentionList::NamesOnly,
                          "Backends to compare, a comma list of " + ops::attention::backend_list(),
                          ops::attention::backend_list());
  sub->add_option("--prompt-lens", flags->prompt_lens, "Prompt lengths, a comma list")
      ->delimiter(',')
      ->default_str("128,512")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  sub->add_option("--gen", flags->gen,
                  "Profiled decode steps after each prefill, each beside one unprofiled (timed) "
                  "step")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
  add_repetition_flags(*sub, flags->plan, "runs every backend at every prompt length once");
  add_device_flags(*sub, flags->device);
  sub->add_option("--seed", flags->seed, "Seed of the random prompt ids")->capture_default_str();
  CLI::Option* out = sub->add_option("--out", flags->out_dir,
                                     "Directory for report.md, report.json and the SVG charts");
  sub->add_option("--diff", flags->diff, "Two JSON files from `attnscope profile --json`")
      ->expected(2)
      ->excludes(model)
      ->excludes(out);
  sub->callback([flags, model, out] {
    if (!flags->diff.empty()) return;
    if (model->count() == 0 || out->count() == 0) {
      throw CLI::ValidationError("--model",
                                 "compare needs --model M and --out DIR (or --diff A B)");
    }
  });
  return {sub, [flags] { return run_compare(*flags); }};
}

}  // namespace attnscope::cli
