// ops::softmax and ops::safe_softmax on the cpu (arguments checked by ops/softmax.cpp), and the
// row-by-row softmax_row other cpu code calls directly.
#include "ops/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/cpu/for_each_row.h"

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

namespace cpu {

namespace {

void safe_softmax_row(const float* x, float* out, std::int64_t n) {
  const bool all_masked =
      std::all_of(x, x + n, [](float v) { return v == -std::numeric_limits<float>::infinity(); });
  if (all_masked) {
    std::fill(out, out + n, 0.0f);
  } else {
    softmax_row(x, out, n);
  }
}

}  // namespace

void softmax(Context& ctx, const Tensor& x, Tensor& out) {
  for_each_row(ctx, x, out, /*min_parallel_elements=*/0, softmax_row);
}

void safe_softmax(Context& ctx, const Tensor& x, Tensor& out) {
  for_each_row(ctx, x, out, /*min_parallel_elements=*/0, safe_softmax_row);
}

}  // namespace cpu

}  // namespace attnscope::ops
