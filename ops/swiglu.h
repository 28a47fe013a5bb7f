// The gated MLP activation of Llama-family models (SwiGLU), elementwise over pairs:
//
//   out[r, j] = round_to_dtype(silu(gate[r, j])) * up[r, j],   silu(g) = g sigmoid(g)
//
// Input layout: one tensor gate_up [N, 2 F] whose first F columns are the gate projection and
// last F the up projection. transformers keeps gate_proj and up_proj as two [F, C] weights;
// stacking them at load into one [2 F, C] weight makes the MLP's first step one GEMM producing
// gate_up (one launch, x read once) and this op its only consumer. out is [N, F]; every leading
// dimension of gate_up is kept, only the last one halves.
//
// transformers computes act_fn(gate) in the model dtype, then multiplies by up in that dtype:
// the silu is rounded to the storage dtype before the product here too (nothing in f32).
// silu is ops/activation_math.h's (the same formula as ops::activation's Silu); below a gate of
// about -88.7, e^-g overflows to infinity and the sigmoid to 0, so the output is -0 where the
// true value, g e^g, is smaller than 3e-37 in magnitude (torch's f32 silu does the same), never
// NaN.
//
// Dtypes: gate_up and out share one (f32 on the cpu; f32, f16 or bf16 on cuda, computed in
// f32). Cost: reads 2 N F elements and writes N F; one expf and ~5 FLOPs per output, one
// launch: bandwidth-bound.
#pragma once

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

void swiglu(Context& ctx, const Tensor& gate_up, Tensor& out);

// The implementations ops::swiglu dispatches to, after its checks.
namespace cpu {
void swiglu(Context& ctx, const Tensor& gate_up, Tensor& out);
}
namespace cuda {
void swiglu(Context& ctx, const Tensor& gate_up, Tensor& out);
}

}  // namespace attnscope::ops
