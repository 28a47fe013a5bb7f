// ops::activation on the cpu (arguments checked by ops/activation.cpp): one parallel loop over
// the formula of ops/activation_math.h, and GPT-2's tanh-form GELU vectorised.
//
// Why GELU has its own loop: at pp512 GPT-2 small applies it to 12 x 512 x 3072 values, and the
// scalar loop (a switch and a libm tanhf per value) took 27% of the prefill, more than the
// attention (profile in docs/results/2026-12-01-cpu-prefill). Here the same function is written
// as 0.5 (1 + tanh z) = 1 / (1 + e^(-2z)), so GELU(x) = x / (1 + e^(-2z)): Eigen evaluates exp
// in SIMD registers (16 values per AVX-512 instruction, ~1 ulp), and for negative x the form
// has no cancellation, where 1 + tanh z (tanh near -1) would turn a tanh error of a few ulps of
// 1 into a large relative error of a small result. What remains is the rounding of the
// argument 2z (relative u, absolute |2z| u, so e^(-2z) is off by a factor 1 + |2z| u, at most
// ~20 u = 1.2e-6 where the result is not negligible): inside the 1e-5 relative bound that the
// float64 test in tests/test_ops.cpp holds every activation to. Below x = -10, e^(-2z)
// overflows to inf and the result is -0, as 1 + tanhf(z) = 0 makes it in the scalar form (the
// exact value is below 1e-36 in magnitude).
#include "ops/activation.h"

#include <Eigen/Core>
#include <algorithm>

#include "ops/activation_math.h"
#include "ops/cpu/parallel_threshold.h"

namespace attnscope::ops::cpu {

namespace {

// Values per task of the vectorised GELU: a multiple of 16 lanes, 64 KB of f32.
constexpr std::int64_t kGeluChunk = 1 << 14;

// 0.5 x (1 + tanh z) with z = sqrt(2 / pi) (x + 0.044715 x^3), as x / (1 + e^(-2z)), on n
// values; in place allowed.
void gelu_tanh(const float* in, float* out, std::int64_t n) {
  constexpr float kMinusTwoSqrt2OverPi = -2.0f * 0.7978845608028654f;
  const Eigen::Map<const Eigen::ArrayXf> x(in, n);
  Eigen::Map<Eigen::ArrayXf> y(out, n);
  y = x / (1.0f + (kMinusTwoSqrt2OverPi * (x + 0.044715f * x.cube())).exp());
}

}  // namespace

void activation(Context& ctx, Activation function, const Tensor& x, Tensor& out) {
  const float* in = x.data<float>();
  float* y = out.data<float>();
  const std::int64_t n = x.numel();
  if (function == Activation::GeluTanh) {
#pragma omp parallel for num_threads(ctx.threads()) schedule(static) if (n >= kMinParallelElements)
    for (std::int64_t first = 0; first < n; first += kGeluChunk) {
      gelu_tanh(in + first, y + first, std::min(kGeluChunk, n - first));
    }
    return;
  }
#pragma omp parallel for num_threads(ctx.threads()) schedule(static) if (n >= kMinParallelElements)
  for (std::int64_t i = 0; i < n; ++i) y[i] = activate(function, in[i]);
}

}  // namespace attnscope::ops::cpu
