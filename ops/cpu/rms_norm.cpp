// ops::rms_norm on the cpu (arguments checked by ops/rms_norm.cpp).
#include "ops/rms_norm.h"

#include <cmath>

#include "ops/cpu/for_each_row.h"
#include "ops/cpu/row_sum.h"

namespace attnscope::ops::cpu {

// Below this many elements the op runs on the calling thread (for_each_row; a decode step's
// rows are 576 to 4096 wide).
constexpr std::int64_t kMinParallelElements = 1 << 15;

void rms_norm(Context& ctx, const Tensor& x, const Tensor& weight, float eps, Tensor& out) {
  const float* w = weight.data<float>();
  for_each_row(
      ctx, x, out, kMinParallelElements, [&](const float* row, float* dst, std::int64_t width) {
        const double squares =
            row_sum(width, [&](std::int64_t c) { return double{row[c]} * double{row[c]}; });
        const auto inv_rms =
            static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(width) + eps));
        for (std::int64_t c = 0; c < width; ++c) dst[c] = (row[c] * inv_rms) * w[c];
      });
}

}  // namespace attnscope::ops::cpu
