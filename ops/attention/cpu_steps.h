// The steps the eager CPU backends (naive, inplace, math, fused) share, each one whole pass over
// every (batch, head) pair, parallel over the pairs.
//
//   qk_gemm:    scores[b, h] = q[b, h] k[b, h / group]^T          [Tq, Tk], 2 Tq Tk D FLOPs/head
//   pv_gemm:    out[b, h]    = probs[b, h] v[b, h / group]        [Tq, D],  2 Tq Tk D FLOPs/head
//   causal_fill: scores[b, h, i, j] = value where key j lies after query i's position
//   scale:      out[i] = in[i] * factor over n floats (out may be in)
//
// Query i sits at position kv_len - Tq + i (see attention.h). K and V rows of one kv head are
// `capacity` apart, so the same code reads the KV cache and compact copies of it.
#pragma once

#include <cstdint>

#include "ops/attention/attention.h"

namespace attnscope::ops::attention {

struct HeadLayout {
  std::int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, capacity = 0,
               head_dim = 0;

  std::int64_t heads() const { return batch * q_heads; }  // (batch, query head) pairs
  std::int64_t score_elements() const { return heads() * q_len * kv_len; }
  // Offset of the first K/V row that query head `bh` (= b * q_heads + h) reads.
  std::int64_t kv_offset(std::int64_t bh) const {
    const std::int64_t b = bh / q_heads;
    const std::int64_t kv_head = (bh % q_heads) / (q_heads / kv_heads);
    return (b * kv_heads + kv_head) * capacity * head_dim;
  }
};

HeadLayout layout_of(const Call& call);

void qk_gemm(const Context& ctx, const HeadLayout& layout, const float* q, const float* k,
             float* scores);
void pv_gemm(const Context& ctx, const HeadLayout& layout, const float* probs, const float* v,
             float* out);
void causal_fill(const Context& ctx, const HeadLayout& layout, float* scores, float value);
void scale(const Context& ctx, const float* in, float* out, std::int64_t n, float factor);

}  // namespace attnscope::ops::attention
