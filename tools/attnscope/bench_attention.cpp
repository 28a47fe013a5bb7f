// `attnscope bench-attention` (and the measurement behind `attnscope bench --op attention`):
// times the attention op alone, backend by backend, on random inputs of one shape, and sets each
// measurement beside what the backend's cost model predicts.
//
// Per backend: --warmup untimed calls, --reps timed calls (a steady clock around attend(); on a
// GPU the stream is drained before the clock starts and again before it stops, so a time is the
// launches plus the kernels, as a caller waiting for the result sees it),
// then one instrumented call that measures the peak of temporary bytes taken from the allocator
// and counts the steps the profiler sees directly inside the backend's scope. A backend that
// cannot serve the case (it throws Error) gets a row with the reason; the others still run.
// Progress goes to stderr; a Markdown table (or one JSON object) goes to stdout.
#include "tools/attnscope/bench_attention.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "ops/attention/registry.h"
#include "profiler/cpu_tracer.h"
#include "runtime/error.h"
#include "runtime/transfer.h"
#include "tools/attnscope/commands.h"
#include "tools/attnscope/elapsed.h"
#include "tools/attnscope/flags.h"
#include "tools/attnscope/machine_info.h"
#include "tools/attnscope/statistics.h"

namespace attnscope::cli {

namespace attention = ops::attention;

namespace {

// Normal(0, 1) values of the given dtype (drawn in f32, then converted).
Tensor random_tensor(const Shape& shape, DType dtype, std::mt19937_64& rng, Allocator& allocator) {
  Tensor values = Tensor::empty(shape, DType::F32, allocator);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  float* data = values.data<float>();
  for (std::int64_t i = 0; i < values.numel(); ++i) data[i] = normal(rng);
  return dtype == DType::F32 ? values : values.to_dtype(dtype, allocator);
}

// Sets a profiler on the context for its lifetime, and takes it off again even on an exception.
class ProfilerOn {
 public:
  ProfilerOn(Context& ctx, ScopeSink& sink) : ctx_(ctx) { ctx_.set_profiler(&sink); }
  ~ProfilerOn() { ctx_.set_profiler(nullptr); }
  ProfilerOn(const ProfilerOn&) = delete;
  ProfilerOn& operator=(const ProfilerOn&) = delete;

 private:
  Context& ctx_;
};

BackendResult bench_backend(Context& ctx, const attention::Backend& backend,
                            const attention::Call& call, const AttentionBenchFlags& flags) {
  BackendResult result;
  result.backend = std::string(backend.name());
  try {
    for (int i = 0; i < flags.warmup; ++i) backend.attend(ctx, call);
    ctx.synchronize();
    for (int i = 0; i < flags.reps; ++i) {
      const auto start = std::chrono::steady_clock::now();
      backend.attend(ctx, call);
      ctx.synchronize();
      result.times_ms.push_back(seconds_since(start) * 1e3);
    }
    result.stats = summarize(result.times_ms);

    // The instrumented call: temporaries are whatever the allocator's peak rises above the
    // inputs and output already live; steps are the scopes directly inside the backend's own
    // (which is the tracer's only depth-0 event).
    Allocator& allocator = ctx.allocator();
    const std::size_t baseline = allocator.current_bytes();
    allocator.reset_peak();
    profiler::CpuTracer tracer;
    {
      const ProfilerOn profiling(ctx, tracer);
      backend.attend(ctx, call);
      ctx.synchronize();
    }
    result.peak_temporary_bytes = allocator.peak_bytes() - baseline;
    result.steps_observed = static_cast<int>(
        std::count_if(tracer.events().begin(), tracer.events().end(),
                      [](const profiler::Event& event) { return event.depth == 1; }));
    result.predicted = backend.cost_model(ctx, attention::shape_of(call));
  } catch (const DeviceError&) {
    throw;  // a fault of the GPU, not a limit of the backend: it must fail the run
  } catch (const Error& e) {
    result.unsupported_reason = e.what();
  }
  return result;
}

// The median of naive, the baseline of the speedup column, when it ran.
std::optional<double> naive_median_ms(const std::vector<BackendResult>& results) {
  for (const BackendResult& r : results) {
    if (r.backend == "naive" && !r.unsupported_reason) return r.stats.median;
  }
  return std::nullopt;
}

void print_markdown(const AttentionReport& report, const AttentionBenchFlags& flags) {
  const attention::Shape& shape = report.shape;
  std::cout << "Attention alone: " << describe_shape(shape) << "; " << dtype_name(shape.dtype)
            << " on " << report.device << ", threads " << report.threads << ", CPU " << cpu_model()
            << "; warmup " << flags.warmup << ", reps " << flags.reps << "\n\n";
  std::cout << "| backend | median ms | min..max ms | stddev ms | GFLOP/s | peak temporaries MiB "
               "| predicted MiB | steps observed/predicted | speedup vs naive |\n"
            << "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  const std::optional<double> naive_ms = naive_median_ms(report.results);
  for (const BackendResult& r : report.results) {
    if (r.unsupported_reason) {
      std::cout << "| " << r.backend << " | unsupported: " << *r.unsupported_reason
                << " | | | | | | | |\n";
      continue;
    }
    const TimingStats& s = r.stats;
    const double gflops = r.predicted.flops / (s.median * 1e-3) / 1e9;
    std::cout << "| " << r.backend << " | " << with_decimals(s.median, 3) << " | "
              << with_decimals(s.min, 3) << ".." << with_decimals(s.max, 3) << " | "
              << with_decimals(s.stddev, 3) << " | " << with_decimals(gflops, 2) << " | "
              << mebibytes(r.peak_temporary_bytes) << " | "
              << mebibytes(r.predicted.temporary_bytes) << " | " << r.steps_observed << "/"
              << r.predicted.steps << " | "
              << (naive_ms ? with_decimals(*naive_ms / s.median, 2) + "x" : "-") << " |\n";
  }
}

void print_json(const AttentionReport& report, const AttentionBenchFlags& flags) {
  const attention::Shape& shape = report.shape;
  const std::optional<double> naive_ms = naive_median_ms(report.results);
  nlohmann::json rows = nlohmann::json::array();
  for (const BackendResult& r : report.results) {
    if (r.unsupported_reason) {
      rows.push_back({{"backend", r.backend}, {"error", *r.unsupported_reason}});
      continue;
    }
    const TimingStats& s = r.stats;
    rows.push_back({
        {"backend", r.backend},
        {"times_ms", r.times_ms},
        {"median_ms", s.median},
        {"min_ms", s.min},
        {"max_ms", s.max},
        {"mean_ms", s.mean},
        {"stddev_ms", s.stddev},
        {"gflops", r.predicted.flops / (s.median * 1e-3) / 1e9},
        {"peak_temporary_bytes", r.peak_temporary_bytes},
        {"predicted_temporary_bytes", r.predicted.temporary_bytes},
        {"steps_observed", r.steps_observed},
        {"steps_predicted", r.predicted.steps},
        {"speedup_vs_naive",
         naive_ms ? nlohmann::json(*naive_ms / s.median) : nlohmann::json(nullptr)},
    });
  }
  const nlohmann::json out = {
      {"shape",
       {{"batch", shape.batch},
        {"heads", shape.q_heads},
        {"kv_heads", shape.kv_heads},
        {"q_len", shape.q_len},
        {"kv_len", shape.kv_len},
        {"head_dim", shape.head_dim},
        {"dtype", dtype_name(shape.dtype)},
        {"device", flags.device},
        {"causal", shape.causal}}},
      {"device", report.device},
      {"threads", report.threads},
      {"cpu", cpu_model()},
      {"warmup", flags.warmup},
      {"reps", flags.reps},
      {"results", rows},
  };
  std::cout << out.dump(2) << "\n";
}

}  // namespace

std::string describe_shape(const attention::Shape& shape) {
  std::ostringstream text;
  text << "batch " << shape.batch << ", heads " << shape.q_heads << " (kv " << shape.kv_heads
       << "), q_len " << shape.q_len << ", kv_len " << shape.kv_len << ", head_dim "
       << shape.head_dim << ", causal " << (shape.q_len == 1 ? "decode" : "prefill");
  return text.str();
}

TimingStats summarize(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  TimingStats stats;
  if (n == 0) return stats;
  const Estimate median = median_estimate(values, 0.95);
  stats.median = median.value;
  stats.median_low = median.interval.low;
  stats.median_high = median.interval.high;
  stats.min = values.front();
  stats.max = values.back();
  double sum = 0;
  for (double v : values) sum += v;
  stats.mean = sum / static_cast<double>(n);
  double squares = 0;
  for (double v : values) squares += (v - stats.mean) * (v - stats.mean);
  stats.stddev = n > 1 ? std::sqrt(squares / static_cast<double>(n - 1)) : 0.0;
  return stats;
}

std::string with_decimals(double value, int decimals) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(decimals) << value;
  return text.str();
}

std::string mebibytes(std::size_t bytes) {
  return with_decimals(static_cast<double>(bytes) / (1024.0 * 1024.0), 2);
}

CLI::Validator backend_name_validator() {
  return CLI::Validator(
      [](const std::string& name) -> std::string {
        try {
          if (name != "all") attention::find_backend(name);
          return {};
        } catch (const Error&) {
          return "unknown attention backend '" + name + "' (valid: all, " +
                 attention::backend_list() + ")";
        }
      },
      "BACKEND");
}

void add_attention_shape_flags(CLI::App& app, AttentionBenchFlags& flags,
                               CLI::Option*& kv_heads_option) {
  const auto positive = CLI::Range(std::int64_t{1}, std::int64_t{1} << 24);
  app.add_option("--heads", flags.heads, "Query heads")->capture_default_str()->check(positive);
  kv_heads_option =
      app.add_option("--kv-heads", flags.kv_heads, "Key/value heads (default: --heads)")
          ->check(positive);
  app.add_option("--seq-len", flags.seq_len, "Tokens: prefill length, or the decode cache")
      ->capture_default_str()
      ->check(positive);
  app.add_option("--head-dim", flags.head_dim, "Head dimension")
      ->capture_default_str()
      ->check(positive);
  app.add_flag("--decode", flags.decode,
               "One new query token against a cache of --seq-len (default: causal prefill)");
  app.add_option("--seed", flags.seed, "Seed of the random inputs")->capture_default_str();
}

void finish_attention_shape(AttentionBenchFlags& flags, const CLI::Option& kv_heads_option) {
  if (kv_heads_option.count() == 0) flags.kv_heads = flags.heads;
  if (flags.heads % flags.kv_heads != 0) {
    throw CLI::ValidationError("--kv-heads", "--heads (" + std::to_string(flags.heads) +
                                                 ") must be a multiple of --kv-heads (" +
                                                 std::to_string(flags.kv_heads) + ")");
  }
}

AttentionReport measure_attention(const AttentionBenchFlags& flags, const std::string& label) {
  AttentionReport report;
  attention::Shape& shape = report.shape;
  shape = {flags.batch,
           flags.heads,
           flags.kv_heads,
           flags.decode ? 1 : flags.seq_len,
           flags.seq_len,
           flags.head_dim,
           parse_attention_dtype(flags.dtype)};
  const std::vector<const attention::Backend*> backends =
      attention::resolve_backends(flags.backends);

  Context ctx(flags.device == "cuda" ? Device::CUDA : Device::CPU, flags.threads);
  report.threads = ctx.threads();
  report.device = ctx.describe();
  // Inputs are drawn on the host, then copied to the device.
  Allocator& host = ctx.host_allocator();
  std::mt19937_64 rng(flags.seed);
  const Shape q_shape = {shape.batch, shape.q_heads, shape.q_len, shape.head_dim};
  const Shape kv_shape = {shape.batch, shape.kv_heads, shape.kv_len, shape.head_dim};
  attention::Call call;
  call.q = to_device(ctx, random_tensor(q_shape, shape.dtype, rng, host));
  call.k = to_device(ctx, random_tensor(kv_shape, shape.dtype, rng, host));
  call.v = to_device(ctx, random_tensor(kv_shape, shape.dtype, rng, host));
  call.out = Tensor::empty(q_shape, shape.dtype, ctx.allocator());
  call.kv_len = shape.kv_len;
  call.scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));

  for (std::size_t i = 0; i < backends.size(); ++i) {
    std::cerr << label << ": " << backends[i]->name() << " (" << i + 1 << "/" << backends.size()
              << ") ...\n";
    report.results.push_back(bench_backend(ctx, *backends[i], call, flags));
  }
  return report;
}

Subcommand add_bench_attention(CLI::App& app) {
  struct Flags {
    AttentionBenchFlags bench;
    std::string output = "md";
    CLI::Option* kv_heads = nullptr;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "bench-attention",
      "Time the attention op alone, for each backend, on random inputs (also: bench --op "
      "attention)");
  sub->add_option("--attn", flags->bench.backends,
                  "Backends to time: all, or a comma list of " + attention::backend_list())
      ->delimiter(',')
      ->default_str("all")
      ->check(backend_name_validator());
  sub->add_option("--batch", flags->bench.batch, "Batch size")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 24));
  add_attention_shape_flags(*sub, flags->bench, flags->kv_heads);
  sub->add_option("--dtype", flags->bench.dtype, "Element type of q, k, v and out")
      ->capture_default_str()
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  sub->add_option("--device", flags->bench.device, "Where the tensors live")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_option("--warmup", flags->bench.warmup, "Untimed calls per backend first")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  sub->add_option("--reps", flags->bench.reps, "Timed calls per backend")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  add_threads_flag(*sub, flags->bench.threads);
  sub->add_option("--output", flags->output, "md (a Markdown table) or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"md", "json"}));
  // Runs once the flags are parsed, so that a bad head split is a usage error (exit 2).
  sub->callback([flags] { finish_attention_shape(flags->bench, *flags->kv_heads); });
  return {sub, [flags] {
            const AttentionReport report = measure_attention(flags->bench, "bench-attention");
            if (flags->output == "json") {
              print_json(report, flags->bench);
            } else {
              print_markdown(report, flags->bench);
            }
            const bool any_ran =
                std::any_of(report.results.begin(), report.results.end(),
                            [](const BackendResult& r) { return !r.unsupported_reason; });
            check(any_ran, "bench-attention", "no backend could run this case (see the table)");
            return 0;
          }};
}

}  // namespace attnscope::cli
