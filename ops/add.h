// Elementwise addition, used for the residual connections: out = a + b.
//
// Shapes: a, b and out identical (out may be a or b); one dtype for all three (f32 on the cpu;
// f32, f16 or bf16 on cuda, added in f32). Cost: reads 2 n and writes n elements, one launch.
#pragma once

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

void add(Context& ctx, const Tensor& a, const Tensor& b, Tensor& out);

// The implementations ops::add dispatches to, after its checks (ops/cpu/add.cpp,
// ops/cuda/add.cu).
namespace cpu {
void add(Context& ctx, const Tensor& a, const Tensor& b, Tensor& out);
}
namespace cuda {
void add(Context& ctx, const Tensor& a, const Tensor& b, Tensor& out);
}

}  // namespace attnscope::ops
