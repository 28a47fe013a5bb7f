// Layer normalisation over the last dimension.
//
//   mean = sum(x) / C,  var = sum((x - mean)^2) / C
//   out  = (x - mean) / sqrt(var + eps) * gamma + beta
//
// Shapes: x and out [N, C] (out may be x), gamma and beta [C]; all four share one dtype (f32 on
// the cpu; f32, f16 or bf16 on cuda). Cost: reads N C + 2 C elements and writes N C; ~8 FLOPs per
// element. The variance is taken around the mean, not as E[x^2] - mean^2, which cancels badly:
// residual streams of real models carry large means.
//  - cpu: three passes over each row, both sums accumulated in double.
//  - cuda: one block per row (one launch); the row is read once into shared memory as f32, then
//    mean and variance are two block reductions over it in f32. C <= 8192 (32 KiB of shared
//    memory per block).
#pragma once

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

void layer_norm(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                Tensor& out);

// The implementations ops::layer_norm dispatches to, after its checks.
namespace cpu {
void layer_norm(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                Tensor& out);
}
namespace cuda {
void layer_norm(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                Tensor& out);
}

}  // namespace attnscope::ops
