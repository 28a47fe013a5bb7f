// ops::linear: checks, then the cpu GEMV/GEMM or cublasLt (ops/dispatch.h explains the
// pattern).
#include "ops/linear.h"

#include <string>

#include "ops/check.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"

namespace attnscope::ops {

void linear(Context& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out) {
  profiler::Scope scope(ctx, "linear");
  const Device device = common_device("linear", {{x, "x"}, {weight, "weight"}, {out, "out"}});
  if (bias.defined()) common_device("linear", {{x, "x"}, {bias, "bias"}});
  require_float(x, device, "linear", "x");
  require_dtype(weight, x.dtype(), "linear", "weight");
  if (bias.defined()) require_dtype(bias, x.dtype(), "linear", "bias");
  // out in x's dtype, or f32 from narrow inputs (logits); the cpu has f32 only.
  check(out.dtype() == x.dtype() || out.dtype() == DType::F32, "linear",
        "out must be " + std::string(dtype_name(x.dtype())) + " or f32, got " +
            std::string(dtype_name(out.dtype())));
  check(x.rank() == 2 && weight.rank() == 2, "linear", "x and weight must be 2-D");
  const std::int64_t rows = x.dim(0);
  const std::int64_t in = x.dim(1);
  const std::int64_t outputs = weight.dim(0);
  require_shape(weight, {outputs, in}, "linear", "weight");
  require_shape(out, {rows, outputs}, "linear", "out");
  if (bias.defined()) require_shape(bias, {outputs}, "linear", "bias");
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::linear(ctx, x, weight, bias, out);
    return;
  }
  cpu::linear(ctx, x, weight, bias, out);
}

}  // namespace attnscope::ops
