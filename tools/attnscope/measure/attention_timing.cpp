// The measuring layer of the attention op alone (tools/attnscope/measure/attention_timing.h).
#include "tools/attnscope/measure/attention_timing.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <iostream>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>

#include "ops/attention/paged.h"
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

// One backend on one call, contiguous or paged: `attend` makes the call; `predicted` is the
// backend's cost model of it; `is_step` picks the profiler events its steps are counted from.
BackendResult bench_backend(Context& ctx, const std::string& backend,
                            const std::function<void()>& attend,
                            const std::function<attention::CostModel()>& predicted,
                            const std::function<bool(const profiler::Event&)>& is_step,
                            const AttentionBenchFlags& flags) {
  BackendResult result;
  result.backend = backend;
  try {
    for (int i = 0; i < flags.warmup; ++i) attend();
    ctx.synchronize();
    for (int i = 0; i < flags.reps; ++i) {
      const auto start = std::chrono::steady_clock::now();
      attend();
      ctx.synchronize();
      result.times_ms.push_back(seconds_since(start) * 1e3);
    }
    result.stats = summarize(result.times_ms);

    // The instrumented call: temporaries are whatever the allocator's peak rises above the
    // inputs and output already live.
    Allocator& allocator = ctx.allocator();
    const std::size_t baseline = allocator.current_bytes();
    allocator.reset_peak();
    profiler::CpuTracer tracer;
    {
      const ProfilerOn profiling(ctx, tracer);
      attend();
      ctx.synchronize();
    }
    result.peak_temporary_bytes = allocator.peak_bytes() - baseline;
    result.steps_observed =
        static_cast<int>(std::count_if(tracer.events().begin(), tracer.events().end(), is_step));
    result.predicted = predicted();
  } catch (const DeviceError&) {
    throw;  // a fault of the GPU, not a limit of the backend: it must fail the run
  } catch (const Error& e) {
    result.unsupported_reason = e.what();
  }
  return result;
}

// The call of `shape` over a paged cache: the batch's B sequences, each with its Tq queries and
// kv_len positions, in blocks of `block_tokens` dealt out in a random order (so no sequence's
// blocks lie in order), inputs drawn as random_attention_call draws them.
struct PagedInputs {
  attention::RaggedBatch batch;
  attention::PagedCall call;
};

std::unique_ptr<PagedInputs> random_paged_call(Context& ctx, const attention::Shape& shape,
                                               std::int64_t block_tokens, DType kv_dtype,
                                               std::uint64_t seed) {
  auto inputs = std::make_unique<PagedInputs>();
  attention::RaggedBatch& batch = inputs->batch;
  batch.block_tokens = block_tokens;
  batch.max_blocks = (shape.kv_len + block_tokens - 1) / block_tokens;
  const std::int64_t blocks = shape.batch * batch.max_blocks;
  std::vector<std::int32_t> order(static_cast<std::size_t>(blocks));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  batch.block_tables = order;
  for (std::int64_t b = 0; b <= shape.batch; ++b) {
    batch.query_starts.push_back(static_cast<std::int32_t>(b * shape.q_len));
  }
  batch.kv_lens.assign(static_cast<std::size_t>(shape.batch),
                       static_cast<std::int32_t>(shape.kv_len));
  Allocator& staging = ctx.device() == Device::CPU ? ctx.allocator() : ctx.host_allocator();
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto random = [&](const Shape& dims, DType dtype) {
    Tensor t = Tensor::empty(dims, DType::F32, staging);
    for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(rng);
    return to_device(ctx, dtype == DType::F32 ? t : t.to_dtype(dtype, staging));
  };
  attention::PagedCall& call = inputs->call;
  const Shape q_dims = {shape.batch * shape.q_len, shape.q_heads, shape.head_dim};
  call.q = random(q_dims, shape.dtype);
  call.key_blocks = random({blocks, shape.kv_heads, block_tokens, shape.head_dim}, kv_dtype);
  call.value_blocks = random({blocks, shape.kv_heads, block_tokens, shape.head_dim}, kv_dtype);
  call.out = Tensor::empty(q_dims, shape.dtype, ctx.allocator());
  call.scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  call.bf16_products = shape.bf16_products;
  if (ctx.device() != Device::CPU) {
    auto upload = [&](const std::vector<std::int32_t>& values) {
      Tensor host = Tensor::empty({static_cast<std::int64_t>(values.size())}, DType::I32, staging);
      std::copy(values.begin(), values.end(), host.data<std::int32_t>());
      return to_device(ctx, host);
    };
    batch.device_query_starts = upload(batch.query_starts);
    batch.device_kv_lens = upload(batch.kv_lens);
    batch.device_block_tables = upload(batch.block_tables);
  }
  call.batch = &batch;
  return inputs;
}

}  // namespace

std::string describe_shape(const attention::Shape& shape) {
  std::ostringstream text;
  text << "batch " << shape.batch << ", heads " << shape.q_heads << " (kv " << shape.kv_heads
       << "), q_len " << shape.q_len << ", kv_len " << shape.kv_len << ", head_dim "
       << shape.head_dim << ", causal " << (shape.q_len == 1 ? "decode" : "prefill")
       << (shape.bf16_products ? ", bf16 products" : "");
  return text.str();
}

nlohmann::json shape_json(const attention::Shape& shape) {
  return {{"batch", shape.batch},
          {"heads", shape.q_heads},
          {"kv_heads", shape.kv_heads},
          {"q_len", shape.q_len},
          {"kv_len", shape.kv_len},
          {"head_dim", shape.head_dim},
          {"bf16_products", shape.bf16_products}};
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
  call.bf16_products = shape.bf16_products;
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
  app.add_flag("--bf16-products", flags.bf16_products,
               "Allow q, k, v and the softmax weights rounded to bf16 for the products, as a "
               "bf16 model's calls do (flash multiplies on AMX tiles where the cpu has them)");
  app.add_option("--paged", flags.block_tokens,
                 "Through a paged KV cache of blocks of N positions in a random order "
                 "(Backend::attend_paged; 0: the contiguous call)")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 16));
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
  attention::Shape shape = {flags.batch,
                            flags.heads,
                            flags.kv_heads,
                            flags.decode ? 1 : flags.seq_len,
                            flags.seq_len,
                            flags.head_dim,
                            parse_attention_dtype(flags.dtype)};
  shape.bf16_products = flags.bf16_products;
  report.shape = shape;
  const std::vector<const attention::Backend*> backends =
      attention::resolve_backends(flags.backends);

  Context ctx(flags.device == "cuda" ? Device::CUDA : Device::CPU, flags.threads);
  report.threads = ctx.threads();
  report.device = ctx.describe();
  report.block_tokens = flags.block_tokens;
  // Contiguous: the steps directly inside the backend's scope. Paged: every kernel step, the
  // gathered backends' own inside their per-sequence scopes (Backend::paged_cost_model).
  const auto direct = [](const profiler::Event& e) { return e.depth == 1; };
  const auto kernel = [](const profiler::Event& e) { return e.category == "kernel"; };
  check(flags.kv_dtype.empty() || flags.block_tokens != 0, "--kv-dtype",
        "is the element type of a paged cache: give --paged N too");
  if (flags.block_tokens == 0) {
    const attention::Call call = random_attention_call(ctx, shape, flags.seed);
    for (std::size_t i = 0; i < backends.size(); ++i) {
      const attention::Backend& b = *backends[i];
      std::cerr << label << ": " << b.name() << " (" << i + 1 << "/" << backends.size()
                << ") ...\n";
      report.results.push_back(bench_backend(
          ctx, std::string(b.name()), [&] { b.attend(ctx, call); },
          [&] { return b.cost_model(ctx, shape); }, direct, flags));
    }
    return report;
  }
  report.kv_dtype = flags.kv_dtype.empty() ? shape.dtype : parse_dtype(flags.kv_dtype);
  const std::unique_ptr<PagedInputs> paged =
      random_paged_call(ctx, shape, flags.block_tokens, report.kv_dtype, flags.seed);
  for (std::size_t i = 0; i < backends.size(); ++i) {
    const attention::Backend& b = *backends[i];
    std::cerr << label << ": " << b.name() << " paged (" << i + 1 << "/" << backends.size()
              << ") ...\n";
    report.results.push_back(bench_backend(
        ctx, std::string(b.name()), [&] { b.attend_paged(ctx, paged->call); },
        [&] { return b.paged_cost_model(ctx, attention::ragged_shape_of(paged->call)); }, kernel,
        flags));
  }
  return report;
}

}  // namespace attnscope::cli
