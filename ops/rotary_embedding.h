// Rotary position embedding (RoPE) in transformers' non-interleaved "rotate_half" convention
// (Llama, Qwen2, SmolLM): each head vector x of width D is split into halves, and pair
// (x_i, x_{i + D/2}), i in [0, D/2), is rotated by the angle pos * inv_freq_i:
//
//   x_i       <- x_i cos(a_i) - x_{i+D/2} sin(a_i)        a_i = pos * inv_freq_i
//   x_{i+D/2} <- x_{i+D/2} cos(a_i) + x_i sin(a_i)
//
// rotary_embedding_ rotates, in place, the first `rotated_heads` heads of every row of the fused
// projection qkv [N, W] (its Hq query heads, then its Hkv key heads; the value heads after them
// are left alone), row n at its own position positions[n]. It runs before ops::split_qkv hands
// the heads out, so every key is rotated exactly once, before it enters any cache, and a row's
// position is whatever its sequence says: rows of one sequence at start + t (a contiguous
// batch), or rows of many sequences of different lengths (the engine's ragged batches).
// Cost: reads and writes (Hq + Hkv) N D elements, plus N D table floats; ~6 FLOPs per pair;
// one launch on a GPU. (Fusing it into the split would save a read and a write of the Q and K
// rows; in decode, one row per sequence, it is small beside attention's read of the cache.)
//
// Where the angles are rounded, matching transformers' LlamaRotaryEmbedding:
//  - rotary_inverse_frequencies computes inv_freq in f32 the way transformers does:
//    exponent 2i/D in f32, theta^exponent rounded to f32 (computed in double here; torch's
//    f32 pow may differ by an ulp), inv_freq = 1 / that in f32, then the llama3 rescaling with
//    f32 tensor arithmetic in transformers' order (_compute_llama3_parameters).
//  - rotary_table forms each angle as the f32 product float(pos) * inv_freq_i (transformers'
//    f32 matmul of inv_freq by the positions, K = 1: one rounding), then takes cos and sin of
//    that f32 angle in double and rounds them to f32 (torch's f32 cos / sin: within an ulp).
//    So the angle carries transformers' own f32 error (|a| 2^-24, 0.008 rad at a = 131072)
//    and the table adds at most half an f32 ulp. attention_scaling is 1 for the default and
//    llama3 types, so the table is not scaled.
//  - The table stays f32 for every model dtype; the rotation is computed in f32 and rounded
//    once to the storage dtype. transformers casts cos and sin to the model dtype and rounds
//    each product and the sum there: in bf16 the two results differ by at most about
//    4 * 2^-8 (|x_i| + |x_{i+D/2}|) (this op's is the more accurate); in f32 by a few ulps.
//
// Dtypes: qkv is f32 on the cpu; f32, f16 or bf16 on cuda. The table is f32 on the same device,
// [P, D/2] for cos and for sin; positions are i32 [N] on the same device, each in [0, P) (checked
// on the cpu; on a GPU, where reading them back would cost a synchronisation, a row at a position
// outside the table is left unrotated: the model checks positions before it uploads them).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

// config.json's rope_scaling of rope_type "llama3" (Llama 3.1 / 3.2): inverse frequencies with
// wavelengths 2 pi / inv_freq above original_max_position_embeddings / low_freq_factor are
// divided by factor, those below original_max_position_embeddings / high_freq_factor kept,
// and those between interpolated smoothly.
struct Llama3RopeScaling {
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  std::int64_t original_max_position_embeddings = 8192;
};

// inv_freq_i = theta^(-2i / D) for i in [0, D/2), rescaled by `scaling` when given, in f32 as
// transformers computes it (see above). Throws Error on an odd or non-positive head_dim, a
// non-positive theta, or llama3 values that make the interpolation meaningless.
std::vector<float> rotary_inverse_frequencies(std::int64_t head_dim, double theta,
                                              const std::optional<Llama3RopeScaling>& scaling);

// cos and sin of pos * inv_freq_i, each [positions, D/2] f32, pos in [0, positions).
struct RotaryTable {
  Tensor cos;
  Tensor sin;
};
RotaryTable rotary_table(const std::vector<float>& inverse_frequencies, std::int64_t positions,
                         Allocator& allocator);

void rotary_embedding_(Context& ctx, Tensor& qkv, std::int64_t rotated_heads,
                       const Tensor& positions, const RotaryTable& table);

// The implementations ops::rotary_embedding_ dispatches to, after its checks.
namespace cpu {
void rotary_embedding_(Context& ctx, Tensor& qkv, std::int64_t rotated_heads,
                       const Tensor& positions, const RotaryTable& table);
}
namespace cuda {
void rotary_embedding_(Context& ctx, Tensor& qkv, std::int64_t rotated_heads,
                       const Tensor& positions, const RotaryTable& table);
}

}  // namespace attnscope::ops
