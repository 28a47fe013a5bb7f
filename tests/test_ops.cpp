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
#include "ops/head_rms_norm.h"
#include "ops/heads.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "ops/rms_norm.h"
#include "ops/rotary_embedding.h"
#include "ops/sample.h"
#include "ops/softmax.h"
#include "ops/swiglu.h"
#include "profiler/cpu_tracer.h"
#include "reference_ops.h"
#include "runtime/error.h"
#include "runtime/sampler.h"

using namespace attnscope;
using testing::kUnitRoundoff;
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
  const std::int64_t batch = 2, tokens = 3, heads = 4, d = 4, width = heads * d, capacity = 5;
  // Each token's cache row: row b's tokens at first[b], first[b] + 1, ...
  auto positions_from = [&](std::vector<std::int32_t> first) {
    Tensor positions = Tensor::empty({batch * tokens}, DType::I32, ctx.allocator());
    for (std::int64_t i = 0; i < batch * tokens; ++i) {
      positions.data<std::int32_t>()[i] =
          first[static_cast<std::size_t>(i / tokens)] + static_cast<std::int32_t>(i % tokens);
    }
    return positions;
  };
  // kv_heads = heads is GPT-2's multi-head attention; fewer is grouped-query attention.
  for (const std::int64_t kv_heads : {4, 2, 1}) {
    CAPTURE(kv_heads);
    const std::int64_t kv_width = kv_heads * d;
    Tensor qkv = Tensor::empty({batch, tokens, width + 2 * kv_width}, DType::F32, ctx.allocator());
    std::iota(qkv.data<float>(), qkv.data<float>() + qkv.numel(), 0.0f);
    Tensor q = Tensor::empty({batch, heads, tokens, d}, DType::F32, ctx.allocator());
    Tensor k = Tensor::zeros({batch, kv_heads, capacity, d}, DType::F32, ctx.allocator());
    Tensor v = Tensor::zeros({batch, kv_heads, capacity, d}, DType::F32, ctx.allocator());
    // Row 0 appends after 2 cached tokens, row 1 after 1: each token at its own position.
    ops::split_qkv(ctx, qkv, q, k, v, positions_from({2, 1}));
    auto at = [](const Tensor& t, std::int64_t i0, std::int64_t i1, std::int64_t i2,
                 std::int64_t i3) {
      return t.data<float>()[((i0 * t.dim(1) + i1) * t.dim(2) + i2) * t.dim(3) + i3];
    };
    for (std::int64_t b = 0; b < batch; ++b) {
      for (std::int64_t t = 0; t < tokens; ++t) {
        const float row = static_cast<float>((b * tokens + t) * (width + 2 * kv_width));
        for (std::int64_t x = 0; x < d; ++x) {
          for (std::int64_t h = 0; h < heads; ++h) {
            CHECK(at(q, b, h, t, x) == row + static_cast<float>(h * d + x));
          }
          for (std::int64_t g = 0; g < kv_heads; ++g) {
            const std::int64_t p = 2 - b + t;
            CHECK(at(k, b, g, p, x) == row + static_cast<float>(width + g * d + x));
            CHECK(at(v, b, g, p, x) == row + static_cast<float>(width + kv_width + g * d + x));
          }
        }
      }
    }
    CHECK(at(k, 0, 0, 0, 0) == 0.0f);  // rows before each row's first position untouched
    CHECK(at(k, 1, 0, 0, 0) == 0.0f);
    CHECK(at(v, 1, 0, 4, 0) == 0.0f);  // and after its last
    CHECK_THROWS_WITH_AS(ops::split_qkv(ctx, qkv, q, k, v, positions_from({0, 3})),
                         doctest::Contains("outside a cache of 5"), Error);  // 3 + 2 >= 5
    CHECK_THROWS_WITH_AS(ops::split_qkv(ctx, qkv, q, k, v, positions_from({-1, 0})),
                         doctest::Contains("position -1"), Error);
  }
  // Cache heads that do not divide the query heads are refused.
  Tensor q = Tensor::empty({batch, heads, tokens, d}, DType::F32, ctx.allocator());
  Tensor odd_k = Tensor::zeros({batch, 3, capacity, d}, DType::F32, ctx.allocator());
  Tensor odd_v = Tensor::zeros({batch, 3, capacity, d}, DType::F32, ctx.allocator());
  Tensor odd_qkv = Tensor::zeros({batch, tokens, width + 6 * d}, DType::F32, ctx.allocator());
  CHECK_THROWS_WITH_AS(ops::split_qkv(ctx, odd_qkv, q, odd_k, odd_v, positions_from({0, 0})),
                       doctest::Contains("must divide"), Error);

  Tensor qkv = Tensor::empty({batch, tokens, 3 * width}, DType::F32, ctx.allocator());
  std::iota(qkv.data<float>(), qkv.data<float>() + qkv.numel(), 0.0f);
  Tensor k = Tensor::zeros({batch, heads, capacity, d}, DType::F32, ctx.allocator());
  Tensor v = Tensor::zeros({batch, heads, capacity, d}, DType::F32, ctx.allocator());
  ops::split_qkv(ctx, qkv, q, k, v, positions_from({0, 0}));
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

// ---------------------------------------------------------------------------------------------
// The Llama family's ops: rms_norm, rotary_embedding_, swiglu. Error bounds below come from the
// f32 rounding model: every f32 operation returns the exact result times (1 + d), |d| <= u.
// ---------------------------------------------------------------------------------------------

TEST_CASE("rms_norm matches the float64 definition on normal, huge and tiny rows, in place") {
  Context ctx(2);
  std::mt19937 rng(21);
  const std::int64_t width = 256;
  const float eps = 1e-6f;
  // Row scales: ordinary; huge (x^2 ~ 1e30, summed in double); comparable to eps (mean
  // square ~1e-6); tiny (mean square ~1e-40, far below eps: out ~ x / sqrt(eps)).
  const float scales[] = {1.0f, 1e15f, 1e-3f, 1e-20f};
  Tensor x = Tensor::empty({4, width}, DType::F32, ctx.allocator());
  for (int r = 0; r < 4; ++r) {
    const Tensor row = random_tensor({width}, rng, ctx.allocator(), scales[r]);
    std::copy_n(row.data<float>(), width, x.data<float>() + r * width);
  }
  const Tensor weight = random_tensor({width}, rng, ctx.allocator());
  std::vector<double> expected;
  for (int r = 0; r < 4; ++r) {
    const float* row = x.data<float>() + r * width;
    double squares = 0;
    for (std::int64_t c = 0; c < width; ++c) squares += double(row[c]) * row[c];
    const double rms = std::sqrt(squares / width + double(eps));
    for (std::int64_t c = 0; c < width; ++c)
      expected.push_back(row[c] / rms * weight.data<float>()[c]);
  }
  // The op: 1 / rms in double rounded to f32 (u), x * that (u), times the weight (u): 3u + 3u^2
  // relative per element. The double sums of 256 squares, here and in the op (256 * 2^-53,
  // halved by the square root), add < 1e-13. The floor (far below every |expected|, the
  // smallest being ~1e-19) keeps the check relative.
  const double bound = 3 * kUnitRoundoff * (1 + kUnitRoundoff) + 1e-13;
  Tensor out = Tensor::empty(x.shape(), DType::F32, ctx.allocator());
  ops::rms_norm(ctx, x, weight, eps, out);
  CHECK(max_relative_error(out, expected, 1e-30) <= bound);
  ops::rms_norm(ctx, x, weight, eps, x);
  CHECK(max_relative_error(x, expected, 1e-30) <= bound);
}

TEST_CASE("head_rms_norm_ normalises each query and key head with its gain, in place") {
  Context ctx(2);
  std::mt19937 rng(23);
  const std::int64_t rows = 5, q_heads = 4, kv_heads = 2, head_dim = 16;
  const std::int64_t width = (q_heads + 2 * kv_heads) * head_dim;
  const float eps = 1e-6f;
  Tensor qkv = random_tensor({rows, width}, rng, ctx.allocator(), 3.0f);
  const Tensor q_weight = random_tensor({head_dim}, rng, ctx.allocator());
  const Tensor k_weight = random_tensor({head_dim}, rng, ctx.allocator());
  // The float64 definition: query heads with q_weight, key heads with k_weight, values as they
  // were.
  std::vector<double> expected;
  const float* x = qkv.data<float>();
  for (std::int64_t n = 0; n < rows; ++n) {
    for (std::int64_t h = 0; h < q_heads + 2 * kv_heads; ++h) {
      const float* head = x + n * width + h * head_dim;
      double squares = 0;
      for (std::int64_t d = 0; d < head_dim; ++d) squares += double(head[d]) * head[d];
      const double rms = std::sqrt(squares / head_dim + double(eps));
      for (std::int64_t d = 0; d < head_dim; ++d) {
        if (h >= q_heads + kv_heads) {
          expected.push_back(head[d]);
        } else {
          const float* gain = (h < q_heads ? q_weight : k_weight).data<float>();
          expected.push_back(head[d] / rms * gain[d]);
        }
      }
    }
  }
  // rms_norm's bound (its test above): 3u + 3u^2, plus the double sums of 16 squares.
  const double bound = 3 * kUnitRoundoff * (1 + kUnitRoundoff) + 1e-13;
  ops::head_rms_norm_(ctx, qkv, q_weight, k_weight, q_heads, kv_heads, eps);
  CHECK(max_relative_error(qkv, expected, 1e-30) <= bound);
  // Shapes that do not fit are refused.
  CHECK_THROWS_WITH_AS(ops::head_rms_norm_(ctx, qkv, q_weight, k_weight, q_heads, 3, eps),
                       doctest::Contains("not (4 + 2 x 3) heads of 16"), Error);
  const Tensor short_weight = random_tensor({8}, rng, ctx.allocator());
  CHECK_THROWS_WITH_AS(
      ops::head_rms_norm_(ctx, qkv, q_weight, short_weight, q_heads, kv_heads, eps),
      doctest::Contains("k_weight"), Error);
}

TEST_CASE("swiglu is silu(gate) * up on stacked halves, large negative gates giving -0") {
  Context ctx(2);
  std::mt19937 rng(22);
  const std::int64_t half = 200;
  Tensor gate_up = random_tensor({2, 3, 2 * half}, rng, ctx.allocator(), 4.0f);
  // Gates past sigmoid's saturation on both sides, around exp's overflow at -88.7 and the
  // subnormal sigmoids just above it; row 0's gate half.
  const float gates[] = {0.0f,  -20.0f, -87.5f, -88.5f, -88.8f, -100.0f,
                         -1e3f, -1e30f, 20.0f,  100.0f, 1e3f,   1e30f};
  std::copy(std::begin(gates), std::end(gates), gate_up.data<float>());
  std::vector<double> expected;
  for (std::int64_t r = 0; r < 6; ++r) {
    const float* row = gate_up.data<float>() + r * 2 * half;
    for (std::int64_t j = 0; j < half; ++j) {
      const double g = row[j];
      expected.push_back(g / (1 + std::exp(-g)) * row[half + j]);
    }
  }
  Tensor out = Tensor::empty({2, 3, half}, DType::F32, ctx.allocator());
  ops::swiglu(ctx, gate_up, out);
  // f32: expf within 1 ulp (2u), 1 + e (u, and e's error shrinks by e / (1 + e)), 1 / that (u),
  // g times the sigmoid (u), times up (u): 6u to first order, relative, no cancellation. Below
  // the floor 1e-25 the check is absolute (1e-25 * bound): there the sigmoid is subnormal or,
  // past -88.7, 0 where the true |silu| is below 3e-37.
  const double bound = 6 * kUnitRoundoff * (1 + 1e-5);
  CHECK(max_relative_error(out, expected, 1e-25) <= bound);
  for (int j : {5, 6, 7}) {  // -100, -1000, -1e30: exactly -0, not NaN
    CHECK(out.data<float>()[j] == 0.0f);
    CHECK(std::signbit(out.data<float>()[j]) != std::signbit(gate_up.data<float>()[half + j]));
  }
  CHECK(out.data<float>()[11] == 1e30f * gate_up.data<float>()[half + 11]);  // sigmoid 1
}

TEST_CASE("rotary inverse frequencies match theta^(-2i/D) and the llama3 rescaling in float64") {
  // Default: theta^(2i/D) rounded to f32 (u; 2i/D is exact in f32 for D a power of two, the
  // double pow adds ~1e-16), then 1 / that in f32 (u): relative 2u + 2u^2.
  for (std::int64_t head_dim : {64, 128}) {
    for (double theta : {10000.0, 500000.0}) {
      const std::vector<float> inv = ops::rotary_inverse_frequencies(head_dim, theta, {});
      REQUIRE(inv.size() == static_cast<std::size_t>(head_dim / 2));
      for (std::int64_t i = 0; i < head_dim / 2; ++i) {
        const double reference = std::pow(theta, -2.0 * double(i) / double(head_dim));
        CAPTURE(i);
        CHECK(std::fabs(inv[i] - reference) <=
              (2 * kUnitRoundoff * (1 + kUnitRoundoff) + 1e-15) * reference);
      }
    }
  }

  // llama3 (Llama 3.2's and Llama 3.1's values), against the formula in float64:
  //   wavelen = 2 pi / inv;  kept if wavelen < old / high;  inv / factor if wavelen > old / low;
  //   else s = (old / wavelen - low) / (high - low), inv ((1 - s) / factor + s).
  // Bound, relative: inv is off by 2u, wavelen by 4u, old / wavelen (= r, in [low, high]) by
  // 5u; r - low is then off by 5u high + u (high - low) absolute, so s by
  // ds = 5u high / (high - low) + 3u. The result inv ((1 - s) / factor + s) is >= inv / factor,
  // so ds moves it by at most ds (factor - 1) relative; its own five roundings and inv's error
  // add 7u (both terms positive, no cancellation). The same bound holds where f32 and float64
  // disagree on the band at a boundary: the rescaling is continuous there.
  struct Case {
    std::int64_t head_dim;
    ops::Llama3RopeScaling scaling;
  };
  for (const Case& c : {Case{64, {32.0, 1.0, 4.0, 8192}}, Case{128, {8.0, 1.0, 4.0, 8192}}}) {
    const ops::Llama3RopeScaling& s = c.scaling;
    const double theta = 500000.0;
    const std::vector<float> inv = ops::rotary_inverse_frequencies(c.head_dim, theta, s);
    const double ds =
        5 * kUnitRoundoff * s.high_freq_factor / (s.high_freq_factor - s.low_freq_factor) +
        3 * kUnitRoundoff;
    const double bound = ds * (s.factor - 1) + 7 * kUnitRoundoff + 1e-14;
    const double old_context = double(s.original_max_position_embeddings);
    int kept = 0, divided = 0, smoothed = 0;
    for (std::int64_t i = 0; i < c.head_dim / 2; ++i) {
      const double base = std::pow(theta, -2.0 * double(i) / double(c.head_dim));
      const double wavelen = 2 * M_PI / base;
      double reference = base;
      if (wavelen < old_context / s.high_freq_factor) {
        ++kept;
      } else if (wavelen > old_context / s.low_freq_factor) {
        reference = base / s.factor;
        ++divided;
      } else {
        const double smooth =
            (old_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        reference = base * ((1 - smooth) / s.factor + smooth);
        ++smoothed;
      }
      CAPTURE(c.head_dim);
      CAPTURE(i);
      CHECK(std::fabs(inv[i] - reference) <= bound * reference);
    }
    // All three bands are exercised.
    CHECK(kept > 0);
    CHECK(divided > 0);
    CHECK(smoothed > 0);
  }
}

TEST_CASE("the rotary table holds cos and sin of pos * inv_freq to the f32 angle's precision") {
  CpuAllocator allocator;
  const std::int64_t head_dim = 64, positions = 300;
  const double theta = 10000.0;
  const std::vector<float> inv = ops::rotary_inverse_frequencies(head_dim, theta, {});
  const ops::RotaryTable table = ops::rotary_table(inv, positions, allocator);
  REQUIRE(table.cos.shape() == Shape{positions, head_dim / 2});
  REQUIRE(table.sin.shape() == Shape{positions, head_dim / 2});
  // The angle float(pos) * inv_f32 is off from pos * inv by 3u relative (inv 2u, the product
  // u); cos and sin move by at most that (slope <= 1); the table's own rounding adds u.
  double worst_ratio = 0;
  for (std::int64_t pos = 0; pos < positions; ++pos) {
    for (std::int64_t i = 0; i < head_dim / 2; ++i) {
      const double angle = double(pos) * std::pow(theta, -2.0 * double(i) / double(head_dim));
      const double bound = 3 * kUnitRoundoff * (1 + kUnitRoundoff) * angle + kUnitRoundoff;
      const double cos_error =
          std::fabs(table.cos.data<float>()[pos * head_dim / 2 + i] - std::cos(angle));
      const double sin_error =
          std::fabs(table.sin.data<float>()[pos * head_dim / 2 + i] - std::sin(angle));
      worst_ratio = std::max({worst_ratio, cos_error / bound, sin_error / bound});
    }
  }
  CHECK(worst_ratio <= 1.0);
}

namespace {

// qkv [N, W] after rotating the first `rotated_heads` heads of width D of row n at position
// positions[n] with the table's values, in float64; the rest of each row unchanged.
std::vector<double> reference_rotation(const Tensor& qkv, const ops::RotaryTable& table,
                                       std::int64_t rotated_heads,
                                       const std::vector<std::int32_t>& positions) {
  std::vector<double> out = testing::to_double(qkv);
  const std::int64_t rows = qkv.dim(0), width = qkv.dim(1), half = table.cos.dim(1);
  for (std::int64_t n = 0; n < rows; ++n) {
    for (std::int64_t head = 0; head < rotated_heads; ++head) {
      double* x = out.data() + n * width + head * 2 * half;
      const std::int64_t position = positions[static_cast<std::size_t>(n)];
      for (std::int64_t i = 0; i < half; ++i) {
        const double c = table.cos.data<float>()[position * half + i];
        const double s = table.sin.data<float>()[position * half + i];
        const double first = x[i], second = x[i + half];
        x[i] = first * c - second * s;
        x[i + half] = second * c + first * s;
      }
    }
  }
  return out;
}

// Largest |actual - expected| / bound over the elements, with the bound of f32's
// a * c -/+ b * s: 2u (|a c| + |b s|) <= 2u (|a| + |b|), with or without a fused multiply-add.
// Elements past the first `rotated` of a row must be equal (their bound is 0).
double worst_rotation_error(const Tensor& before, const Tensor& after,
                            const std::vector<double>& expected, std::int64_t rotated,
                            std::int64_t half) {
  const std::int64_t width = before.dim(1);
  double worst = 0;
  for (std::int64_t i = 0; i < before.numel(); ++i) {
    const std::int64_t column = i % width;
    const double error = std::fabs(after.data<float>()[i] - expected[i]);
    if (column >= rotated) {
      if (error != 0) return INFINITY;
      continue;
    }
    const std::int64_t pair_start = i - column % (2 * half) + column % half;
    const double bound = 2 * kUnitRoundoff *
                         (std::fabs(before.data<float>()[pair_start]) +
                          std::fabs(before.data<float>()[pair_start + half]));
    worst = std::max(worst, error / bound);
  }
  return worst;
}

// positions as the i32 tensor the op reads.
Tensor position_tensor(const std::vector<std::int32_t>& positions, Allocator& allocator) {
  Tensor t = Tensor::empty({static_cast<std::int64_t>(positions.size())}, DType::I32, allocator);
  std::copy(positions.begin(), positions.end(), t.data<std::int32_t>());
  return t;
}

}  // namespace

TEST_CASE("rotary_embedding_ rotates each row's q and k heads at its own position, any group") {
  Context ctx(2);
  std::mt19937 rng(23);
  struct Case {
    std::int64_t q_heads, kv_heads, head_dim;
    std::vector<std::int32_t> positions;
  };
  for (const Case& c : {Case{4, 4, 64, {0, 1, 2, 3, 4}},         // a prefill, MHA
                        Case{8, 2, 128, {17, 18, 19, 3, 4, 5}},  // two sequences' chunks
                        Case{9, 3, 64, {299}},                   // one decode token, group 3
                        Case{6, 1, 128, {7, 0, 300, 42}}}) {     // multi-query, ragged
    const std::vector<float> inv = ops::rotary_inverse_frequencies(c.head_dim, 500000.0, {});
    const ops::RotaryTable table = ops::rotary_table(inv, 301, ctx.allocator());
    const auto rows = static_cast<std::int64_t>(c.positions.size());
    const std::int64_t rotated_heads = c.q_heads + c.kv_heads;
    const Tensor before =
        random_tensor({rows, (rotated_heads + c.kv_heads) * c.head_dim}, rng, ctx.allocator());
    Tensor qkv = before.to_dtype(DType::F32, ctx.allocator());
    ops::rotary_embedding_(ctx, qkv, rotated_heads, position_tensor(c.positions, ctx.allocator()),
                           table);
    CAPTURE(c.q_heads);
    CAPTURE(c.kv_heads);
    CHECK(worst_rotation_error(before, qkv,
                               reference_rotation(before, table, rotated_heads, c.positions),
                               rotated_heads * c.head_dim, c.head_dim / 2) <= 1.0);
  }
}

TEST_CASE("rotary embedding makes q . k a function of the distance between positions") {
  // <R(m) q, R(n) k> = <R(m - n) q, k> with exact angles: checked against that float64 value
  // at (7, 3) and at (57, 53), and at (3, 7), whose distance has the other sign.
  Context ctx(1);
  std::mt19937 rng(24);
  const std::int64_t d = 64, half = d / 2;
  const double theta = 10000.0;
  const ops::RotaryTable table =
      ops::rotary_table(ops::rotary_inverse_frequencies(d, theta, {}), 64, ctx.allocator());
  const Tensor q0 = random_tensor({1, 1, 1, d}, rng, ctx.allocator());
  const Tensor k0 = random_tensor({1, 1, 1, d}, rng, ctx.allocator());
  const float* q = q0.data<float>();
  const float* k = k0.data<float>();
  auto frequency = [&](std::int64_t i) { return std::pow(theta, -2.0 * double(i) / double(d)); };
  auto rotated = [&](const Tensor& x, std::int64_t position) {
    Tensor row = x.to_dtype(DType::F32, ctx.allocator()).reshape({1, d});
    ops::rotary_embedding_(ctx, row, 1,
                           position_tensor({static_cast<std::int32_t>(position)}, ctx.allocator()),
                           table);
    return row;
  };
  auto exact_dot = [&](std::int64_t distance) {  // <R(distance) q, k> in float64
    double dot = 0;
    for (std::int64_t i = 0; i < half; ++i) {
      const double c = std::cos(double(distance) * frequency(i));
      const double s = std::sin(double(distance) * frequency(i));
      dot += (q[i] * c - q[i + half] * s) * k[i] + (q[i + half] * c + q[i] * s) * k[i + half];
    }
    return dot;
  };
  // Each rotated element of pair i at position p is off from the exact rotation by at most
  // (|x_i| + |x_{i+D/2}|) (2u + e_i(p)): 2u from the rotation's f32 arithmetic, e_i(p) =
  // 3u p inv_i + u from the table (see the table's test). Summed into the dot product against
  // the other vector's pair (|y_i| + |y_{i+D/2}| bounds each of its rotated elements), for q
  // and for k, plus second-order terms (1e-6 relative covers them).
  auto bound = [&](std::int64_t m, std::int64_t n) {
    double total = 0;
    for (std::int64_t i = 0; i < half; ++i) {
      const double q_pair = std::fabs(q[i]) + std::fabs(q[i + half]);
      const double k_pair = std::fabs(k[i]) + std::fabs(k[i + half]);
      const double q_error = 2 * kUnitRoundoff +
                             3 * kUnitRoundoff * static_cast<double>(m) * frequency(i) +
                             kUnitRoundoff;
      const double k_error = 2 * kUnitRoundoff +
                             3 * kUnitRoundoff * static_cast<double>(n) * frequency(i) +
                             kUnitRoundoff;
      total += 2 * (q_pair * q_error * k_pair + q_pair * k_pair * k_error);
    }
    return total * (1 + 1e-6);
  };
  auto dot = [&](std::int64_t m, std::int64_t n) {
    const Tensor qm = rotated(q0, m);
    const Tensor kn = rotated(k0, n);
    double sum = 0;
    for (std::int64_t i = 0; i < d; ++i) sum += double(qm.data<float>()[i]) * kn.data<float>()[i];
    return sum;
  };
  CHECK(std::fabs(dot(7, 3) - exact_dot(4)) <= bound(7, 3));
  CHECK(std::fabs(dot(57, 53) - exact_dot(4)) <= bound(57, 53));
  CHECK(std::fabs(dot(3, 7) - exact_dot(-4)) <= bound(3, 7));
  CHECK(std::fabs(exact_dot(4) - exact_dot(-4)) > 100 * bound(57, 53));  // the sign of m - n counts
}

TEST_CASE("the Llama ops refuse bad shapes, dtypes and positions with one clear error") {
  Context ctx(1);
  Tensor x = Tensor::zeros({2, 8}, DType::F32, ctx.allocator());
  Tensor half_x = Tensor::zeros({2, 8}, DType::F16, ctx.allocator());
  Tensor weight = Tensor::zeros({8}, DType::F32, ctx.allocator());
  Tensor short_weight = Tensor::zeros({7}, DType::F32, ctx.allocator());
  CHECK_THROWS_WITH_AS(ops::rms_norm(ctx, x, short_weight, 1e-6f, x),
                       doctest::Contains("weight: expected shape [8]"), Error);
  CHECK_THROWS_WITH_AS(ops::rms_norm(ctx, half_x, weight, 1e-6f, half_x),
                       doctest::Contains("must be f32"), Error);
  CHECK_THROWS_WITH_AS(ops::rms_norm(ctx, x, weight, -1.0f, x), doctest::Contains("eps"), Error);

  Tensor odd = Tensor::zeros({2, 7}, DType::F32, ctx.allocator());
  Tensor four = Tensor::zeros({2, 4}, DType::F32, ctx.allocator());
  CHECK_THROWS_WITH_AS(ops::swiglu(ctx, odd, four), doctest::Contains("must be even"), Error);
  CHECK_THROWS_WITH_AS(ops::swiglu(ctx, x, x), doctest::Contains("out: expected shape [2, 4]"),
                       Error);

  CHECK_THROWS_WITH_AS(ops::rotary_inverse_frequencies(63, 10000.0, {}), doctest::Contains("even"),
                       Error);
  CHECK_THROWS_WITH_AS(ops::rotary_inverse_frequencies(64, 0.0, {}),
                       doctest::Contains("rope_theta"), Error);
  CHECK_THROWS_WITH_AS(
      ops::rotary_inverse_frequencies(64, 10000.0, ops::Llama3RopeScaling{8.0, 4.0, 1.0, 8192}),
      doctest::Contains("high_freq_factor > low_freq_factor"), Error);
  const std::vector<float> inv = ops::rotary_inverse_frequencies(8, 10000.0, {});
  CHECK_THROWS_WITH_AS(ops::rotary_table(inv, 0, ctx.allocator()), doctest::Contains("positions"),
                       Error);
  const ops::RotaryTable table = ops::rotary_table(inv, 6, ctx.allocator());
  Tensor qkv = Tensor::zeros({2, 32}, DType::F32, ctx.allocator());
  const Tensor positions = position_tensor({1, 5}, ctx.allocator());
  CHECK_THROWS_WITH_AS(
      ops::rotary_embedding_(ctx, qkv, 2, position_tensor({1, 6}, ctx.allocator()), table),
      doctest::Contains("position 6 is outside the table's 6 positions"), Error);
  CHECK_THROWS_WITH_AS(ops::rotary_embedding_(ctx, qkv, 5, positions, table),
                       doctest::Contains("5 heads of 8 do not fit in rows of 32"), Error);
  CHECK_THROWS_WITH_AS(
      ops::rotary_embedding_(ctx, qkv, 2, position_tensor({1}, ctx.allocator()), table),
      doctest::Contains("positions: expected shape [2]"), Error);
  Tensor half_qkv = Tensor::zeros({2, 32}, DType::F16, ctx.allocator());
  CHECK_THROWS_WITH_AS(ops::rotary_embedding_(ctx, half_qkv, 2, positions, table),
                       doctest::Contains("qkv must be f32"), Error);
  const Tensor wide_positions = Tensor::zeros({2}, DType::F32, ctx.allocator());
  CHECK_THROWS_WITH_AS(ops::rotary_embedding_(ctx, qkv, 2, wide_positions, table),
                       doctest::Contains("positions must be i32"), Error);
  Tensor three_d = Tensor::zeros({2, 2, 8}, DType::F32, ctx.allocator());
  CHECK_THROWS_WITH_AS(ops::rotary_embedding_(ctx, three_d, 2, positions, table),
                       doctest::Contains("[N, W]"), Error);
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
  backend.attend(ctx, call);
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
    ops::attention::find_backend("math").attend(ctx, call);
    const auto expected = testing::reference_attention(
        call.q.to_dtype(DType::F32, ctx.allocator()), call.k.to_dtype(DType::F32, ctx.allocator()),
        call.v.to_dtype(DType::F32, ctx.allocator()), call.kv_len, call.scale);
    const Tensor out = call.out.to_dtype(DType::F32, ctx.allocator());
    // The only error left is the final rounding to the dtype: 2^-8 (bf16) or 2^-11 (f16).
    CHECK(max_relative_error(out, expected, 1.0) <= (dtype == DType::BF16 ? 0x1.0p-8 : 0x1.0p-11));
    CHECK_THROWS_WITH_AS(ops::attention::find_backend("naive").attend(ctx, call),
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
  backend.attend(ctx, call);
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
        const ops::attention::CostModel model =
            backend.cost_model(ctx, ops::attention::shape_of(call));
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
    bytes.push_back(ops::attention::find_backend(name)
                        .cost_model(ctx, ops::attention::shape_of(call))
                        .temporary_bytes);
  }
  const std::size_t scores = 8ull * 16 * 1024 * 1024 * sizeof(float);  // 512 MiB
  CHECK(bytes[0] == 4 * scores);
  CHECK(bytes[1] == 3 * scores);
  CHECK(bytes[2] == scores);
  CHECK(bytes[3] < scores / 64);
  CHECK(std::is_sorted(bytes.rbegin(), bytes.rend()));
  // math pays for its copies and its mask on top of three score buffers.
  CHECK(ops::attention::find_backend("math")
            .cost_model(ctx, ops::attention::shape_of(call))
            .temporary_bytes > 3 * scores);
}
