// ops::add on the cpu (arguments checked by ops/add.cpp): one parallel loop.
#include "ops/add.h"

namespace attnscope::ops::cpu {

// Below this many elements the op runs on the calling thread: starting and joining a team of
// threads costs microseconds, more than the work (a decode step's rows are 768 to 3072 wide).
constexpr std::int64_t kMinParallelElements = 1 << 15;

void add(Context& ctx, const Tensor& a, const Tensor& b, Tensor& out) {
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  float* z = out.data<float>();
  const std::int64_t n = a.numel();
#pragma omp parallel for num_threads(ctx.threads()) schedule(static) if (n >= kMinParallelElements)
  for (std::int64_t i = 0; i < n; ++i) z[i] = x[i] + y[i];
}

}  // namespace attnscope::ops::cpu
