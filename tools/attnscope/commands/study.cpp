// `attnscope study`: the seed study's experiment reproduced in one command. Causal attention
// at one shape (by default the study's B=8, H=16, T=1024, D=64), every backend (or --attn),
// on --device in --dtype; the report (study_report.h) prints the prediction from the cost
// models first, then the observation, then the study's published A100 numbers beside them.
//
// Why a command of its own rather than `compare --op attention`: compare measures a model end
// to end (prefill and decode at several prompt lengths), the study measures one op at one
// shape and sets it beside published numbers; one flag switching between two reports with
// different tables and flags would make both harder to read.
//
// Per backend: one profiled call (after a warm-up) on its own inputs gives the steps the
// profiler saw, the temporaries the allocator measured, the kernels on a GPU and a Chrome trace
// (DIR/trace-BACKEND.json). Then rounds of unprofiled timed calls on shared inputs, every
// backend once per round in a rotating order, as many rounds as repetition_plan.h's rule asks
// (on a GPU each call is timed to the end of its kernels).
//
// Cost: the inputs (4 B H T D elements) plus the largest backend's temporaries (naive: 4 score
// matrices, 2 GiB at the default shape in f32); per round one call of every backend (about
// 1-2 s for naive and math at the default shape on 2 CPU cores).
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <ostream>

#include "ops/attention/registry.h"
#include "profiler/chrome_trace.h"
#include "profiler/summary.h"
#include "runtime/dtype.h"
#include "runtime/error.h"
#include "tools/attnscope/cli/flags.h"
#include "tools/attnscope/cli/machine_info.h"
#include "tools/attnscope/cli/output_files.h"
#include "tools/attnscope/commands/commands.h"
#include "tools/attnscope/measure/attention_timing.h"
#include "tools/attnscope/measure/ceilings.h"
#include "tools/attnscope/measure/profile_run.h"
#include "tools/attnscope/measure/repetition_plan.h"
#include "tools/attnscope/report/study_report.h"

namespace attnscope::cli {

namespace {

namespace attention = ops::attention;

struct StudyFlags {
  attention::Shape shape = kStudyShape;
  std::vector<std::string> backends = attention::backend_names();
  RepetitionPlan plan;
  DeviceOptions device;
  std::uint64_t seed = 0;
  std::string out_dir;
};

// The profiled call of one backend: what its steps, temporaries and kernels were, and its trace.
// Profiles one call of `backend` and fills `result` with what it observed; returns the run, whose
// trace run_study writes. Throws Error when the backend does not support `shape`.
ProfiledRun observe(Context& ctx, const attention::Backend& backend, const StudyFlags& flags,
                    const attention::Shape& shape, StudyBackend& result) {
  AttentionRunOptions options;
  options.shape = shape;
  options.reps = 1;
  options.seed = flags.seed;
  ProfiledRun run = profile_attention_op(ctx, backend, options);
  const StepRecord& step = run.steps.front();
  result.predicted = step.expected;
  result.steps_observed_min = step.steps_observed_min;
  result.steps_observed_max = step.steps_observed_max;
  result.temporary_bytes = step.temporary_bytes;
  for (const profiler::KernelRow& row : profiler::summarize_kernels(run.tracer->trace())) {
    if (std::find(result.kernels.begin(), result.kernels.end(), row.name) == result.kernels.end()) {
      result.kernels.push_back(row.name);
    }
  }
  return run;
}

// Writes the trace of `run` as OUT_DIR/trace-BACKEND.json and names it in `result`.
void write_backend_trace(const StudyFlags& flags, const ProfiledRun& run, StudyBackend& result) {
  result.trace_file = "trace-" + result.backend + ".json";
  write_output_file(std::filesystem::path(flags.out_dir) / result.trace_file,
                    [&](std::ostream& out) {
                      profiler::write_chrome_trace(
                          run.tracer->trace(), "attnscope study attention." + result.backend, out);
                    });
}

int run_study(const StudyFlags& flags) {
  create_output_directory(flags.out_dir);
  attention::Shape shape = flags.shape;
  shape.dtype = parse_attention_dtype(flags.device.dtype);
  const std::unique_ptr<Context> context = make_context(flags.device);
  Context& ctx = *context;

  std::vector<StudyBackend> results;
  std::vector<const attention::Backend*> backends;
  for (const attention::Backend* named : attention::resolve_backends(flags.backends)) {
    const attention::Backend& backend = *named;
    StudyBackend result;
    result.backend = std::string(backend.name());
    std::cerr << "study: profiling " << result.backend << "\n";
    std::optional<ProfiledRun> run;
    try {
      run = observe(ctx, backend, flags, shape, result);
    } catch (const DeviceError&) {
      throw;  // a fault of the GPU, not a limit of the backend: it must fail the run
    } catch (const Error& e) {
      result.unsupported_reason = e.what();
    }
    if (run) write_backend_trace(flags, *run, result);  // a failed write fails the run
    backends.push_back(run ? &backend : nullptr);
    results.push_back(std::move(result));
  }

  const attention::Call call = random_attention_call(ctx, shape, flags.seed + 1);
  for (const attention::Backend* backend : backends) {
    if (backend) backend->attend(ctx, call);  // warm-up on the shared inputs
  }
  ctx.synchronize();
  auto widest_percent = [&] { return 100.0 * study_widest_width(results); };
  const RoundsRun rounds = run_rounds(flags.plan, ctx.threads(), widest_percent, [&](int round) {
    for (std::size_t i = 0; i < results.size(); ++i) {
      const std::size_t at = (i + static_cast<std::size_t>(round)) % results.size();
      if (!backends[at]) continue;
      std::cerr << "study: round " << round + 1 << ", " << results[at].backend << "\n";
      results[at].times_ms.push_back(time_attention(ctx, *backends[at], call));
    }
  });

  StudySetup setup;
  setup.shape = shape;
  setup.device = ctx.describe();
  setup.cpu = cpu_model();
  setup.threads = ctx.threads();
  setup.rounds = rounds;
  const nlohmann::json report = build_study_report(setup, results);
  const std::string markdown = study_markdown(report);
  const Ceilings ceilings = machine_ceilings(ctx, shape.dtype, false);
  const Roofs roofs = {ceilings.flops_per_s, ceilings.bytes_per_s, ceilings.caption()};
  write_report_files(flags.out_dir, report, markdown,
                     {study_chart(report), study_roofline(report, roofs)});
  std::cout << markdown;
  return 0;
}

}  // namespace

Subcommand add_study(CLI::App& app) {
  auto flags = std::make_shared<StudyFlags>();
  flags->plan.min_reps = 3;
  CLI::App* sub = app.add_subcommand(
      "study",
      "Reproduce the seed study: causal attention with every backend, the cost models' "
      "prediction, the observation and the study's A100 numbers side by side");
  const auto positive = CLI::Range(std::int64_t{1}, std::int64_t{1} << 24);
  sub->add_option("--batch", flags->shape.batch, "Batch size")
      ->capture_default_str()
      ->check(positive);
  add_prefill_shape_flags(*sub, flags->shape,
                          {"Heads", "Tokens (queries and keys)", "Head dimension"}, positive);
  add_attention_list_flag(*sub, flags->backends, AttentionList::AllowingAll,
                          "Backends, a comma list of " + attention::backend_list() + " (or all)",
                          attention::backend_list());
  add_repetition_flags(*sub, flags->plan, "times one call of every backend");
  add_device_flags(*sub, flags->device);
  sub->add_option("--seed", flags->seed, "Seed of the random inputs")->capture_default_str();
  sub->add_option(
         "--out", flags->out_dir,
         "Directory for report.md, report.json, time.svg, roofline.svg and trace-BACKEND.json")
      ->required();
  return {sub, [flags] { return run_study(*flags); }};
}

}  // namespace attnscope::cli
