// The measuring layer of the attention op alone (tools/attnscope/measure/attention_timing.h).
#include "tools/attnscope/measure/attention_timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <random>
#include <sstream>

#include "ops/attention/registry.h"
#include "profiler/cpu_tracer.h"
#include "runtime/error.h"
#include "runtime/transfer.h"
#include "tools/attnscope/cli/elapsed.h"
#include "tools/attnscope/cli/flags.h"

namespace attnscope::cli {

namespace attention = ops::attention;

namespace {

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
    for (int i = 0; i < flags.reps; ++i)
      result.times_ms.push_back(time_attention(ctx, backend, call));
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

}  // namespace

std::string describe_shape(const attention::Shape& shape) {
  std::ostringstream text;
  text << "batch " << shape.batch << ", heads " << shape.q_heads << " (kv " << shape.kv_heads
       << "), q_len " << shape.q_len << ", kv_len " << shape.kv_len << ", head_dim "
       << shape.head_dim << ", causal " << (shape.q_len == 1 ? "decode" : "prefill");
  return text.str();
}

nlohmann::json shape_json(const attention::Shape& shape) {
  return {{"batch", shape.batch}, {"heads", shape.q_heads}, {"kv_heads", shape.kv_heads},
          {"q_len", shape.q_len}, {"kv_len", shape.kv_len}, {"head_dim", shape.head_dim}};
}

attention::Call random_attention_call(Context& ctx, const attention::Shape& shape,
                                      std::uint64_t seed) {
  Allocator& staging = ctx.device() == Device::CPU ? ctx.allocator() : ctx.host_allocator();
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto random = [&](const Shape& dims) {
    Tensor t = Tensor::empty(dims, DType::F32, staging);
    for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(rng);
    return to_device(ctx, shape.dtype == DType::F32 ? t : t.to_dtype(shape.dtype, staging));
  };
  const Shape q_dims = {shape.batch, shape.q_heads, shape.q_len, shape.head_dim};
  const Shape kv_dims = {shape.batch, shape.kv_heads, shape.kv_len, shape.head_dim};
  attention::Call call;
  call.q = random(q_dims);
  call.k = random(kv_dims);
  call.v = random(kv_dims);
  call.out = Tensor::empty(q_dims, shape.dtype, ctx.allocator());
  call.kv_len = shape.kv_len;
  call.scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  return call;
}

double time_attention(Context& ctx, const attention::Backend& backend,
                      const attention::Call& call) {
  ctx.synchronize();
  const auto start = std::chrono::steady_clock::now();
  backend.attend(ctx, call);
  ctx.synchronize();
  return seconds_since(start) * 1e3;
}

std::vector<CLI::Option*> add_prefill_shape_flags(CLI::App& app, attention::Shape& shape,
                                                  const PrefillShapeHelp& help,
                                                  const CLI::Validator& range) {
  // An option that sets two fields to its value; its help shows the first field's default.
  const auto add_tied_option = [&](const std::string& name, std::int64_t& first,
                                   std::int64_t& second, const std::string& text) {
    return app
        .add_option_function<std::int64_t>(
            name, [&first, &second](std::int64_t value) { first = second = value; }, text)
        ->default_str(std::to_string(first))
        ->check(range);
  };
  return {add_tied_option("--heads", shape.q_heads, shape.kv_heads, help.heads),
          add_tied_option("--seq-len", shape.q_len, shape.kv_len, help.seq_len),
          app.add_option("--head-dim", shape.head_dim, help.head_dim)
              ->capture_default_str()
              ->check(range)};
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
  app.add_option("--seed", flags.seed,
                 "Seed of the random inputs (bench --op serving: of the workload)")
      ->capture_default_str();
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
  const attention::Shape shape = {flags.batch,
                                  flags.heads,
                                  flags.kv_heads,
                                  flags.decode ? 1 : flags.seq_len,
                                  flags.seq_len,
                                  flags.head_dim,
                                  parse_attention_dtype(flags.dtype)};
  report.shape = shape;
  const std::vector<const attention::Backend*> backends =
      attention::resolve_backends(flags.backends);

  Context ctx(flags.device == "cuda" ? Device::CUDA : Device::CPU, flags.threads);
  report.threads = ctx.threads();
  report.device = ctx.describe();
  const attention::Call call = random_attention_call(ctx, shape, flags.seed);
  for (std::size_t i = 0; i < backends.size(); ++i) {
    std::cerr << label << ": " << backends[i]->name() << " (" << i + 1 << "/" << backends.size()
              << ") ...\n";
    report.results.push_back(bench_backend(ctx, *backends[i], call, flags));
  }
  return report;
}

}  // namespace attnscope::cli
