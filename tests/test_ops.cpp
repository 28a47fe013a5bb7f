// Every CPU op against a float64 reference on random inputs, and the ops' argument checks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "ops/activation.h"
#include "ops/attention/registry.h"
#include "ops/cast.h"
#include "ops/embedding.h"
#include "ops/heads.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "ops/sample.h"
#include "ops/softmax.h"
#include "profiler/cpu_tracer.h"
#include "reference_ops.h"
#include "runtime/error.h"
#include "runtime/sampler.h"

using namespace attnscope;
using testing::max_relative_error;
using testing::random_tensor;

TEST_CASE("linear and linear_residual match float64 in both the GEMV and the GEMM regime") {
  Context ctx(2);
  std::mt19937 rng(1);
  for (std::int64_t rows : {1, 3, 4, 17}) {
    const std::int64_t in = 67, outputs = 45;
    Tensor x = random_tensor({rows, in}, rng, ctx.allocator());
    Tensor w = random_tensor({outputs, in}, rng, ctx.allocator());
    Tensor b = random_tensor({outputs}, rng, ctx.allocator());
    Tensor y = Tensor::empty({rows, outputs}, DType::F32, ctx.allocator());
    ops::linear(ctx, x, w, b, y);
    std::vector<double> expected(static_cast<std::size_t>(rows * outputs));
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t o = 0; o < outputs; ++o) {
        double sum = b.data<float>()[o];
        for (std::int64_t k = 0; k < in; ++k) {
          sum += double(x.data<float>()[r * in + k]) * w.data<float>()[o * in + k];
        }
        expected[r * outputs + o] = sum;
      }
    }
    CAPTURE(rows);
    CHECK(max_relative_error(y, expected, 1.0) < 1e-5);

    // linear_residual adds the same product to what is there: y + (x W^T + b).
    std::vector<double> doubled = expected;
    for (std::int64_t i = 0; i < rows * outputs; ++i) doubled[i] += y.data<float>()[i];
    ops::linear_residual(ctx, x, w, b, y);
    CHECK(max_relative_error(y, doubled, 1.0) < 1e-5);

    ops::linear(ctx, x, w, Tensor(), y);  // no bias
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t o = 0; o < outputs; ++o) expected[r * outputs + o] -= b.data<float>()[o];
    }
    CHECK(max_relative_error(y, expected, 1.0) < 1e-5);
  }
}

TEST_CASE("layer_norm matches the float64 definition, also in place") {
  Context ctx(2);
  std::mt19937 rng(2);
  Tensor x = random_tensor({5, 96}, rng, ctx.allocator(), 3.0f);
  for (int i = 0; i < 96; ++i) x.data<float>()[i] += 1000.0f;  // a large mean: two-pass matters
  Tensor g = random_tensor({96}, rng, ctx.allocator());
  Tensor b = random_tensor({96}, rng, ctx.allocator());
  std::vector<double> expected;
  for (int r = 0; r < 5; ++r) {
    const float* row = x.data<float>() + r * 96;
    const double mean = std::accumulate(row, row + 96, 0.0) / 96;
    double var = 0;
    for (int c = 0; c < 96; ++c) var += (row[c] - mean) * (row[c] - mean);
    var /= 96;
    for (int c = 0; c < 96; ++c) {
      expected.push_back((row[c] - mean) / std::sqrt(var + 1e-5) * g.data<float>()[c] +
                         b.data<float>()[c]);
    }
  }
  ops::layer_norm(ctx, x, g, b, 1e-5f, x);
  CHECK(max_relative_error(x, expected, 1.0) < 1e-4);
}

namespace {

// Each activation of ops/activation.h in float64, written from its formula.
double reference_activation(Activation function, double x) {
  const double sigmoid = 1 / (1 + std::exp(-x));
  const double gelu_exact = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  switch (function) {
    case Activation::GeluTanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case Activation::GeluExact:
      return gelu_exact;
    case Activation::GeluClipped:
      return std::clamp(gelu_exact, -10.0, 10.0);
    case Activation::QuickGelu:
      return x / (1 + std::exp(-1.702 * x));
    case Activation::Laplace:
      return 0.5 * (1 + std::erf((x - 0.707107) / (0.282095 * std::sqrt(2.0))));
    case Activation::Relu:
      return std::max(x, 0.0);
    case Activation::Relu2:
      return std::max(x, 0.0) * std::max(x, 0.0);
    case Activation::Relu6:
      return std::clamp(x, 0.0, 6.0);
    case Activation::LeakyRelu:
      return x >= 0 ? x : 0.01 * x;
    case Activation::HardSwish:
      return x * std::clamp(x + 3, 0.0, 6.0) / 6;
    case Activation::Silu:
      return x * sigmoid;
    case Activation::Mish:
      return x * std::tanh(std::log1p(std::exp(x)));
    case Activation::SqrtSoftplus:
      return std::sqrt(std::log1p(std::exp(x)));
    case Activation::Sigmoid:
      return sigmoid;
    case Activation::Tanh:
      return std::tanh(x);
    case Activation::Identity:
      return x;
  }
  return x;
}

}  // namespace

TEST_CASE("every activation matches its float64 formula, also in place") {
  Context ctx(2);
  std::mt19937 rng(3);
  Tensor x = random_tensor({1000}, rng, ctx.allocator(), 4.0f);
  // Points where the pieces meet or saturate: relu6's 6, gelu_10's clip, exp's overflow.
  const float edges[] = {0.0f, 6.0f, 7.5f, -12.0f, 12.0f, 95.0f, -95.0f};
  std::copy(std::begin(edges), std::end(edges), x.data<float>());
  for (const ActivationName& entry : kActivationNames) {
    CAPTURE(entry.name);
    std::vector<double> expected;
    for (double v : testing::to_double(x))
      expected.push_back(reference_activation(entry.activation, v));
    Tensor y = Tensor::empty({1000}, DType::F32, ctx.allocator());
    ops::activation(ctx, entry.activation, x, y);
    CHECK(max_relative_error(y, expected, 1e-2) < 1e-5);
    Tensor in_place = x.to_dtype(DType::F32, ctx.allocator());
    ops::activation(ctx, entry.activation, in_place, in_place);
    CHECK(max_relative_error(in_place, expected, 1e-2) < 1e-5);
  }
}

TEST_CASE("exact gelu is the erf form, not the tanh form, where the two differ in float32") {
  Context ctx(1);
  // Near |x| = 2 the tanh form is off by ~2e-4, thousands of float32 ulps.
  Tensor x = Tensor::empty({41}, DType::F32, ctx.allocator());
  for (int i = 0; i < 41; ++i) x.data<float>()[i] = -4.0f + 0.2f * static_cast<float>(i);
  Tensor exact = Tensor::empty({41}, DType::F32, ctx.allocator());
  Tensor tanh_form = Tensor::empty({41}, DType::F32, ctx.allocator());
  ops::activation(ctx, Activation::GeluExact, x, exact);
  ops::activation(ctx, Activation::GeluTanh, x, tanh_form);
  double largest_gap = 0;
  for (int i = 0; i < 41; ++i) {
    const double v = x.data<float>()[i];
    const double erf_form = reference_activation(Activation::GeluExact, v);
    CHECK(std::fabs(exact.data<float>()[i] - erf_form) < 1e-6);
    largest_gap = std::max(largest_gap, std::fabs(tanh_form.data<float>()[i] - erf_form));
  }
  CHECK(largest_gap > 1e-4);
}

TEST_CASE("softmax rows sum to one, masked entries get zero, huge logits do not overflow") {
  Context ctx(2);
  Tensor x = Tensor::empty({2, 4}, DType::F32, ctx.allocator());
  const float values[] = {1000.0f, 1001.0f, 999.0f, -INFINITY, 0.0f, 0.0f, 0.0f, 0.0f};
  std::copy(values, values + 8, x.data<float>());
  ops::softmax(ctx, x, x);
  const double z = std::exp(-1.0) + 1 + std::exp(-2.0);
  const std::vector<double> expected = {
      std::exp(-1.0) / z, 1 / z, std::exp(-2.0) / z, 0, 0.25, 0.25, 0.25, 0.25};
  CHECK(max_relative_error(x, expected) < 1e-6);
}

TEST_CASE("embedding adds token and position rows and checks ids") {
  Context ctx(1);
  std::mt19937 rng(4);
  Tensor wte = random_tensor({10, 8}, rng, ctx.allocator());
  Tensor wpe = random_tensor({6, 8}, rng, ctx.allocator());
  Tensor out = Tensor::empty({3, 8}, DType::F32, ctx.allocator());
  const std::vector<std::int32_t> ids = {9, 0, 4};
  const std::vector<std::int64_t> positions = {2, 3, 5};
  ops::embedding(ctx, wte, wpe, ids, positions, out);
  for (int i = 0; i < 3; ++i) {
    for (int c = 0; c < 8; ++c) {
      CHECK(out.data<float>()[i * 8 + c] ==
            wte.data<float>()[ids[i] * 8 + c] + wpe.data<float>()[positions[i] * 8 + c]);
    }
  }
  const std::vector<std::int32_t> bad_ids = {9, 10, 4};
  CHECK_THROWS_WITH_AS(ops::embedding(ctx, wte, wpe, bad_ids, positions, out),
                       doctest::Contains("outside the vocabulary"), Error);
  const std::vector<std::int64_t> bad_positions = {2, 3, 6};
  CHECK_THROWS_WITH_AS(ops::embedding(ctx, wte, wpe, ids, bad_positions, out),
                       doctest::Contains("outside the context"), Error);
}

TEST_CASE("split_qkv and merge_heads move rows between layouts") {
  Context ctx(2);
  const std::int64_t batch = 2, tokens = 3, heads = 2, d = 4, width = heads * d, capacity = 5;
  Tensor qkv = Tensor::empty({batch, tokens, 3 * width}, DType::F32, ctx.allocator());
  std::iota(qkv.data<float>(), qkv.data<float>() + qkv.numel(), 0.0f);
  Tensor q = Tensor::empty({batch, heads, tokens, d}, DType::F32, ctx.allocator());
  Tensor k = Tensor::zeros({batch, heads, capacity, d}, DType::F32, ctx.allocator());
  Tensor v = Tensor::zeros({batch, heads, capacity, d}, DType::F32, ctx.allocator());
  ops::split_qkv(ctx, qkv, q, k, v, 2);
  auto at = [](const Tensor& t, std::int64_t i0, std::int64_t i1, std::int64_t i2,
               std::int64_t i3) {
    return t.data<float>()[((i0 * t.dim(1) + i1) * t.dim(2) + i2) * t.dim(3) + i3];
  };
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t t = 0; t < tokens; ++t) {
      for (std::int64_t h = 0; h < heads; ++h) {
        for (std::int64_t x = 0; x < d; ++x) {
          const float base = static_cast<float>((b * tokens + t) * 3 * width + h * d + x);
          CHECK(at(q, b, h, t, x) == base);
          CHECK(at(k, b, h, 2 + t, x) == base + width);
          CHECK(at(v, b, h, 2 + t, x) == base + 2 * width);
        }
      }
    }
  }
  CHECK(at(k, 0, 0, 0, 0) == 0.0f);                              // rows before `start` untouched
  CHECK_THROWS_AS(ops::split_qkv(ctx, qkv, q, k, v, 3), Error);  // 3 + 3 > capacity 5

  Tensor merged = Tensor::empty({batch, tokens, width}, DType::F32, ctx.allocator());
  ops::merge_heads(ctx, q, merged);
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t t = 0; t < tokens; ++t) {
      for (std::int64_t c = 0; c < width; ++c) {
        CHECK(merged.data<float>()[(b * tokens + t) * width + c] ==
              qkv.data<float>()[(b * tokens + t) * 3 * width + c]);
      }
    }
  }
}

TEST_CASE("ops refuse mismatched shapes and dtypes") {
  Context ctx(1);
  Tensor a = Tensor::zeros({2, 3}, DType::F32, ctx.allocator());
  Tensor b = Tensor::zeros({3, 2}, DType::F32, ctx.allocator());
  Tensor half = Tensor::zeros({2, 3}, DType::F16, ctx.allocator());
  CHECK_THROWS_AS(ops::linear_residual(ctx, a, b, Tensor(), b), Error);  // residual [2, 2]
  CHECK_THROWS_WITH_AS(ops::activation(ctx, Activation::GeluTanh, half, half),
                       doctest::Contains("must be f32"), Error);
  CHECK_THROWS_AS(ops::linear(ctx, a, a, Tensor(), a), Error);
}

TEST_CASE("sample_tokens on the cpu draws what a Sampler drawing row after row draws") {
  Context ctx(1);
  const std::int64_t batch = 2, vocab = 50;
  std::mt19937 rng(4);
  const Tensor logits = random_tensor({batch, vocab}, rng, ctx.allocator());
  SamplingOptions options;
  options.temperature = 1.0f;
  options.top_k = 20;
  options.seed = 11;
  Sampler reference(options);
  Tensor ids = Tensor::empty({batch}, DType::I32, ctx.allocator());
  for (std::uint64_t step = 0; step < 4; ++step) {
    ops::sample_tokens(ctx, logits, options, step, ids);
    for (std::int64_t r = 0; r < batch; ++r) {
      const float* row = logits.data<float>() + r * vocab;
      CHECK(ids.data<std::int32_t>()[r] ==
            reference.sample(std::span<const float>(row, static_cast<std::size_t>(vocab))));
    }
  }
  Tensor wrong = Tensor::empty({batch}, DType::F32, ctx.allocator());
  CHECK_THROWS_WITH_AS(ops::sample_tokens(ctx, logits, options, 0, wrong),
                       doctest::Contains("out_ids must be i32"), Error);
}

TEST_CASE("cpu embedding takes i32 id tensors; cast converts; a cpu-only context refuses cuda") {
  Context ctx(1);
  std::mt19937 rng(9);
  Tensor wte = random_tensor({10, 8}, rng, ctx.allocator());
  Tensor wpe = random_tensor({6, 8}, rng, ctx.allocator());
  Tensor ids = Tensor::empty({2}, DType::I32, ctx.allocator());
  Tensor positions = Tensor::empty({2}, DType::I32, ctx.allocator());
  ids.data<std::int32_t>()[0] = 7;
  ids.data<std::int32_t>()[1] = 2;
  positions.data<std::int32_t>()[0] = 5;
  positions.data<std::int32_t>()[1] = 0;
  Tensor out = Tensor::empty({2, 8}, DType::F32, ctx.allocator());
  ops::embedding(ctx, wte, wpe, ids, positions, out);
  CHECK(out.data<float>()[8 + 3] == wte.data<float>()[2 * 8 + 3] + wpe.data<float>()[3]);
  ids.data<std::int32_t>()[1] = 10;
  CHECK_THROWS_WITH_AS(ops::embedding(ctx, wte, wpe, ids, positions, out),
                       doctest::Contains("outside the vocabulary"), Error);

  Tensor half = Tensor::empty({10, 8}, DType::F16, ctx.allocator());
  ops::cast(ctx, wte, half);
  CHECK(half.data<std::uint16_t>()[5] == f32_to_f16(wte.data<float>()[5]));
  CHECK_THROWS_AS(ops::cast(ctx, wte, out), Error);  // shapes differ

  if constexpr (!kCudaBuild) {
    CHECK_THROWS_WITH_AS(Context(Device::CUDA, 1), doctest::Contains("--device cuda"), Error);
  }
}

// ---------------------------------------------------------------------------------------------
// Attention backends
// ---------------------------------------------------------------------------------------------

namespace {

struct AttentionCase {
  std::int64_t batch, q_heads, kv_heads, q_len, kv_len, capacity, head_dim;
};

void check_backend(const ops::attention::Backend& backend, const AttentionCase& c,
                   std::mt19937& rng) {
  Context ctx(2);
  ops::attention::Call call;
  call.q = random_tensor({c.batch, c.q_heads, c.q_len, c.head_dim}, rng, ctx.allocator());
  call.k = random_tensor({c.batch, c.kv_heads, c.capacity, c.head_dim}, rng, ctx.allocator());
  call.v = random_tensor({c.batch, c.kv_heads, c.capacity, c.head_dim}, rng, ctx.allocator());
  call.out = Tensor::empty(call.q.shape(), DType::F32, ctx.allocator());
  std::fill_n(call.out.data<float>(), call.out.numel(), NAN);  // unwritten outputs show up
  call.kv_len = c.kv_len;
  call.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  backend.forward(ctx, call);
  const auto expected = testing::reference_attention(call.q, call.k, call.v, c.kv_len, call.scale);
  CAPTURE(backend.name());
  CAPTURE(c.batch);
  CAPTURE(c.q_heads);
  CAPTURE(c.kv_heads);
  CAPTURE(c.q_len);
  CAPTURE(c.kv_len);
  CAPTURE(c.head_dim);
  CHECK(max_relative_error(call.out, expected, 1.0) < 1e-5);
}

}  // namespace

TEST_CASE("every attention backend matches float64 causal attention on random shapes") {
  std::mt19937 rng(5);
  const std::vector<AttentionCase> fixed = {
      {1, 1, 1, 1, 1, 1, 32},       // a single token
      {2, 4, 4, 7, 7, 9, 64},       // prefill, batch 2, spare cache capacity
      {1, 8, 2, 1, 37, 40, 128},    // decode against a cache, grouped-query heads
      {3, 6, 3, 3, 20, 20, 64},     // several new tokens against a cache
      {1, 16, 16, 65, 65, 65, 32},  // 16 heads, length not a multiple of common tiles
  };
  std::uniform_int_distribution<int> pick(0, 3);
  std::vector<AttentionCase> cases = fixed;
  for (int i = 0; i < 12; ++i) {
    const std::int64_t head_dims[] = {32, 64, 128, 64};
    const std::int64_t kv_heads = 1 + pick(rng);
    const std::int64_t group = 1 + pick(rng);
    const std::int64_t kv_len = 1 + rng() % 90;
    const std::int64_t q_len = 1 + rng() % kv_len;
    cases.push_back({1 + pick(rng), kv_heads * group, kv_heads, q_len, kv_len, kv_len + pick(rng),
                     head_dims[pick(rng)]});
  }
  for (const std::string& name : ops::attention::backend_names()) {
    for (const AttentionCase& c : cases) check_backend(ops::attention::find_backend(name), c, rng);
  }
}

TEST_CASE("the attention registry resolves names and aliases and refuses unknown ones") {
  CHECK(ops::attention::find_backend("eager").name() == "naive");
  CHECK_THROWS_WITH_AS(ops::attention::find_backend("fast"), doctest::Contains("valid: naive"),
                       Error);
}

TEST_CASE("attention calls with inconsistent shapes are refused") {
  Context ctx(1);
  ops::attention::Call call;
  call.q = Tensor::zeros({1, 3, 2, 8}, DType::F32, ctx.allocator());
  call.k = Tensor::zeros({1, 2, 4, 8}, DType::F32, ctx.allocator());  // 3 heads over 2: no
  call.v = call.k;
  call.out = call.q;
  call.kv_len = 2;
  CHECK_THROWS_WITH_AS(ops::attention::validate_call(call), doctest::Contains("multiple"), Error);
  call.k = Tensor::zeros({1, 3, 4, 8}, DType::F32, ctx.allocator());
  call.v = call.k;
  call.kv_len = 5;  // beyond the capacity
  CHECK_THROWS_AS(ops::attention::validate_call(call), Error);
  call.kv_len = 1;  // fewer keys than queries
  CHECK_THROWS_AS(ops::attention::validate_call(call), Error);
}

TEST_CASE("safe_softmax gives zeros for fully masked rows where softmax gives NaN") {
  Context ctx(1);
  Tensor x = Tensor::empty({2, 3}, DType::F32, ctx.allocator());
  const float values[] = {-INFINITY, -INFINITY, -INFINITY, 0.0f, -INFINITY, 0.0f};
  std::copy(values, values + 6, x.data<float>());
  Tensor y = Tensor::empty({2, 3}, DType::F32, ctx.allocator());
  ops::safe_softmax(ctx, x, y);
  const std::vector<double> expected = {0, 0, 0, 0.5, 0, 0.5};
  CHECK(max_relative_error(y, expected) == 0.0);
  ops::softmax(ctx, x, y);
  CHECK(std::isnan(y.data<float>()[0]));
  CHECK(y.data<float>()[3] == 0.5f);
}

TEST_CASE("math attention serves bf16 and f16 inputs through its f32 upcast") {
  std::mt19937 rng(8);
  Context ctx(2);
  const Shape q_shape = {2, 4, 5, 32}, kv_shape = {2, 2, 9, 32};
  for (DType dtype : {DType::BF16, DType::F16}) {
    // Round the inputs to the dtype first, so the float64 reference sees the same values.
    auto rounded = [&](const Shape& shape) {
      return random_tensor(shape, rng, ctx.allocator()).to_dtype(dtype, ctx.allocator());
    };
    ops::attention::Call call;
    call.q = rounded(q_shape);
    call.k = rounded(kv_shape);
    call.v = rounded(kv_shape);
    call.out = Tensor::empty(q_shape, dtype, ctx.allocator());
    call.kv_len = 8;
    call.scale = 1.0f / std::sqrt(32.0f);
    ops::attention::find_backend("math").forward(ctx, call);
    const auto expected = testing::reference_attention(
        call.q.to_dtype(DType::F32, ctx.allocator()), call.k.to_dtype(DType::F32, ctx.allocator()),
        call.v.to_dtype(DType::F32, ctx.allocator()), call.kv_len, call.scale);
    const Tensor out = call.out.to_dtype(DType::F32, ctx.allocator());
    // The only error left is the final rounding to the dtype: 2^-8 (bf16) or 2^-11 (f16).
    CHECK(max_relative_error(out, expected, 1.0) <= (dtype == DType::BF16 ? 0x1.0p-8 : 0x1.0p-11));
    CHECK_THROWS_WITH_AS(ops::attention::find_backend("naive").forward(ctx, call),
                         doctest::Contains("must be f32"), Error);
  }
}

namespace {

// Runs `backend` once with a tracer; returns the measured peak temporary bytes and the number
// of scopes directly inside the backend's own scope.
std::pair<std::size_t, int> measure(const ops::attention::Backend& backend, Context& ctx,
                                    const ops::attention::Call& call) {
  profiler::CpuTracer tracer;
  ctx.set_profiler(&tracer);
  const std::size_t before = ctx.allocator().current_bytes();
  ctx.allocator().reset_peak();
  backend.forward(ctx, call);
  ctx.set_profiler(nullptr);
  const auto direct_children = std::count_if(tracer.events().begin(), tracer.events().end(),
                                             [](const profiler::Event& e) { return e.depth == 1; });
  return {ctx.allocator().peak_bytes() - before, static_cast<int>(direct_children)};
}

}  // namespace

TEST_CASE("every backend allocates exactly the bytes and runs the steps its cost model states") {
  std::mt19937 rng(9);
  const std::vector<AttentionCase> cases = {
      {2, 4, 4, 33, 33, 40, 64},   // prefill
      {1, 8, 2, 1, 300, 320, 32},  // decode against a long cache, grouped heads
      {3, 2, 1, 5, 70, 70, 128},   // a few tokens against a cache
  };
  for (int threads : {1, 2}) {
    Context ctx(threads);
    for (const AttentionCase& c : cases) {
      ops::attention::Call call;
      call.q = random_tensor({c.batch, c.q_heads, c.q_len, c.head_dim}, rng, ctx.allocator());
      call.k = random_tensor({c.batch, c.kv_heads, c.capacity, c.head_dim}, rng, ctx.allocator());
      call.v = random_tensor({c.batch, c.kv_heads, c.capacity, c.head_dim}, rng, ctx.allocator());
      call.out = Tensor::empty(call.q.shape(), DType::F32, ctx.allocator());
      call.kv_len = c.kv_len;
      for (const std::string& name : ops::attention::backend_names()) {
        const ops::attention::Backend& backend = ops::attention::find_backend(name);
        const auto [bytes, steps] = measure(backend, ctx, call);
        const ops::attention::CostModel model = backend.cost_model(ctx, call);
        CAPTURE(name);
        CAPTURE(threads);
        CAPTURE(c.q_len);
        CHECK(bytes == model.temporary_bytes);
        CHECK(steps == model.steps);
      }
    }
  }
}

TEST_CASE("at the study's shape the formulas order naive > inplace > fused > flash in bytes") {
  // B=8, H=16, T=1024, D=64: shapes only, nothing is allocated or run.
  CpuAllocator allocator;
  Context ctx(2);
  ops::attention::Call call;
  const Shape shape = {8, 16, 1024, 64};
  call.q = Tensor::borrow(nullptr, shape, DType::F32, Device::CPU, nullptr);
  call.k = call.q;
  call.v = call.q;
  call.out = call.q;
  call.kv_len = 1024;
  std::vector<std::size_t> bytes;
  for (const char* name : {"naive", "inplace", "fused", "flash"}) {
    bytes.push_back(ops::attention::find_backend(name).cost_model(ctx, call).temporary_bytes);
  }
  const std::size_t scores = 8ull * 16 * 1024 * 1024 * sizeof(float);  // 512 MiB
  CHECK(bytes[0] == 4 * scores);
  CHECK(bytes[1] == 3 * scores);
  CHECK(bytes[2] == scores);
  CHECK(bytes[3] < scores / 64);
  CHECK(std::is_sorted(bytes.rbegin(), bytes.rend()));
  // math pays for its copies and its mask on top of three score buffers.
  CHECK(ops::attention::find_backend("math").cost_model(ctx, call).temporary_bytes > 3 * scores);
}
