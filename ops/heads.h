// Moving between the model's token-major layout and attention's head-major layout.
//
// split_qkv: the fused projection gives, for each token, [q | k | v]: Hq heads of queries, then
// Hkv heads of keys and Hkv of values, each head D wide (GPT-2: Hkv = Hq; Llama's grouped-query
// attention: Hkv divides Hq, and its separate q_proj, k_proj, v_proj weights are stacked at load
// into one [(Hq + 2 Hkv) D, C] matrix, so the three projections are one GEMM and this one op).
//   q_out[b, h, t, :]      = qkv[b, t, h D : (h + 1) D]                      h < Hq
//   k_cache[b, g, p, :]    = qkv[b, t, Hq D + g D : ...]                     g < Hkv
//   v_cache[b, g, p, :]    = qkv[b, t, (Hq + Hkv) D + g D : ...]             p = positions[b T + t]
// Shapes: qkv [B, T, (Hq + 2 Hkv) D], q_out [B, Hq, T, D], caches [B, Hkv, S, D], positions
// i32 [B T] on the same device, each in [0, S) (checked on the cpu; on a GPU, where reading them
// back would cost a synchronisation, a token whose position is outside writes no key or value);
// Hq and Hkv are read from q_out and the caches.
// This is the KV-cache append: the new keys and values land where later tokens will read them.
// Each token's row comes from memory, not from one start for the step, so that a CUDA graph can
// replay the same launch while the cache grows (runtime/cuda/step_graph.h).
//
// split_qkv_paged: the same split for a ragged batch over a paged cache (ops/attention/paged.h):
// rows of many sequences, each writing its keys and values at its own slot of the blocks.
//   q_out[n, h, :]                                  = qkv[n, h D : (h + 1) D]       h < Hq
//   key_blocks[slot / bt, g, slot % bt, :]          = qkv[n, Hq D + g D : ...]      g < Hkv
//   value_blocks[slot / bt, g, slot % bt, :]        = qkv[n, (Hq + Hkv) D + g D : ...]
// with slot = slots[n] = block * bt + offset (bt = block_tokens). Shapes: qkv [N, (Hq + 2 Hkv) D],
// q_out [N, Hq, D] (token-major, as a paged call reads it), blocks [blocks, Hkv, bt, D], slots
// i32 [N] on the same device, each in [0, blocks bt) (checked on the cpu; on a GPU, where reading
// them back would cost a synchronisation, a row whose slot is outside writes no key or value).
// The engine gives every new token its own slot; a slot in a block another sequence shares is
// the one thing it must never pass (runtime/block_pool.h).
//
// merge_heads: out[b, t, h D : (h + 1) D] = x[b, h, t, :]; x [B, H, T, D], out [B, T, H D].
//
// All tensors of a call share one dtype (f32 on the cpu; f32, f16 or bf16 on cuda), except that
// split_qkv_paged's blocks may be f16, bf16 or q8_0 under f32 on the cpu
// (runtime/paged_kv_cache.h): the keys and values are rounded or quantized as they are written
// (ops/cpu/element_rows.h).
// Cost: pure copies, each element read and written once; one launch each on a GPU.
#pragma once

#include <cstdint>

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

void split_qkv(Context& ctx, const Tensor& qkv, Tensor& q_out, Tensor& k_cache, Tensor& v_cache,
               const Tensor& positions);

// The sizes split_qkv works with, read from its 4-D outputs: q_out [B, Hq, T, D] and a cache
// [B, Hkv, capacity, D]. A row of qkv holds the Hq query heads, then Hkv key and Hkv value heads.
struct QkvSplit {
  std::int64_t batch, heads, tokens, head_dim, kv_heads, capacity;

  static QkvSplit of(const Tensor& q_out, const Tensor& k_cache) {
    return {q_out.dim(0), q_out.dim(1), q_out.dim(2), q_out.dim(3), k_cache.dim(1), k_cache.dim(2)};
  }
  std::int64_t row_heads() const { return heads + 2 * kv_heads; }
  std::int64_t row_width() const { return row_heads() * head_dim; }
};

void split_qkv_paged(Context& ctx, const Tensor& qkv, Tensor& q_out, Tensor& key_blocks,
                     Tensor& value_blocks, const Tensor& slots);

void merge_heads(Context& ctx, const Tensor& x, Tensor& out);

// The implementations the ops above dispatch to, after their checks.
namespace cpu {
void split_qkv(Context& ctx, const Tensor& qkv, Tensor& q_out, Tensor& k_cache, Tensor& v_cache,
               const Tensor& positions);
void split_qkv_paged(Context& ctx, const Tensor& qkv, Tensor& q_out, Tensor& key_blocks,
                     Tensor& value_blocks, const Tensor& slots);
void merge_heads(Context& ctx, const Tensor& x, Tensor& out);
}  // namespace cpu
namespace cuda {
void split_qkv(Context& ctx, const Tensor& qkv, Tensor& q_out, Tensor& k_cache, Tensor& v_cache,
               const Tensor& positions);
void split_qkv_paged(Context& ctx, const Tensor& qkv, Tensor& q_out, Tensor& key_blocks,
                     Tensor& value_blocks, const Tensor& slots);
void merge_heads(Context& ctx, const Tensor& x, Tensor& out);
}  // namespace cuda

}  // namespace attnscope::ops
