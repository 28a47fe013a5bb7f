#include "ops/attention/cpu_steps.h"

#include <Eigen/Core>
#include <algorithm>

#include "ops/cpu/eigen_maps.h"

namespace attnscope::ops::attention {

HeadLayout layout_of(const Call& call) {
  return {call.batch(), call.q_heads(), call.kv_heads(), call.q_len(),
          call.kv_len,  call.k.dim(2),  call.head_dim()};
}

void qk_gemm(const Context& ctx, const HeadLayout& l, const float* q, const float* k,
             float* scores) {
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
  for (std::int64_t bh = 0; bh < l.heads(); ++bh) {
    const ConstMatrixMap q_head(q + bh * l.q_len * l.head_dim, l.q_len, l.head_dim);
    const ConstMatrixMap k_head(k + l.kv_offset(bh), l.kv_len, l.head_dim);
    MatrixMap(scores + bh * l.q_len * l.kv_len, l.q_len, l.kv_len).noalias() =
        q_head * k_head.transpose();
  }
}

void pv_gemm(const Context& ctx, const HeadLayout& l, const float* probs, const float* v,
             float* out) {
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
  for (std::int64_t bh = 0; bh < l.heads(); ++bh) {
    const ConstMatrixMap p_head(probs + bh * l.q_len * l.kv_len, l.q_len, l.kv_len);
    const ConstMatrixMap v_head(v + l.kv_offset(bh), l.kv_len, l.head_dim);
    MatrixMap(out + bh * l.q_len * l.head_dim, l.q_len, l.head_dim).noalias() = p_head * v_head;
  }
}

void causal_fill(const Context& ctx, const HeadLayout& l, float* scores, float value) {
  const std::int64_t first_position = l.kv_len - l.q_len;
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
  for (std::int64_t row = 0; row < l.heads() * l.q_len; ++row) {
    const std::int64_t visible = first_position + row % l.q_len + 1;  // keys 0..position
    std::fill(scores + row * l.kv_len + visible, scores + (row + 1) * l.kv_len, value);
  }
}

void scale(const Context& ctx, const float* in, float* out, std::int64_t n, float factor) {
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
  for (std::int64_t i = 0; i < n; ++i) out[i] = in[i] * factor;
}

}  // namespace attnscope::ops::attention
