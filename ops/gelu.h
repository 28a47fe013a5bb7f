// GELU, in the tanh form GPT-2 was trained with ("gelu_new"):
//
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
//
// Elementwise; out may be x. Cost: one read and one write per element, one tanh each.
#pragma once

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

void gelu(Context& ctx, const Tensor& x, Tensor& out);

}  // namespace attnscope::ops
