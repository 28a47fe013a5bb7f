// Elementwise addition, used for the residual connections: out = a + b.
//
// Shapes: a, b and out identical (out may be a or b). Cost: reads 2 n, writes n floats.
#pragma once

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

void add(Context& ctx, const Tensor& a, const Tensor& b, Tensor& out);

}  // namespace attnscope::ops
