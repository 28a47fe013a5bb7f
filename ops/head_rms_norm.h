// RMSNorm of each query and key head (Qwen3's q_norm and k_norm), in place in the fused
// projection qkv [N, (Hq + 2 Hkv) D] before RoPE:
//
//   for each row n, each head h < Hq + Hkv (its Hq query heads, then its Hkv key heads):
//     x = qkv[n, h D : (h + 1) D]
//     x <- rms_norm(x) with gain q_weight [D] (query heads) or k_weight [D] (key heads)
//
// where rms_norm is ops/rms_norm.h's (same rounding: the normalised value rounded to the storage
// dtype before the gain multiplies it, as transformers' Qwen3RMSNorm). The value heads after them
// are left alone. Normalising each head keeps the attention logits q.k bounded by the gains
// whatever the projections' scale.
//
// Dtypes: qkv, q_weight and k_weight share one dtype (f32 on the cpu; f32, f16 or bf16 on cuda).
// Cost: reads and writes (Hq + Hkv) N D elements, ~4 FLOPs each, bandwidth-bound; one launch on a
// GPU (one block per head of each row).
#pragma once

#include <cstdint>

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

void head_rms_norm_(Context& ctx, Tensor& qkv, const Tensor& q_weight, const Tensor& k_weight,
                    std::int64_t q_heads, std::int64_t kv_heads, float eps);

// The implementations ops::head_rms_norm_ dispatches to, after its checks.
namespace cpu {
void head_rms_norm_(Context& ctx, Tensor& qkv, const Tensor& q_weight, const Tensor& k_weight,
                    std::int64_t q_heads, std::int64_t kv_heads, float eps);
}
namespace cuda {
void head_rms_norm_(Context& ctx, Tensor& qkv, const Tensor& q_weight, const Tensor& k_weight,
                    std::int64_t q_heads, std::int64_t kv_heads, float eps);
}

}  // namespace attnscope::ops
