// Linear layer: out = x W^T + b; and linear_residual: residual += x W^T + b, the residual
// connection of a transformer block done by the projection itself (h = h + W_o a + b_o).
//
// Shapes: x [N, K], weight [M, K] (one row per output feature, as torch.nn.Linear stores it;
// GPT-2's Conv1D weights, stored [K, M], are transposed once at load time), bias [M] or an
// undefined Tensor, out [N, M]. On cuda x, weight and bias share one dtype; out has that dtype or
// f32 (the LM head writes f32 logits from bf16 activations). On the cpu x, bias and out are f32
// and the weight is f32, bf16, f16 or q8_0 (ops/dispatch.h require_weight): 16-bit weights are
// widened to f32 as they are read (ops/cpu/linear_16bit.cpp), so decode reads half the bytes;
// q8_0 weights (34 bytes per 32) go through integer dot products (ops/cpu/linear_q8_0.h).
// Cost: 2 N M K FLOPs; reads the M K weights once.
//  - cpu, N < 16 (decode, batched or not): each thread streams its contiguous block of weight
//    rows once, applying each row to all N inputs while it is in L1: bound by reading the
//    weights.
//  - cpu, N >= 16 (prefill): Eigen's blocked GEMM per thread on a block of output columns,
//    bound by FLOPs. (Eigen's own threading is compiled out: all parallelism is explicit.)
//    16-bit weights are widened panel by panel into an f32 buffer for it.
//  - cuda: one cublasLt matmul with the bias added in its epilogue (ops/cuda/linear.cu); f32
//    stays true f32, f16/bf16 run on tensor cores accumulating in f32.
// linear_residual costs the same plus one read of the residual (the GEMM's C operand, beta = 1),
// and saves what a separate add would cost: a launch on the GPU, and a pass that reads two rows
// and writes one.
#pragma once

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

void linear(Context& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out);
// residual [N, M] (x's dtype) += x W^T + b.
void linear_residual(Context& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias,
                     Tensor& residual);

// The implementations both dispatch to, after their checks: out = x W^T + b, or with
// `accumulate` out += x W^T + b.
namespace cpu {
void linear(Context& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out,
            bool accumulate);  // f32 weights (ops/cpu/linear.cpp)
void linear_16bit(Context& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias,
                  Tensor& out, bool accumulate);  // bf16 or f16 weights (ops/cpu/linear_16bit.cpp)
}  // namespace cpu
namespace cuda {
void linear(Context& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out,
            bool accumulate);
}

}  // namespace attnscope::ops
