// Softmax over the last dimension, numerically stable:
//
//   out[i] = exp(x[i] - max(x)) / sum_j exp(x[j] - max(x))
//
// Subtracting the row maximum keeps exp() from overflowing; entries equal to -inf (masked) get
// probability 0. A row whose entries are all -inf has no defined softmax: softmax() leaves NaN
// there, as eager frameworks do; safe_softmax() gives zeros.
// Shapes: x and out identical, rows = numel / last dim (out may be x); one dtype (f32 on the
// cpu; f32, f16 or bf16 on cuda, computed in f32). Cost: three passes per row (max, exp and
// sum, scale): reads 2 n and writes n elements (the cpu also writes the exps once), ~4 FLOPs
// and one exp per element; on a GPU one block per row, one launch.
#pragma once

#include <cstdint>

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

void softmax(Context& ctx, const Tensor& x, Tensor& out);

// The same on one row of `n` floats in host memory, for callers that work row by row.
void softmax_row(const float* x, float* out, std::int64_t n);

// NaN-safe softmax, as generic library paths do it: a row whose entries are all -inf (fully
// masked) gives all zeros instead of NaN. Costs one more read of each row on the cpu, to
// detect that (on a GPU the check rides along with the max pass).
void safe_softmax(Context& ctx, const Tensor& x, Tensor& out);

// The implementations the ops above dispatch to, after their checks.
namespace cpu {
void softmax(Context& ctx, const Tensor& x, Tensor& out);
void safe_softmax(Context& ctx, const Tensor& x, Tensor& out);
}  // namespace cpu
namespace cuda {
void softmax(Context& ctx, const Tensor& x, Tensor& out);
void safe_softmax(Context& ctx, const Tensor& x, Tensor& out);
}  // namespace cuda

}  // namespace attnscope::ops
