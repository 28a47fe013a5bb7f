// ops::gelu on the cpu (arguments checked by ops/gelu.cpp): one parallel loop.
#include "ops/gelu.h"

#include <cmath>

namespace attnscope::ops::cpu {

// Below this many elements the op runs on the calling thread: starting and joining a team of
// threads costs microseconds, more than the work (a decode step's rows are 768 to 3072 wide).
constexpr std::int64_t kMinParallelElements = 1 << 15;

void gelu(Context& ctx, const Tensor& x, Tensor& out) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  const float* in = x.data<float>();
  float* y = out.data<float>();
  const std::int64_t n = x.numel();
#pragma omp parallel for num_threads(ctx.threads()) schedule(static) if (n >= kMinParallelElements)
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = in[i];
    y[i] = 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
  }
}

}  // namespace attnscope::ops::cpu
