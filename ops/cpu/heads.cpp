// ops::split_qkv and ops::merge_heads on the cpu (arguments checked by ops/heads.cpp).
#include "ops/heads.h"

#include <algorithm>

#include "ops/cpu/element_rows.h"
#include "ops/cpu/parallel_threshold.h"

namespace attnscope::ops::cpu {

void split_qkv(Context& ctx, const Tensor& qkv, Tensor& q_out, Tensor& k_cache, Tensor& v_cache,
               const Tensor& positions) {
  const QkvSplit s = QkvSplit::of(q_out, k_cache);
  const std::int32_t* position = positions.data<std::int32_t>();
  const float* src = qkv.data<float>();
  float* q = q_out.data<float>();
  float* k = k_cache.data<float>();
  float* v = v_cache.data<float>();
  // Head h < Hq of a token row is a query; Hq <= h < Hq + Hkv a key, then Hkv values.
#pragma omp parallel for collapse(2) num_threads(ctx.threads()) \
    schedule(static) if (s.batch * s.tokens * s.row_width() >= kMinParallelElements)
  for (std::int64_t b = 0; b < s.batch; ++b) {
    for (std::int64_t h = 0; h < s.row_heads(); ++h) {
      for (std::int64_t t = 0; t < s.tokens; ++t) {
        const float* from = src + (b * s.tokens + t) * s.row_width() + h * s.head_dim;
        if (h < s.heads) {
          std::copy_n(from, s.head_dim, q + ((b * s.heads + h) * s.tokens + t) * s.head_dim);
          continue;
        }
        const std::int64_t g = (h - s.heads) % s.kv_heads;
        float* cache = h < s.heads + s.kv_heads ? k : v;
        std::copy_n(
            from, s.head_dim,
            cache + ((b * s.kv_heads + g) * s.capacity + position[b * s.tokens + t]) * s.head_dim);
      }
    }
  }
}

void split_qkv_paged(Context& ctx, const Tensor& qkv, Tensor& q_out, Tensor& key_blocks,
                     Tensor& value_blocks, const Tensor& slots) {
  const std::int64_t rows = qkv.dim(0), heads = q_out.dim(1), head_dim = q_out.dim(2);
  const std::int64_t kv_heads = key_blocks.dim(1), block_tokens = key_blocks.dim(2);
  const std::int64_t row_width = qkv.dim(1);
  const std::int32_t* slot = slots.data<std::int32_t>();
  const DType cache = key_blocks.dtype();  // f32, or f16, bf16 or q8_0 (element_rows.h)
#pragma omp parallel for num_threads(ctx.threads()) \
    schedule(static) if (rows * row_width >= kMinParallelElements)
  for (std::int64_t n = 0; n < rows; ++n) {
    const float* row = qkv.data<float>() + n * row_width;
    std::copy_n(row, heads * head_dim, q_out.data<float>() + n * heads * head_dim);
    const std::int64_t block = slot[n] / block_tokens, offset = slot[n] % block_tokens;
    // The row's last 2 Hkv heads: Hkv of keys, then Hkv of values.
    const float* kv = row + heads * head_dim;
    for (int which = 0; which < 2; ++which) {
      Tensor& blocks = which == 0 ? key_blocks : value_blocks;
      for (std::int64_t g = 0; g < kv_heads; ++g) {
        const std::int64_t at = ((block * kv_heads + g) * block_tokens + offset) * head_dim;
        rows_from_f32(kv + (which * kv_heads + g) * head_dim, cache, head_dim,
                      static_cast<char*>(blocks.raw_data()) + storage_bytes(cache, at));
      }
    }
  }
}

void merge_heads(Context& ctx, const Tensor& x, Tensor& out) {
  const std::int64_t batch = x.dim(0);
  const std::int64_t heads = x.dim(1);
  const std::int64_t tokens = x.dim(2);
  const std::int64_t head_dim = x.dim(3);
  const float* src = x.data<float>();
  float* dst = out.data<float>();
#pragma omp parallel for collapse(2) num_threads(ctx.threads()) \
    schedule(static) if (x.numel() >= kMinParallelElements)
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t t = 0; t < tokens; ++t) {
      for (std::int64_t h = 0; h < heads; ++h) {
        std::copy_n(src + ((b * heads + h) * tokens + t) * head_dim, head_dim,
                    dst + ((b * tokens + t) * heads + h) * head_dim);
      }
    }
  }
}

}  // namespace attnscope::ops::cpu
