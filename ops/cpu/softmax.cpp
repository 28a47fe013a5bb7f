#include "ops/softmax.h"

#include <cmath>
#include <limits>

#include "ops/check.h"
#include "profiler/scope.h"

namespace attnscope::ops {

void softmax_row(const float* x, float* out, std::int64_t n) {
  float max_value = -std::numeric_limits<float>::infinity();
  for (std::int64_t i = 0; i < n; ++i) max_value = std::fmax(max_value, x[i]);
  float sum = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) {
    out[i] = std::exp(x[i] - max_value);
    sum += out[i];
  }
  const float inv_sum = 1.0f / sum;
  for (std::int64_t i = 0; i < n; ++i) out[i] *= inv_sum;
}

void softmax(Context& ctx, const Tensor& x, Tensor& out) {
  profiler::Scope scope(ctx, "softmax");
  require_cpu_f32(x, "softmax", "x");
  require_cpu_f32(out, "softmax", "out");
  require_shape(out, x.shape(), "softmax", "out");
  const std::int64_t width = x.dim(-1);
  const std::int64_t rows = width == 0 ? 0 : x.numel() / width;
  const float* in = x.data<float>();
  float* y = out.data<float>();
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) softmax_row(in + r * width, y + r * width, width);
}

}  // namespace attnscope::ops
