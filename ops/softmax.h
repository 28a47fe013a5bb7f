// Softmax over the last dimension, numerically stable:
//
//   out[i] = exp(x[i] - max(x)) / sum_j exp(x[j] - max(x))
//
// Subtracting the row maximum keeps exp() from overflowing; entries equal to -inf (masked) get
// probability 0. A row whose entries are all -inf has no defined softmax: softmax() leaves NaN
// there, as eager frameworks do; safe_softmax() gives zeros.
// Shapes: x and out identical, rows = numel / last dim (out may be x). Cost: three passes per
// row (max, exp and sum, scale): reads 2 n and writes 2 n floats.
#pragma once

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

void softmax(Context& ctx, const Tensor& x, Tensor& out);

// The same on one row of `n` floats, for callers that work row by row (attention, sampling).
void softmax_row(const float* x, float* out, std::int64_t n);

// NaN-safe softmax, as generic library paths do it: a row whose entries are all -inf (fully
// masked) gives all zeros instead of NaN. Costs one more read of each row, to detect that.
void safe_softmax(Context& ctx, const Tensor& x, Tensor& out);

}  // namespace attnscope::ops
