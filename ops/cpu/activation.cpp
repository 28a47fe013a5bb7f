// ops::activation on the cpu (arguments checked by ops/activation.cpp): one parallel loop over
// the formula of ops/activation_math.h.
#include "ops/activation.h"

#include "ops/activation_math.h"

namespace attnscope::ops::cpu {

// Below this many elements the op runs on the calling thread: starting and joining a team of
// threads costs microseconds, more than the work (a decode step's rows are 768 to 3072 wide).
constexpr std::int64_t kMinParallelElements = 1 << 15;

void activation(Context& ctx, Activation function, const Tensor& x, Tensor& out) {
  const float* in = x.data<float>();
  float* y = out.data<float>();
  const std::int64_t n = x.numel();
#pragma omp parallel for num_threads(ctx.threads()) schedule(static) if (n >= kMinParallelElements)
  for (std::int64_t i = 0; i < n; ++i) y[i] = activate(function, in[i]);
}

}  // namespace attnscope::ops::cpu
