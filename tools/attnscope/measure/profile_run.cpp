// Profiled runs of a model or of the attention op alone (tools/attnscope/measure/profile_run.h).
#include "tools/attnscope/measure/profile_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <random>

#include "profiler/attach.h"
#include "runtime/error.h"
#include "runtime/transfer.h"
#include "tools/attnscope/cli/elapsed.h"
#include "tools/attnscope/report/statistics.h"

namespace attnscope::cli {

namespace attention = ops::attention;

namespace {

// P U U P: steps 0 and 3 of every 4 are profiled.
bool profiled_in_turn(std::int64_t index) { return index % 4 == 0 || index % 4 == 3; }

// A scope's time for the step's facts: the device time when the GPU side measured it, else the
// host time.
std::int64_t measured_ns(const profiler::Event& e) {
  return e.device_ns >= 0 ? e.device_ns : e.duration_ns();
}

// The attention events of [first, end) and their direct children: fills the step's attention
// time, observed steps, mismatches and temporaries.
void read_attention_calls(std::vector<profiler::Event>& events, StepRecord& step) {
  std::int64_t attention_ns = 0;
  bool first = true;
  for (std::size_t i = step.first_event; i < step.end_event; ++i) {
    profiler::Event& call = events[i];
    if (call.category != "attention") continue;
    attention_ns += measured_ns(call);
    ++step.attention_calls;
    const auto children = static_cast<int>(
        std::count_if(events.begin() + static_cast<std::ptrdiff_t>(step.first_event),
                      events.begin() + static_cast<std::ptrdiff_t>(step.end_event),
                      [&](const profiler::Event& e) { return e.parent == call.id; }));
    step.steps_observed_min = first ? children : std::min(step.steps_observed_min, children);
    step.steps_observed_max = first ? children : std::max(step.steps_observed_max, children);
    first = false;
    if (children != step.expected.steps) ++step.step_mismatches;
    step.temporary_bytes = std::max(step.temporary_bytes, call.peak_bytes);
  }
  step.attention_ms = static_cast<double>(attention_ns) / 1e6;
}

// On a GPU: gives the run its device recorder, and says whether the decode steps replay CUDA
// graphs.
void attach_device(Context& ctx, ProfiledRun& run, profiler::GpuTiming timing, bool cuda_graphs) {
  if constexpr (kCudaBuild) {
    if (ctx.device() != Device::CUDA) return;
    run.device = profiler::make_gpu_recorder(ctx, timing);
    run.tracer->set_device_recorder(run.device.get());
    check(!cuda_graphs || !run.device->uses_event_timers(), "--cuda-graphs",
          "needs CUPTI alone: CUDA-event timers cannot be recorded inside a graph capture (drop "
          "--gpu-timer events and --fidelity; where CUPTI cannot start, profile without graphs)");
    const std::string note =
        cuda_graphs
            ? "decode steps replay CUDA graphs, profiled steps and unprofiled alike (captured "
              "anew each step, scopes open): each replayed kernel is given the scope that "
              "captured it; host scope times of decode steps are capture times"
            : "CUDA graphs are off in profile runs, profiled steps and unprofiled alike: every "
              "op launches its kernels one by one (eager), so launch gaps are those of eager "
              "execution; generate and bench may replay graphs (profile --cuda-graphs)";
    run.tracer->trace().notes.push_back(note);
    static bool told = false;  // once per process: compare makes many runs
    if (!told) std::cerr << "attnscope: profiling on cuda: " << note << "\n";
    told = true;
  }
}

// Runs `work` as one step: timed until the device has finished it, profiled when
// `step.profiled` (the profiler is switched on and off outside the clock), with the allocator's
// peak; on a GPU the step's device activity is collected at once.
template <typename Work>
void run_step(Context& ctx, ProfiledRun& run, StepRecord& step, Work work) {
  Allocator& allocator = ctx.allocator();
  allocator.reset_peak();
  step.first_event = run.tracer->events().size();
  {
    std::optional<profiler::Profiling> on;
    if (step.profiled) on.emplace(ctx, *run.tracer);
    const auto start = std::chrono::steady_clock::now();
    work();
    ctx.synchronize();  // a no-op on the CPU
    step.wall_ms = seconds_since(start) * 1e3;
  }
  step.end_event = run.tracer->events().size();
  step.peak_bytes = allocator.peak_bytes();
  run.peak_bytes = std::max(run.peak_bytes, step.peak_bytes);
  if (!step.profiled || step.end_event == step.first_event) return;
  if (run.device) {
    profiler::Trace& trace = run.tracer->trace();
    const std::size_t first_device = trace.device.size();
    run.device->collect(trace);
    step.device_work = profiler::work_span(trace.device, first_device, trace.device.size());
  }
  const profiler::Event& top = run.tracer->events()[step.end_event - 1];
  step.device_times = top.device_ns >= 0;
  step.forward_ms = static_cast<double>(measured_ns(top)) / 1e6;
}

}  // namespace

Capture parse_capture(const std::string& text) {
  if (text == "prefill") return Capture::Prefill;
  if (text == "decode") return Capture::Decode;
  if (text == "all") return Capture::All;
  throw Error("--steps", "unknown value '" + text + "' (valid: prefill, decode, all)");
}

ProfiledRun profile_model(Context& ctx, const LanguageModel& model,
                          const ModelRunOptions& options) {
  const ModelConfig& config = model.config();
  const ModelRunOptions::Names& names = options.names;
  check(options.prompt_len >= 1, names.prompt_len, "must be at least 1");
  check(options.batch >= 1, names.batch, "must be at least 1");
  const std::int64_t decode_steps = decode_steps_run(options.gen);
  check(options.prompt_len + decode_steps <= config.context_length, names.prompt_len,
        std::to_string(options.prompt_len) + " prompt tokens + " + std::to_string(decode_steps) +
            " decode steps (" + std::to_string(options.gen) +
            " profiled, as many not) exceed the context length of " +
            std::to_string(config.context_length));
  model.require_memory(ctx, options.batch, options.prompt_len + decode_steps, options.prompt_len,
                       false, names.batch,
                       "lower " + names.batch + ", " + names.prompt_len + " or " + names.gen);
  std::mt19937_64 rng(options.seed);
  std::uniform_int_distribution<std::int32_t> token(
      0, static_cast<std::int32_t>(config.vocab_size - 1));
  const std::int64_t batch = options.batch;
  std::vector<std::int32_t> prompt(static_cast<std::size_t>(batch * options.prompt_len));
  for (std::int32_t& id : prompt) id = token(rng);

  const auto weight_bytes = static_cast<double>(model.weight_bytes());
  const double projection_flops_per_token = 2.0 * static_cast<double>(model.projection_weights());
  // The LM head [V, C] runs on one row per step and batch row (the last position's).
  const double head_flops = 2.0 * static_cast<double>(config.vocab_size * config.d_model);

  ProfiledRun run;
  attach_device(ctx, run, options.gpu_timing, options.cuda_graphs);
  KVCache cache = model.new_cache(ctx, batch, options.prompt_len + decode_steps);
  // CUDA graphs only when asked for (docs/PROFILING.md), and then for the profiled decode steps
  // and the unprofiled ones alike, or the profiling overhead would include the launch time a
  // graph saves.
  StepRunner runner(options.cuda_graphs, /*under_profiler=*/true);
  auto forward_step = [&](const std::string& phase, std::span<const std::int32_t> ids,
                          bool profiled, StepRunner& launcher) {
    StepRecord step;
    step.phase = phase;
    step.q_len = static_cast<std::int64_t>(ids.size()) / batch;
    step.kv_len = cache.length() + step.q_len;
    step.profiled = profiled;
    run_step(ctx, run, step, [&] { model.forward(ctx, ids, batch, cache, launcher); });
    if (profiled) {
      step.expected =
          model.attention().cost_model(ctx, model.attention_shape(batch, step.q_len, step.kv_len));
      read_attention_calls(run.tracer->events(), step);
      profiler::Event& forward = run.tracer->events()[step.end_event - 1];
      forward.flops = static_cast<std::uint64_t>(
          (projection_flops_per_token * static_cast<double>(step.q_len) + head_flops) *
              static_cast<double>(batch) +
          step.expected.flops * static_cast<double>(config.n_layers));
      forward.bytes = static_cast<std::uint64_t>(weight_bytes);
    }
    run.steps.push_back(step);
  };

  // A prefill and a decode step first, unprofiled and eager, their tokens then dropped from the
  // cache: the first call of each op pays for touching its buffers for the first time (on the
  // GPU also for loading its kernels), which is not what a step costs. They are in run.steps as
  // "warm-up prefill" and "warm-up decode".
  std::vector<std::int32_t> next(static_cast<std::size_t>(batch));
  StepRunner eager(/*cuda_graphs=*/false, /*under_profiler=*/true);
  forward_step("warm-up prefill", prompt, false, eager);
  if (decode_steps > 0) forward_step("warm-up decode", next, false, eager);
  cache.clear();

  forward_step("prefill", prompt, options.capture != Capture::Decode, runner);
  for (std::int64_t i = 0; i < decode_steps; ++i) {
    for (std::int32_t& id : next) id = token(rng);
    forward_step("decode", next, options.capture != Capture::Prefill && profiled_in_turn(i),
                 runner);
  }
  return run;
}

ProfiledRun profile_attention_op(Context& ctx, const attention::Backend& backend,
                                 const AttentionRunOptions& options) {
  const attention::Shape& shape = options.shape;
  const attention::Call call = random_attention_call(ctx, shape, options.seed);

  ProfiledRun run;
  attach_device(ctx, run, options.gpu_timing, false);
  backend.attend(ctx, call);  // warm-up
  ctx.synchronize();
  const attention::CostModel expected = backend.cost_model(ctx, shape);
  for (int i = 0; i < options.reps; ++i) {
    StepRecord step;
    step.phase = "attention";
    step.q_len = shape.q_len;
    step.kv_len = shape.kv_len;
    step.profiled = profiled_in_turn(i);
    step.expected = expected;
    run_step(ctx, run, step, [&] { backend.attend(ctx, call); });
    if (step.profiled) read_attention_calls(run.tracer->events(), step);
    run.steps.push_back(step);
  }
  return run;
}

std::optional<Overhead> measure_overhead(const std::vector<StepRecord>& steps,
                                         const std::string& phase) {
  std::vector<double> profiled, unprofiled;
  for (const StepRecord& step : steps) {
    if (step.phase != phase) continue;
    (step.profiled ? profiled : unprofiled).push_back(step.wall_ms);
  }
  if (profiled.empty() || unprofiled.empty()) return std::nullopt;
  Overhead overhead;
  overhead.profiled_ms = median(profiled);
  overhead.unprofiled_ms = median(unprofiled);
  overhead.profiled_steps = static_cast<int>(profiled.size());
  overhead.unprofiled_steps = static_cast<int>(unprofiled.size());
  return overhead;
}

std::optional<DeviceStepTimes> device_step_times(const std::vector<StepRecord>& steps,
                                                 const std::string& phase) {
  std::vector<double> records, busy_ms, span_ms, idle_ms, idle_percent, idle_us_per_gap,
      unprofiled_ms;
  for (const StepRecord& step : steps) {
    if (step.phase != phase) continue;
    if (!step.profiled) {
      unprofiled_ms.push_back(step.wall_ms);
      continue;
    }
    const profiler::WorkSpan& work = step.device_work;
    if (work.records == 0) continue;
    const auto idle_ns = static_cast<double>(work.idle_ns());
    records.push_back(work.records);
    busy_ms.push_back(static_cast<double>(work.busy_ns) / 1e6);
    span_ms.push_back(static_cast<double>(work.span_ns) / 1e6);
    idle_ms.push_back(idle_ns / 1e6);
    idle_percent.push_back(work.span_ns > 0 ? 100.0 * idle_ns / static_cast<double>(work.span_ns)
                                            : 0.0);
    idle_us_per_gap.push_back(work.records > 1 ? idle_ns / 1e3 / (work.records - 1) : 0.0);
  }
  if (records.empty()) return std::nullopt;
  DeviceStepTimes times;
  times.steps = static_cast<int>(records.size());
  times.records = median(records);
  times.busy_ms = median(busy_ms);
  times.span_ms = median(span_ms);
  times.idle_ms = median(idle_ms);
  times.idle_percent = median(idle_percent);
  times.idle_us_per_gap = median(idle_us_per_gap);
  times.unprofiled_ms = median(unprofiled_ms);  // 0 when empty
  return times;
}

}  // namespace attnscope::cli
