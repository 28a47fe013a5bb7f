// Moving between the model's token-major layout and attention's head-major layout.
//
// split_qkv: GPT-2's fused projection gives, for each token, [q | k | v], each of width H D.
//   q_out[b, h, t, :]            = qkv[b, t, 0 C + h D : 0 C + (h + 1) D]
//   k_cache[b, h, start + t, :]  = qkv[b, t, 1 C + h D : ...]
//   v_cache[b, h, start + t, :]  = qkv[b, t, 2 C + h D : ...]
// Shapes: qkv [B, T, 3 H D], q_out [B, H, T, D], caches [B, H, S, D] with start + T <= S.
// This is the KV-cache append: the new keys and values land where later tokens will read them.
//
// merge_heads: out[b, t, h D : (h + 1) D] = x[b, h, t, :]; x [B, H, T, D], out [B, T, H D].
//
// All tensors of a call share one dtype (f32 on the cpu; f32, f16 or bf16 on cuda).
// Cost: pure copies, each element read and written once; one launch each on a GPU.
#pragma once

#include <cstdint>

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

void split_qkv(Context& ctx, const Tensor& qkv, Tensor& q_out, Tensor& k_cache, Tensor& v_cache,
               std::int64_t start);

void merge_heads(Context& ctx, const Tensor& x, Tensor& out);

// The implementations the ops above dispatch to, after their checks.
namespace cpu {
void split_qkv(Context& ctx, const Tensor& qkv, Tensor& q_out, Tensor& k_cache, Tensor& v_cache,
               std::int64_t start);
void merge_heads(Context& ctx, const Tensor& x, Tensor& out);
}  // namespace cpu
namespace cuda {
void split_qkv(Context& ctx, const Tensor& qkv, Tensor& q_out, Tensor& k_cache, Tensor& v_cache,
               std::int64_t start);
void merge_heads(Context& ctx, const Tensor& x, Tensor& out);
}  // namespace cuda

}  // namespace attnscope::ops
