// Converting a tensor between the floating-point dtypes: out = x, rounded to out's dtype.
//
// Widening (bf16 or f16 to f32) is exact; narrowing rounds to nearest, ties to even; NaN stays
// NaN; f32 values beyond f16's range become infinity (runtime/dtype.h). The model uses it to
// convert weights once at load and to widen logits.
// Shapes: x and out identical, on one device (either); any two of f32, f16, bf16; x and out
// must not overlap unless their dtypes are equal. Cost: one read and one write per element, one
// launch on a GPU.
#pragma once

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

void cast(Context& ctx, const Tensor& x, Tensor& out);

// The implementations ops::cast dispatches to, after its checks.
namespace cpu {
void cast(Context& ctx, const Tensor& x, Tensor& out);
}
namespace cuda {
void cast(Context& ctx, const Tensor& x, Tensor& out);
}

}  // namespace attnscope::ops
