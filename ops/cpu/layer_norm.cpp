// ops::layer_norm on the cpu (arguments checked by ops/layer_norm.cpp).
#include "ops/layer_norm.h"

#include <cmath>

#include "ops/cpu/row_sum.h"

namespace attnscope::ops::cpu {

// Below this many elements the op runs on the calling thread: starting and joining a team of
// threads costs microseconds, more than the work (a decode step's rows are 768 to 3072 wide).
constexpr std::int64_t kMinParallelElements = 1 << 15;

void layer_norm(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                Tensor& out) {
  const std::int64_t width = x.dim(-1);
  const std::int64_t rows = width == 0 ? 0 : x.numel() / width;
  const float* in = x.data<float>();
  const float* g = gamma.data<float>();
  const float* b = beta.data<float>();
  float* y = out.data<float>();
#pragma omp parallel for num_threads(ctx.threads()) \
    schedule(static) if (rows * width >= kMinParallelElements)
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = in + r * width;
    float* dst = y + r * width;
    const double mean =
        row_sum(width, [&](std::int64_t c) { return double{row[c]}; }) / static_cast<double>(width);
    const double squares = row_sum(width, [&](std::int64_t c) {
      const double deviation = row[c] - mean;
      return deviation * deviation;
    });
    const auto inv_std =
        static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(width) + eps));
    const auto mean_f = static_cast<float>(mean);
    for (std::int64_t c = 0; c < width; ++c) dst[c] = (row[c] - mean_f) * inv_std * g[c] + b[c];
  }
}

}  // namespace attnscope::ops::cpu
