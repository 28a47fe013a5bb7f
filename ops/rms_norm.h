// Root-mean-square normalisation over the last dimension (Llama's RMSNorm, transformers'
// LlamaRMSNorm):
//
//   rms = sqrt(sum(x^2) / C + eps)
//   out = round_to_dtype(x / rms) * weight
//
// Unlike layer_norm there is no mean subtracted and no bias. transformers widens x to f32,
// normalises, rounds the normalised value back to the input dtype and only then multiplies by
// the weight (in the input dtype): the kernels round at that same point, so in f16 / bf16 the
// result carries two roundings, as transformers' does. In f32 the rounding changes nothing.
//
// Shapes: x and out [N, C] (out may be x), weight [C]; all three share one dtype (f32 on the
// cpu; f32, f16 or bf16 on cuda). Cost: reads N C + C elements and writes N C; ~4 FLOPs per
// element, bandwidth-bound.
//  - cpu: two passes over each row, the sum of squares accumulated in double (no overflow for
//    any finite f32 row).
//  - cuda: one block per row (one launch); a strided f32 sum of squares and one block
//    reduction, then a second pass over the row (from L1/L2) writes out. The sum of squares
//    is f32, as transformers': rows whose mean square exceeds f32's range (|x| around 1e19)
//    overflow to an infinite rms and a zero output, as they do there.
#pragma once

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

void rms_norm(Context& ctx, const Tensor& x, const Tensor& weight, float eps, Tensor& out);

// The implementations ops::rms_norm dispatches to, after its checks.
namespace cpu {
void rms_norm(Context& ctx, const Tensor& x, const Tensor& weight, float eps, Tensor& out);
}
namespace cuda {
void rms_norm(Context& ctx, const Tensor& x, const Tensor& weight, float eps, Tensor& out);
}

}  // namespace attnscope::ops
