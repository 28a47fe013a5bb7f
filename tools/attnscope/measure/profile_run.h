// Profiled runs shared by `attnscope profile` and `attnscope compare`: a model's prefill and
// decode steps, or the attention op alone, with the profiler on for the steps asked for.
//
// Every step is timed with the steady clock whether profiled or not. Decode steps (and the
// repetitions of the op alone) alternate profiled and unprofiled in the order P U U P, P U U P,
// ..., so the profiler's overhead is measured in the same run and the slow growth of the cache
// cancels out of the comparison. Each profiled step keeps the range of its events in the
// tracer and what was learnt from them: attention time, steps directly inside every attention
// call against the backend's cost model, the attention calls' temporaries, the allocator's
// absolute peak. FLOPs and bytes are filled in where the work is known: the attention calls
// (the backend's cost model: useful FLOPs and the bytes of q, k, v read and out written)
// and the forward steps (2 FLOPs per weight per token in the projections plus attention; every
// weight read once).
//
// On a GPU (a CUDA context) the run also holds a DeviceRecorder (profiler/device_recorder.h):
// every step is timed up to the end of its GPU work (ctx.synchronize() inside the clock), each
// profiled step's device activity is collected right after it, and the attention and forward
// times of profiled steps are device times (the kernels inside the scopes), since host scopes
// only time the queuing of asynchronous work. Profiling turns CUDA graphs off (attach.h): the
// steps run eagerly, and a note in the trace says so.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/language_model.h"
#include "ops/attention/backend.h"
#include "profiler/cpu_tracer.h"
#include "profiler/device_recorder.h"
#include "profiler/device_time.h"
#include "runtime/context.h"
#include "tools/attnscope/measure/attention_timing.h"

namespace attnscope::cli {

enum class Capture { Prefill, Decode, All };

// "prefill", "decode" or "all"; throws Error otherwise.
Capture parse_capture(const std::string& text);

struct StepRecord {
  std::string phase;  // "prefill", "decode" or "attention" (the op alone)
  std::int64_t q_len = 0;
  std::int64_t kv_len = 0;  // keys attended to, the new tokens' own included
  bool profiled = false;
  double wall_ms = 0;          // steady clock around the whole step
  std::size_t peak_bytes = 0;  // the allocator's highest live bytes during the step
  // The rest is known for profiled steps only.
  std::size_t first_event = 0, end_event = 0;  // [first, end) in the tracer's events
  bool device_times = false;  // forward_ms and attention_ms are device times (GPU runs)
  double forward_ms = 0;      // the step's top-level scope
  double attention_ms = 0;    // all attention calls of the step
  int attention_calls = 0;
  ops::attention::CostModel expected;  // the backend's cost model for this step's calls
  int steps_observed_min = 0, steps_observed_max = 0;
  int step_mismatches = 0;          // attention calls whose step count differs
  std::size_t temporary_bytes = 0;  // the largest peak_bytes of one attention call
  // GPU runs with CUPTI: the step's kernels, copies and memsets, the time they ran and the span
  // they took (profiler/device_time.h, work_span).
  profiler::WorkSpan device_work;
};

struct ProfiledRun {
  std::unique_ptr<profiler::CpuTracer> tracer = std::make_unique<profiler::CpuTracer>();
  std::unique_ptr<profiler::DeviceRecorder> device;  // GPU runs only
  std::vector<StepRecord> steps;
  std::size_t peak_bytes = 0;  // the allocator's highest live bytes over the run
};

struct ModelRunOptions {
  std::int64_t batch = 1;  // rows decoded together, each with its own prompt
  std::int64_t prompt_len = 128;
  std::int64_t gen = 16;  // decode steps profiled, each beside one unprofiled (decode_steps_run)
  Capture capture = Capture::All;
  std::uint64_t seed = 0;
  profiler::GpuTiming gpu_timing = profiler::GpuTiming::Cupti;  // GPU runs only
  // GPU runs: decode steps (profiled and not) replay a CUDA graph, each replayed kernel given
  // to the scope that captured it (profiler/graph_replay.h); off, every step launches eagerly.
  bool cuda_graphs = false;
  // How errors name batch, prompt_len and gen: the command line's flags, or Python's arguments.
  struct Names {
    std::string batch = "--batch", prompt_len = "--prompt-len", gen = "--gen";
  } names;
};

// The decode steps a run of `gen` profiled ones takes: as many unprofiled ones go between them
// (P U U P ...), which measure what profiling costs (measure_overhead).
inline std::int64_t decode_steps_run(std::int64_t gen) { return 2 * gen; }

// Prefill of `batch` rows of prompt_len seeded random ids, then decode_steps_run(gen) decode
// steps of `batch` tokens (random ids as well: the cost of a step does not depend on which token
// it is), `gen` of them profiled when the capture includes decode. Throws Error past the context
// length or the device's memory.
ProfiledRun profile_model(Context& ctx, const LanguageModel& model, const ModelRunOptions& options);

struct AttentionRunOptions {
  ops::attention::Shape shape = kStudyShape;
  int reps = 4;
  std::uint64_t seed = 0;
  profiler::GpuTiming gpu_timing = profiler::GpuTiming::Cupti;  // GPU runs only
};

// Attention of options.shape on random inputs (random_attention_call, on ctx's device): one
// unprofiled warm-up call, then `reps` calls alternating profiled and unprofiled as decode steps
// do.
ProfiledRun profile_attention_op(Context& ctx, const ops::attention::Backend& backend,
                                 const AttentionRunOptions& options);

// Median step time of the profiled and the unprofiled steps of one phase.
struct Overhead {
  double profiled_ms = 0, unprofiled_ms = 0;
  int profiled_steps = 0, unprofiled_steps = 0;
  double percent() const { return 100.0 * (profiled_ms - unprofiled_ms) / unprofiled_ms; }
};
// nullopt when the phase has no profiled or no unprofiled step.
std::optional<Overhead> measure_overhead(const std::vector<StepRecord>& steps,
                                         const std::string& phase);

// Where the GPU time of a phase's steps went: over its profiled steps with work records
// (work_span), the median of each figure taken step by step (so idle is not median span minus
// median busy), and the median wall time of its unprofiled steps: a step without the profiler,
// from the host's first call to the synchronize after it (with --cuda-graphs: capture, update and
// launch). docs/GPU.md, "Decode's budget", reads them.
struct DeviceStepTimes {
  int steps = 0;               // profiled steps with work records
  double records = 0;          // kernels, copies and memsets (a median: may end in .5)
  double busy_ms = 0;          // while at least one of them ran
  double span_ms = 0;          // from the first one's start to the last one's end
  double idle_ms = 0;          // span - busy
  double idle_percent = 0;     // of the span
  double idle_us_per_gap = 0;  // idle over the records - 1 gaps between consecutive records
  double unprofiled_ms = 0;    // 0 when the phase has no unprofiled step
};
// nullopt when no profiled step of the phase has work records (a CPU run, or CUDA events alone).
std::optional<DeviceStepTimes> device_step_times(const std::vector<StepRecord>& steps,
                                                 const std::string& phase);

}  // namespace attnscope::cli
