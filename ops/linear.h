// Linear layer: out = x W^T + b.
//
// Shapes: x [N, K], weight [M, K] (one row per output feature, as torch.nn.Linear stores it;
// GPT-2's Conv1D weights, stored [K, M], are transposed once at load time), bias [M] or an
// undefined Tensor, out [N, M].
// Cost: 2 N M K FLOPs; reads the M K weights once. Two regimes:
//  - N small (decode): a matrix-vector product per row, bound by reading the weights from
//    memory; output features are split across threads, each streaming its contiguous rows of W.
//  - N large (prefill): Eigen's blocked GEMM, bound by FLOPs, parallelised by Eigen over OpenMP.
#pragma once

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

void linear(Context& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out);

}  // namespace attnscope::ops
