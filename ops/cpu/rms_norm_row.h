// One row of RMSNorm on the cpu, shared by ops::rms_norm (every row of its input) and
// ops::head_rms_norm_ (each query and key head): rms in float64 (row_sum: no overflow for any
// finite f32 row), then out = (x * (1 / rms)) * weight. `out` may be `row`.
#pragma once

#include <cmath>
#include <cstdint>

#include "ops/cpu/row_sum.h"

namespace attnscope::ops::cpu {

inline void rms_norm_row(const float* row, const float* weight, float eps, float* out,
                         std::int64_t width) {
  const double squares =
      row_sum(width, [&](std::int64_t c) { return double{row[c]} * double{row[c]}; });
  const auto inv_rms =
      static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(width) + eps));
  for (std::int64_t c = 0; c < width; ++c) out[c] = (row[c] * inv_rms) * weight[c];
}

}  // namespace attnscope::ops::cpu
