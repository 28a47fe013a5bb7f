// The MLP's activation, elementwise, one of transformers' ACT2FN functions (runtime/activation.h
// maps config.json's names to them):
//
//   GeluTanh     0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))   GPT-2's own ("gelu_new")
//   GeluExact    0.5 x (1 + erf(x / sqrt(2)))                        = x Phi(x)
//   GeluClipped  min(max(GeluExact(x), -10), 10)                     ("gelu_10")
//   QuickGelu    x sigmoid(1.702 x)
//   Laplace      0.5 (1 + erf((x - mu) / (sigma sqrt(2))))           mu 0.707107, sigma 0.282095
//   Relu         max(x, 0)
//   Relu2        max(x, 0)^2
//   Relu6        min(max(x, 0), 6)
//   LeakyRelu    x if x >= 0, else 0.01 x
//   HardSwish    x min(max(x + 3, 0), 6) / 6
//   Silu         x sigmoid(x)                                        ("silu", "swish")
//   Mish         x tanh(softplus(x))                                 softplus(x) = log(1 + e^x)
//   SqrtSoftplus sqrt(softplus(x))                                   (= x beyond x = 20, as torch)
//   Sigmoid      1 / (1 + e^-x)
//   Tanh         tanh(x)
//   Identity     x                                                   ("linear")
//
// The tanh form differs from the exact GELU by up to ~3e-4 near |x| = 2: small, but visible in
// float32. out may be x; x and out share one dtype (f32 on the cpu; f32, f16 or bf16 on cuda,
// computed in f32). Cost: one read and one write per element, at most one transcendental and
// ~8 FLOPs each (GELU's tanh form), one launch: bandwidth-bound.
#pragma once

#include "runtime/activation.h"
#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

void activation(Context& ctx, Activation function, const Tensor& x, Tensor& out);

// The implementations ops::activation dispatches to, after its checks.
namespace cpu {
void activation(Context& ctx, Activation function, const Tensor& x, Tensor& out);
}
namespace cuda {
void activation(Context& ctx, Activation function, const Tensor& x, Tensor& out);
}

}  // namespace attnscope::ops
