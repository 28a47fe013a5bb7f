// ops::linear and ops::linear_residual: checks, then the cpu GEMV/GEMM (for f32, 16-bit or q8_0
// weights) or cublasLt (ops/dispatch.h explains the pattern).
#include "ops/linear.h"

#include <string>

#include "ops/check.h"
#include "ops/cpu/linear_q8_0.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"

namespace attnscope::ops {

namespace {

// The checks both entry points share; returns the device every tensor is on.
Device check_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& out) {
  const Device device = common_device("linear", {{x, "x"}, {weight, "weight"}, {out, "out"}});
  if (bias.defined()) common_device("linear", {{x, "x"}, {bias, "bias"}});
  require_float(x, device, "linear", "x");
  require_weight(weight, device, x.dtype(), "linear", "weight");
  if (bias.defined()) require_dtype(bias, x.dtype(), "linear", "bias");
  check(x.rank() == 2 && weight.rank() == 2, "linear", "x and weight must be 2-D");
  const std::int64_t rows = x.dim(0);
  const std::int64_t in = x.dim(1);
  const std::int64_t outputs = weight.dim(0);
  require_shape(weight, {outputs, in}, "linear", "weight");
  require_shape(out, {rows, outputs}, "linear", "out");
  if (bias.defined()) require_shape(bias, {outputs}, "linear", "bias");
  return device;
}

void run_linear(Context& ctx, Device device, const Tensor& x, const Tensor& weight,
                const Tensor& bias, Tensor& out, bool accumulate) {
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::linear(ctx, x, weight, bias, out, accumulate);
    return;
  }
  if (weight.dtype() == DType::F32) {
    cpu::linear(ctx, x, weight, bias, out, accumulate);
  } else if (weight.dtype() == DType::Q8_0) {
    cpu::linear_q8_0(ctx, x.data<float>(), static_cast<const BlockQ8_0*>(weight.raw_data()),
                     bias.defined() ? bias.data<float>() : nullptr, out.data<float>(), x.dim(0),
                     x.dim(1), weight.dim(0), accumulate);
  } else {
    cpu::linear_16bit(ctx, x, weight, bias, out, accumulate);
  }
}

// The cost in linear.h: 2 N M K FLOPs; x, the weights and the bias read once, out written (and
// read first when accumulating).
void record_linear_work(const profiler::Scope& scope, const Tensor& x, const Tensor& weight,
                        const Tensor& bias, const Tensor& out, bool accumulate) {
  const double flops = 2.0 * static_cast<double>(x.dim(0) * weight.dim(0) * x.dim(1));
  const std::size_t bias_bytes = bias.defined() ? bias.nbytes() : 0;
  scope.set_work(flops, static_cast<double>(x.nbytes() + weight.nbytes() + bias_bytes +
                                            (accumulate ? 2 : 1) * out.nbytes()));
}

}  // namespace

void linear(Context& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out) {
  profiler::Scope scope(ctx, "linear");
  const Device device = check_linear(x, weight, bias, out);
  // out in x's dtype, or f32 from narrow inputs (logits); cpu activations are f32 only.
  check(out.dtype() == x.dtype() || out.dtype() == DType::F32, "linear", [&] {
    return "out must be " + std::string(dtype_name(x.dtype())) + " or f32, got " +
           std::string(dtype_name(out.dtype()));
  });
  record_linear_work(scope, x, weight, bias, out, false);
  run_linear(ctx, device, x, weight, bias, out, false);
}

void linear_residual(Context& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias,
                     Tensor& residual) {
  profiler::Scope scope(ctx, "linear_residual");
  const Device device = check_linear(x, weight, bias, residual);
  require_dtype(residual, x.dtype(), "linear_residual", "residual");
  record_linear_work(scope, x, weight, bias, residual, true);
  run_linear(ctx, device, x, weight, bias, residual, true);
}

}  // namespace attnscope::ops
