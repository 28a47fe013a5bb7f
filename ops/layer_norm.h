// Layer normalisation over the last dimension.
//
//   mean = sum(x) / C,  var = sum((x - mean)^2) / C
//   out  = (x - mean) / sqrt(var + eps) * gamma + beta
//
// Shapes: x and out [N, C] (out may be x), gamma and beta [C]. Cost: three passes over each row
// (mean, variance, output), reads N C + 2 C floats and writes N C. The variance is taken around
// the mean, not as E[x^2] - mean^2, which cancels badly, and both sums are accumulated in double:
// residual streams of real models carry large means that a float sum would blur.
#pragma once

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

void layer_norm(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                Tensor& out);

}  // namespace attnscope::ops
