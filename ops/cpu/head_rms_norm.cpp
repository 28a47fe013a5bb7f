// ops::head_rms_norm_ on the cpu (arguments checked by ops/head_rms_norm.cpp): qkv seen as rows
// of one head each, [N (Hq + 2 Hkv), D]; the query and key heads normalised in place, the value
// heads skipped.
#include "ops/head_rms_norm.h"

#include "ops/cpu/parallel_threshold.h"
#include "ops/cpu/rms_norm_row.h"

namespace attnscope::ops::cpu {

void head_rms_norm_(Context& ctx, Tensor& qkv, const Tensor& q_weight, const Tensor& k_weight,
                    std::int64_t q_heads, std::int64_t kv_heads, float eps) {
  const std::int64_t head_dim = q_weight.dim(0);
  const std::int64_t heads_per_row = q_heads + 2 * kv_heads;
  const std::int64_t head_rows = qkv.dim(0) * heads_per_row;
  float* x = qkv.data<float>();
  const float* q = q_weight.data<float>();
  const float* k = k_weight.data<float>();
#pragma omp parallel for num_threads(ctx.threads()) \
    schedule(static) if (head_rows * head_dim >= kMinParallelElements)
  for (std::int64_t r = 0; r < head_rows; ++r) {
    const std::int64_t head = r % heads_per_row;
    if (head >= q_heads + kv_heads) continue;  // a value head
    float* row = x + r * head_dim;
    rms_norm_row(row, head < q_heads ? q : k, eps, row, head_dim);
  }
}

}  // namespace attnscope::ops::cpu
