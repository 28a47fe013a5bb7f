// ops::swiglu on the cpu (arguments checked by ops/swiglu.cpp): one parallel loop over the
// rows, silu from ops/activation_math.h.
#include "ops/swiglu.h"

#include "ops/activation_math.h"

namespace attnscope::ops::cpu {

// Below this many elements the op runs on the calling thread: starting and joining a team of
// threads costs microseconds, more than the work (a decode step's rows are 1536 to 8192 wide).
constexpr std::int64_t kMinParallelElements = 1 << 15;

void swiglu(Context& ctx, const Tensor& gate_up, Tensor& out) {
  const std::int64_t half = out.dim(-1);
  const std::int64_t rows = half == 0 ? 0 : out.numel() / half;
  const float* in = gate_up.data<float>();
  float* y = out.data<float>();
#pragma omp parallel for num_threads(ctx.threads()) \
    schedule(static) if (out.numel() >= kMinParallelElements)
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* gate = in + r * 2 * half;
    const float* up = gate + half;
    float* dst = y + r * half;
    for (std::int64_t j = 0; j < half; ++j) dst[j] = activate(Activation::Silu, gate[j]) * up[j];
  }
}

}  // namespace attnscope::ops::cpu
