// ops::rotary_embedding_ on the cpu (arguments and positions checked by
// ops/rotary_embedding.cpp): each query and key head of each row rotated in place, in f32.
#include "ops/rotary_embedding.h"

#include "ops/cpu/parallel_threshold.h"

namespace attnscope::ops::cpu {

void rotary_embedding_(Context& ctx, Tensor& qkv, std::int64_t rotated_heads,
                       const Tensor& positions, const RotaryTable& table) {
  const std::int64_t rows = qkv.dim(0);
  const std::int64_t width = qkv.dim(1);
  const std::int64_t half = table.cos.dim(1);
  const std::int32_t* pos = positions.data<std::int32_t>();
  float* x = qkv.data<float>();
#pragma omp parallel for collapse(2) num_threads(ctx.threads()) \
    schedule(static) if (rows * rotated_heads * 2 * half >= kMinParallelElements)
  for (std::int64_t n = 0; n < rows; ++n) {
    for (std::int64_t head = 0; head < rotated_heads; ++head) {
      float* row = x + n * width + head * 2 * half;
      const float* c = table.cos.data<float>() + pos[n] * half;
      const float* s = table.sin.data<float>() + pos[n] * half;
      for (std::int64_t i = 0; i < half; ++i) {
        const float first = row[i];
        const float second = row[i + half];
        row[i] = first * c[i] - second * s[i];
        row[i + half] = second * c[i] + first * s[i];
      }
    }
  }
}

}  // namespace attnscope::ops::cpu
