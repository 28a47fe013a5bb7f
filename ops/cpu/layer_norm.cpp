// ops::layer_norm on the cpu (arguments checked by ops/layer_norm.cpp).
#include "ops/layer_norm.h"

#include <cmath>

#include "ops/cpu/for_each_row.h"
#include "ops/cpu/parallel_threshold.h"
#include "ops/cpu/row_sum.h"

namespace attnscope::ops::cpu {

void layer_norm(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                Tensor& out) {
  const float* g = gamma.data<float>();
  const float* b = beta.data<float>();
  for_each_row(
      ctx, x, out, kMinParallelElements, [&](const float* row, float* dst, std::int64_t width) {
        const double mean = row_sum(width, [&](std::int64_t c) { return double{row[c]}; }) /
                            static_cast<double>(width);
        const double squares = row_sum(width, [&](std::int64_t c) {
          const double deviation = row[c] - mean;
          return deviation * deviation;
        });
        const auto inv_std =
            static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(width) + eps));
        const auto mean_f = static_cast<float>(mean);
        for (std::int64_t c = 0; c < width; ++c) dst[c] = (row[c] - mean_f) * inv_std * g[c] + b[c];
      });
}

}  // namespace attnscope::ops::cpu
