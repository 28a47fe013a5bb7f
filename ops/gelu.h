// GELU, in the tanh form GPT-2 was trained with ("gelu_new"):
//
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
//
// Elementwise; out may be x; x and out share one dtype (f32 on the cpu; f32, f16 or bf16 on
// cuda, computed in f32). Cost: one read and one write per element, one tanh each, one launch.
#pragma once

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

void gelu(Context& ctx, const Tensor& x, Tensor& out);

// The implementations ops::gelu dispatches to, after its checks.
namespace cpu {
void gelu(Context& ctx, const Tensor& x, Tensor& out);
}
namespace cuda {
void gelu(Context& ctx, const Tensor& x, Tensor& out);
}

}  // namespace attnscope::ops
