// The loop of the cpu ops that work row by row on their input's last dimension (layer_norm,
// rms_norm, softmax, safe_softmax): each row of the f32 `x` with the same row of `out`, the rows
// spread over the context's threads.
#pragma once

#include <cstdint>

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops::cpu {

// row_op(in_row, out_row, width) for every row of x. Below `min_parallel_elements` elements the
// rows run on the calling thread: starting and joining a team of threads costs microseconds,
// more than a small op's work.
template <typename RowOp>
void for_each_row(Context& ctx, const Tensor& x, Tensor& out, std::int64_t min_parallel_elements,
                  RowOp row_op) {
  const std::int64_t width = x.dim(-1);
  const std::int64_t rows = width == 0 ? 0 : x.numel() / width;
  const float* in = x.data<float>();
  float* y = out.data<float>();
#pragma omp parallel for num_threads(ctx.threads()) \
    schedule(static) if (rows * width >= min_parallel_elements)
  for (std::int64_t r = 0; r < rows; ++r) row_op(in + r * width, y + r * width, width);
}

}  // namespace attnscope::ops::cpu
