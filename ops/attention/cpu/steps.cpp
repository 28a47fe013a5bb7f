// The eager attention steps on the cpu (ops/attention/steps.h states them; arguments checked by
// ops/attention/steps.cpp, which calls these bodies, declared in cpu/steps.h). Each one is one
// parallel pass: over the (batch, query head) pairs for the GEMMs, over score rows for the masks
// and the fused softmax, over elements otherwise. Scores are f32 here.
#include "ops/attention/cpu/steps.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "ops/cpu/eigen_maps.h"
#include "runtime/dtype.h"

namespace attnscope::ops::attention::cpu {

namespace {

// Scale, causal mask and softmax of one row of `length` scores, of which `visible` are kept.
void scale_mask_softmax_row(float* row, std::int64_t length, std::int64_t visible, float factor) {
  float max_value = row[0] * factor;
  for (std::int64_t j = 0; j < visible; ++j) max_value = std::max(max_value, row[j] * factor);
  float sum = 0.0f;
  for (std::int64_t j = 0; j < visible; ++j) {
    row[j] = std::exp(row[j] * factor - max_value);
    sum += row[j];
  }
  const float inv_sum = 1.0f / sum;
  for (std::int64_t j = 0; j < visible; ++j) row[j] *= inv_sum;
  std::fill(row + visible, row + length, 0.0f);
}

}  // namespace

void qk_gemm(Context& ctx, const HeadLayout& l, const Tensor& q, const Tensor& k, Tensor& scores) {
  const float* q_data = q.data<float>();
  const float* k_data = k.data<float>();
  float* s = scores.data<float>();
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
  for (std::int64_t bh = 0; bh < l.heads(); ++bh) {
    const ConstMatrixMap q_head(q_data + bh * l.q_len * l.head_dim, l.q_len, l.head_dim);
    const ConstMatrixMap k_head(k_data + l.kv_offset(bh), l.kv_len, l.head_dim);
    MatrixMap(s + bh * l.q_len * l.kv_len, l.q_len, l.kv_len).noalias() =
        q_head * k_head.transpose();
  }
}

void pv_gemm(Context& ctx, const HeadLayout& l, const Tensor& probs, const Tensor& v, Tensor& out) {
  const float* p = probs.data<float>();
  const float* v_data = v.data<float>();
  float* o = out.data<float>();
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
  for (std::int64_t bh = 0; bh < l.heads(); ++bh) {
    const ConstMatrixMap p_head(p + bh * l.q_len * l.kv_len, l.q_len, l.kv_len);
    const ConstMatrixMap v_head(v_data + l.kv_offset(bh), l.kv_len, l.head_dim);
    MatrixMap(o + bh * l.q_len * l.head_dim, l.q_len, l.head_dim).noalias() = p_head * v_head;
  }
}

void scale(Context& ctx, const Tensor& in, Tensor& out, float factor) {
  const float* x = in.data<float>();
  float* y = out.data<float>();
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
  for (std::int64_t i = 0; i < in.numel(); ++i) y[i] = x[i] * factor;
}

void copy(Context& /*ctx*/, const Tensor& in, Tensor& out) {
  std::copy_n(in.data<float>(), in.numel(), out.data<float>());
}

void causal_fill(Context& ctx, const HeadLayout& l, Tensor& scores, float value) {
  float* s = scores.data<float>();
  const std::int64_t first_position = l.kv_len - l.q_len;
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
  for (std::int64_t row = 0; row < l.heads() * l.q_len; ++row) {
    const std::int64_t visible = first_position + row % l.q_len + 1;  // keys 0..position
    std::fill(s + row * l.kv_len + visible, s + (row + 1) * l.kv_len, value);
  }
}

void scale_mask_softmax(Context& ctx, const HeadLayout& l, Tensor& scores, float factor) {
  float* s = scores.data<float>();
  const std::int64_t first_position = l.kv_len - l.q_len;
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
  for (std::int64_t row = 0; row < l.heads() * l.q_len; ++row) {
    scale_mask_softmax_row(s + row * l.kv_len, l.kv_len, first_position + row % l.q_len + 1,
                           factor);
  }
}

void upcast_cache_rows(Context& ctx, const HeadLayout& l, const Tensor& cache, Tensor& out) {
  const std::size_t element = dtype_size(cache.dtype());
  const auto* src = static_cast<const std::uint8_t*>(cache.raw_data());
  const std::int64_t head_elements = l.kv_len * l.head_dim;
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
  for (std::int64_t head = 0; head < l.batch * l.kv_heads; ++head) {
    const std::int64_t offset = head * l.capacity * l.head_dim;
    convert_elements(src + static_cast<std::size_t>(offset) * element, cache.dtype(),
                     out.data<float>() + head * head_elements, DType::F32,
                     static_cast<std::size_t>(head_elements));
  }
}

void build_causal_mask(Context& /*ctx*/, const HeadLayout& l, Buffer& keep) {
  auto* mask = static_cast<std::uint8_t*>(keep.data());
  const std::int64_t first_position = l.kv_len - l.q_len;
  for (std::int64_t i = 0; i < l.q_len; ++i) {
    for (std::int64_t j = 0; j < l.kv_len; ++j) mask[i * l.kv_len + j] = j <= first_position + i;
  }
}

void where(Context& ctx, const Buffer& keep, const Tensor& scores, Tensor& masked) {
  const auto* mask = static_cast<const std::uint8_t*>(keep.data());
  const float* s = scores.data<float>();
  float* m = masked.data<float>();
  const std::int64_t block = scores.dim(2) * scores.dim(3);  // the mask of one head
  const float masked_value = -std::numeric_limits<float>::infinity();
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
  for (std::int64_t i = 0; i < scores.numel(); ++i) m[i] = mask[i % block] ? s[i] : masked_value;
}

}  // namespace attnscope::ops::attention::cpu
