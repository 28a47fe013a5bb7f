// `attnscope profile`: runs a model (prefill, then decode steps) or the attention op alone with
// the profiler on, and writes what it saw: a Chrome trace (--trace), the summary table
// (--summary, the default when no file is asked for) and the summary as JSON (--json).
//
// After the table it prints the profiler's overhead on decode steps (profiled vs unprofiled
// steps of the same run, see profile_run.h) and, for every profiled step, the steps observed
// directly inside each attention call against the backend's cost model.
//
// With --device cuda the table gains device time per scope (CUPTI kernel records, or CUDA
// events with --gpu-timer events and when CUPTI cannot start), a table of kernels (launch
// shape, theoretical occupancy) follows, and the Chrome trace gets the GPU's streams and flow
// arrows from each launch to its kernel. --fidelity times every scope both ways and prints
// CUPTI's kernel durations against the CUDA events around the same launches. With CUPTI, a line
// says where the decode steps' GPU time went: kernels, copies and memsets per step, the time they
// ran, the time the GPU sat idle between them (device_step_times, profile_run.h).
#include <CLI/CLI.hpp>
#include <iomanip>
#include <iostream>
#include <memory>
#include <ostream>
#include <sstream>

#include "profiler/chrome_trace.h"
#include "profiler/device_time.h"
#include "profiler/summary.h"
#include "profiler/summary_json.h"
#include "runtime/dtype.h"
#include "runtime/error.h"
#include "tools/attnscope/cli/flags.h"
#include "tools/attnscope/cli/machine_info.h"
#include "tools/attnscope/cli/model_loading.h"
#include "tools/attnscope/cli/output_files.h"
#include "tools/attnscope/commands/commands.h"
#include "tools/attnscope/measure/attention_map.h"
#include "tools/attnscope/measure/ceilings.h"
#include "tools/attnscope/measure/profile_run.h"
#include "tools/attnscope/report/roofline_svg.h"

namespace attnscope::cli {

namespace {

struct ProfileFlags {
  std::string model;
  std::string op;
  std::string attention = "flash";
  std::int64_t prompt_len = 0;  // 0: 128, fewer when the context holds less beside --gen
  std::int64_t gen = 16;
  std::int64_t model_batch = 1;               // --batch when given with --model
  ops::attention::Shape shape = kStudyShape;  // --op attention's causal prefill
  bool decode = false;                        // --op attention: one query against the cache
  int reps = 4;
  DeviceOptions device;
  std::string gpu_timer = "cupti";
  bool fidelity = false;
  std::uint64_t seed = 0;
  std::string trace_path;
  std::string json_path;
  bool summary = false;
  std::string sort;  // "" = total on the CPU, device on a GPU
  std::string steps = "all";
  AttentionMapOptions attention_map;
  std::string roofline_path;
  bool refresh_ceilings = false;
  bool cuda_graphs = false;
};

constexpr std::size_t kKernelRowsShown = 25;

// What the run measured beyond the table: overhead and steps against the cost model.
nlohmann::json run_facts(const ProfiledRun& run, const std::string& phase_for_overhead) {
  nlohmann::json steps = nlohmann::json::array();
  for (const StepRecord& step : run.steps) {
    nlohmann::json entry = {{"phase", step.phase},     {"q_len", step.q_len},
                            {"kv_len", step.kv_len},   {"profiled", step.profiled},
                            {"wall_ms", step.wall_ms}, {"peak_bytes", step.peak_bytes}};
    if (step.profiled) {
      entry["device_times"] = step.device_times;
      entry["attention_ms"] = step.attention_ms;
      entry["attention_calls"] = step.attention_calls;
      entry["steps_observed_min"] = step.steps_observed_min;
      entry["steps_observed_max"] = step.steps_observed_max;
      entry["steps_expected"] = step.expected.steps;
      entry["temporary_bytes"] = step.temporary_bytes;
      entry["temporary_bytes_expected"] = step.expected.temporary_bytes;
      entry["attention_by_layer"] = profiler::layer_times_json(
          profiler::times_by_layer(run.tracer->events(), step.first_event, step.end_event));
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
  if (const auto times = device_step_times(run.steps, phase_for_overhead)) {
    facts["device_steps"] = {{"phase", phase_for_overhead},
                             {"steps", times->steps},
                             {"records", times->records},
                             {"busy_ms", times->busy_ms},
                             {"span_ms", times->span_ms},
                             {"idle_ms", times->idle_ms},
                             {"idle_percent", times->idle_percent},
                             {"idle_us_per_gap", times->idle_us_per_gap},
                             {"unprofiled_ms", times->unprofiled_ms}};
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
  if (const auto times = device_step_times(run.steps, phase_for_overhead)) {
    std::ostringstream line;
    line << std::fixed << std::setprecision(3) << phase_for_overhead
         << " steps on the GPU (medians of " << times->steps
         << " profiled): " << std::setprecision(0) << times->records
         << " kernels, copies and memsets ran " << std::setprecision(3) << times->busy_ms
         << " ms of the " << times->span_ms
         << " ms from the first one's start to the last one's end; idle " << times->idle_ms
         << " ms (" << std::setprecision(1) << times->idle_percent << "%), " << std::setprecision(2)
         << times->idle_us_per_gap << " us per gap between them";
    if (times->unprofiled_ms > 0) {
      line << std::setprecision(3) << "; an unprofiled step took " << times->unprofiled_ms << " ms";
    }
    std::cout << line.str() << "\n";
  }
}

// The events of the profiled steps of `phase`, in one list (their ids stay unique).
std::vector<profiler::Event> phase_events(const ProfiledRun& run, const std::string& phase) {
  std::vector<profiler::Event> events;
  for (const StepRecord& step : run.steps) {
    if (!step.profiled || step.phase != phase) continue;
    const auto& all = run.tracer->events();
    events.insert(events.end(), all.begin() + static_cast<std::ptrdiff_t>(step.first_event),
                  all.begin() + static_cast<std::ptrdiff_t>(step.end_event));
  }
  return events;
}

// Attention time per layer over the profiled steps of each phase (profiler::times_by_layer).
void print_layer_tables(const ProfiledRun& run) {
  for (const std::string phase : {"prefill", "decode"}) {
    const std::vector<profiler::Event> events = phase_events(run, phase);
    const std::vector<profiler::LayerTime> layers =
        profiler::times_by_layer(events, 0, events.size());
    if (layers.empty()) continue;
    std::cout << "\nattention per layer, " << phase << " steps (summed over the profiled ones):\n"
              << profiler::format_layer_table(layers);
  }
}

// Every op of the profiled prefill and decode steps with known FLOPs and bytes as a point (the
// attention calls in their backend's colour, filled for prefill, hollow for decode) under this
// machine's roofs (measure/ceilings.h).
std::string profile_roofline(Context& ctx, const ProfiledRun& run, DType dtype, bool refresh,
                             const std::string& title) {
  const Ceilings ceilings = machine_ceilings(ctx, dtype, refresh);
  std::vector<RooflinePoint> points;
  for (const std::string phase : {"prefill", "decode", "attention"}) {  // attention: --op
    const std::vector<profiler::Event> events = phase_events(run, phase);
    for (const profiler::SummaryRow& row : profiler::summarize(events, profiler::SortKey::Total)) {
      // Layers and blocks are sums of their ops; a backend's steps are its own point's work.
      if (row.category == "layer" || row.category == "block" || row.category == "kernel") continue;
      const std::int64_t ns = row.device_measured ? row.device_total_ns : row.total_ns;
      const bool attention = row.category == "attention";
      points.push_back({row.name, attention ? row.name.substr(row.name.find('.') + 1) : "other ops",
                        phase == "decode", static_cast<double>(row.flops),
                        static_cast<double>(row.bytes), static_cast<double>(ns) / 1e9});
    }
  }
  const Roofs roofs = {ceilings.flops_per_s, ceilings.bytes_per_s, ceilings.caption()};
  return roofline_svg(title, roofs, points, "filled: prefill, hollow: decode");
}

// What the GPU side measured, after the table: how, what was lost, and the kernels.
void print_device_facts(const profiler::Trace& trace, bool fidelity) {
  std::size_t work = 0;
  for (const profiler::DeviceEvent& d : trace.device) work += d.is_work() ? 1 : 0;
  std::cout << "device timing: " << trace.device_timing << " (" << trace.device_name << "; " << work
            << " kernel/copy records, " << trace.dropped_records << " dropped)\n";
  if (trace.graph_work_attributed + trace.graph_work_unattributed > 0) {
    std::cout << "CUDA graphs: " << trace.graph_work_attributed
              << " replayed kernel/copy records given the scope that captured them, "
              << trace.graph_work_unattributed << " left with the graph launch's\n";
  }
  for (const std::string& note : trace.notes) std::cout << "note: " << note << "\n";
  if (work > 0) {
    std::cout << "\n"
              << profiler::format_kernel_table(profiler::summarize_kernels(trace),
                                               kKernelRowsShown);
  }
  if (fidelity) {
    std::cout << "\nfidelity: CUPTI kernel durations against CUDA events around the same scopes\n"
              << profiler::format_fidelity_table(profiler::fidelity_rows(trace.events));
  }
}

int run_profile(const ProfileFlags& flags) {
  const std::unique_ptr<Context> ctx = make_context(flags.device);
  const bool gpu = ctx->device() == Device::CUDA;
  check(gpu || !flags.fidelity, "--fidelity", "needs --device cuda (it compares GPU timers)");
  check(gpu || !flags.cuda_graphs, "--cuda-graphs", "needs --device cuda (graphs run on a GPU)");
  const DType dtype = parse_dtype(flags.device.dtype);
  const profiler::GpuTiming timing =
      flags.fidelity ? profiler::GpuTiming::Both
                     : (flags.gpu_timer == "events" ? profiler::GpuTiming::CudaEvents
                                                    : profiler::GpuTiming::Cupti);
  ProfiledRun run;
  std::string process_name;
  std::string overhead_phase = "decode";
  if (!flags.op.empty()) {
    const ops::attention::Backend& backend = ops::attention::find_backend(flags.attention);
    AttentionRunOptions options;
    options.shape = flags.shape;
    options.shape.dtype = parse_attention_dtype(flags.device.dtype);
    if (flags.decode) options.shape.q_len = 1;
    options.reps = flags.reps;
    options.seed = flags.seed;
    options.gpu_timing = timing;
    run = profile_attention_op(*ctx, backend, options);
    process_name = "attnscope attention." + std::string(backend.name());
    overhead_phase = "attention";
  } else {
    const std::unique_ptr<LanguageModel> loaded = load_model(flags.model, *ctx, dtype);
    LanguageModel& model = *loaded;
    model.set_attention(flags.attention);
    ModelRunOptions options;
    options.batch = flags.model_batch;
    options.prompt_len = flags.prompt_len
                             ? flags.prompt_len
                             : std::min<std::int64_t>(128, model.config().context_length -
                                                               decode_steps_run(flags.gen));
    options.gen = flags.gen;
    options.capture = parse_capture(flags.steps);
    options.seed = flags.seed;
    options.gpu_timing = timing;
    options.cuda_graphs = flags.cuda_graphs;
    with_attention_map(*ctx, model, flags.attention_map, AttentionMapSteps::Prefill,
                       [&] { run = profile_model(*ctx, model, options); });
    process_name =
        "attnscope " + flags.model + " attention " + std::string(model.attention().name());
  }
  if (gpu || dtype != DType::F32) process_name += " (" + std::string(dtype_name(dtype)) + ")";

  const profiler::Trace& trace = run.tracer->trace();
  const std::string sort = !flags.sort.empty() ? flags.sort : (gpu ? "device" : "total");
  const std::vector<profiler::SummaryRow> rows =
      profiler::summarize(trace.events, profiler::parse_sort_key(sort));
  const std::int64_t wall = profiler::wall_ns(trace.events);
  const std::int64_t device_wall = profiler::device_wall_ns(trace.events);
  if (!flags.trace_path.empty()) {
    write_output_file(flags.trace_path, [&](std::ostream& out) {
      profiler::write_chrome_trace(trace, process_name, out);
    });
  }
  if (!flags.json_path.empty()) {
    nlohmann::json json = profiler::summary_json(rows, wall, run.peak_bytes, device_wall,
                                                 profiler::summarize_kernels(trace));
    json["run"] = {{"source", process_name},
                   {"threads", ctx->threads()},
                   {"cpu", cpu_model()},
                   {"device", ctx->describe()},
                   {"dtype", dtype_name(dtype)},
                   {"device_timing", trace.device_timing},
                   {"dropped_records", trace.dropped_records},
                   {"graph_work_attributed", trace.graph_work_attributed},
                   {"graph_work_unattributed", trace.graph_work_unattributed},
                   {"notes", trace.notes}};
    json["facts"] = run_facts(run, overhead_phase);
    if (flags.fidelity) {
      nlohmann::json fidelity = nlohmann::json::array();
      for (const profiler::FidelityRow& row : profiler::fidelity_rows(trace.events)) {
        fidelity.push_back({{"name", row.name},
                            {"calls", row.calls},
                            {"kernels", row.kernels},
                            {"cupti_ns", row.cupti_ns},
                            {"event_ns", row.event_ns},
                            {"ratio", row.ratio()}});
      }
      json["fidelity"] = fidelity;
    }
    write_text_file(flags.json_path, json.dump(2) + "\n");
  }
  if (flags.summary || (flags.trace_path.empty() && flags.json_path.empty())) {
    std::cout << process_name << ", "
              << (gpu ? ctx->describe()
                      : std::to_string(ctx->threads()) + " threads, " + cpu_model())
              << "\n\n"
              << profiler::format_summary_table(rows, wall, device_wall) << "\n";
    print_facts(run, overhead_phase);
    print_layer_tables(run);
    if (gpu) print_device_facts(trace, flags.fidelity);
  }
  if (!flags.roofline_path.empty()) {
    write_text_file(flags.roofline_path,
                    profile_roofline(*ctx, run, dtype, flags.refresh_ceilings, process_name));
  }
  return 0;
}

}  // namespace

Subcommand add_profile(CLI::App& app) {
  auto flags = std::make_shared<ProfileFlags>();
  CLI::App* sub = app.add_subcommand(
      "profile", "Profile a model's prefill and decode steps, or the attention op alone");
  CLI::Option* model = sub->add_option("-m,--model", flags->model,
                                       "A model directory or synthetic:NAME (see generate --help)");
  CLI::Option* op = sub->add_option("--op", flags->op, "Profile one op alone instead of a model")
                        ->check(CLI::IsMember({"attention"}))
                        ->excludes(model);
  add_attention_flag(*sub, flags->attention);
  const auto positive = CLI::Range(std::int64_t{1}, std::int64_t{1} << 20);
  // Each flag of one kind of run is refused with the other (one line, exit 2), not ignored.
  sub->add_option("--prompt-len", flags->prompt_len,
                  "--model: prompt tokens (random ids) to prefill (default: 128, fewer when the "
                  "model's context holds less beside --gen)")
      ->check(positive)
      ->excludes(op);
  sub->add_option("--gen", flags->gen,
                  "--model: decode steps to profile after the prefill (as many unprofiled ones "
                  "run between them, to measure what profiling costs)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 20))
      ->excludes(op);
  sub->add_option("--steps", flags->steps, "--model: steps to capture: prefill, decode or all")
      ->capture_default_str()
      ->check(CLI::IsMember({"prefill", "decode", "all"}))
      ->excludes(op);
  CLI::Option* batch =
      sub->add_option("--batch", flags->shape.batch,
                      "Rows: --model's prompts decoded together (default 1), --op attention's "
                      "batch (default 8)")
          ->check(positive);
  const PrefillShapeHelp shape_help = {"--op attention: heads",
                                       "--op attention: causal prefill length",
                                       "--op attention: head dimension"};
  for (CLI::Option* option : add_prefill_shape_flags(*sub, flags->shape, shape_help, positive)) {
    option->needs(op);
  }
  sub->add_flag("--decode", flags->decode,
                "--op attention: one query token per sequence against a cache of --seq-len "
                "(a decode step) instead of the causal prefill")
      ->needs(op);
  sub->add_option("--reps", flags->reps, "--op attention: calls after the warm-up")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000))
      ->needs(op);
  add_device_flags(*sub, flags->device);
  CLI::Option* timer =
      sub->add_option("--gpu-timer", flags->gpu_timer,
                      "--device cuda: cupti (kernel records; CUDA events when CUPTI cannot start) "
                      "or events (a CUDA event pair around every scope)")
          ->capture_default_str()
          ->check(CLI::IsMember({"cupti", "events"}));
  sub->add_flag("--fidelity", flags->fidelity,
                "--device cuda: time every scope with CUPTI and CUDA events, and print both per "
                "kernel scope with their ratio")
      ->excludes(timer);
  sub->add_option("--seed", flags->seed, "Seed of the random ids or inputs")->capture_default_str();
  sub->add_option("--trace", flags->trace_path,
                  "Write a Chrome trace (JSON) for Perfetto or chrome://tracing");
  sub->add_flag("--summary", flags->summary,
                "Print the summary table (the default when neither --trace nor --json is given)");
  sub->add_option("--sort", flags->sort,
                  "Summary column to sort by: total, self, calls, name, device, device-self "
                  "(default: total, device on a GPU)")
      ->check(CLI::IsMember(profiler::sort_key_names()));
  sub->add_option("--json", flags->json_path, "Write the summary and the run's facts as JSON");
  sub->add_flag("--cuda-graphs", flags->cuda_graphs,
                "--device cuda --model: decode steps replay CUDA graphs, as generate and bench "
                "run them; each replayed kernel is still given the op and layer that captured it")
      ->needs(model);
  sub->add_option("--roofline", flags->roofline_path,
                  "Write an SVG roofline: every op of the profiled prefill and decode steps as a "
                  "point under this machine's measured GEMM FLOP/s and memory bandwidth");
  sub->add_flag("--refresh-ceilings", flags->refresh_ceilings,
                "With --roofline: measure the machine's ceilings again instead of reading the "
                "cache");
  add_attention_map_flags(*sub, flags->attention_map,
                          "--model: the prefill of batch row 0 (its copy, or flash's recompute, "
                          "in a profiler scope of its own)")
      ->excludes(op);
  sub->callback([model, op, batch, flags] {
    if (model->count() + op->count() == 0) {
      throw CLI::ValidationError("--model", "profile needs --model M or --op attention");
    }
    if (model->count() > 0 && batch->count() > 0) flags->model_batch = flags->shape.batch;
    if (model->count() > 0 && flags->steps == "decode" && flags->gen == 0) {
      throw CLI::ValidationError("--steps", "decode with --gen 0 would profile no step");
    }
    refuse_shared_outputs({{"--trace", flags->trace_path},
                           {"--json", flags->json_path},
                           {"--roofline", flags->roofline_path},
                           {"--attention-out", flags->attention_map.path}});
  });
  return {sub, [flags] { return run_profile(*flags); }};
}

}  // namespace attnscope::cli
