// ops::softmax and ops::safe_softmax: checks, then the cpu loops or the cuda kernel
// (ops/dispatch.h explains the pattern).
#include "ops/softmax.h"

#include "ops/check.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"

namespace attnscope::ops {

namespace {

Device check_softmax(const char* op, const Tensor& x, const Tensor& out) {
  const Device device = common_device(op, {{x, "x"}, {out, "out"}});
  require_float(x, device, op, "x");
  require_dtype(out, x.dtype(), op, "out");
  require_shape(out, x.shape(), op, "out");
  return device;
}

// The cost in softmax.h.
void record_softmax_work(const profiler::Scope& scope, const Tensor& x, const Tensor& out) {
  scope.set_work(4.0 * static_cast<double>(x.numel()),
                 static_cast<double>(2 * x.nbytes() + out.nbytes()));
}

}  // namespace

void softmax(Context& ctx, const Tensor& x, Tensor& out) {
  profiler::Scope scope(ctx, "softmax");
  const Device device = check_softmax("softmax", x, out);
  record_softmax_work(scope, x, out);
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::softmax(ctx, x, out);
    return;
  }
  cpu::softmax(ctx, x, out);
}

void safe_softmax(Context& ctx, const Tensor& x, Tensor& out) {
  profiler::Scope scope(ctx, "safe_softmax");
  const Device device = check_softmax("safe_softmax", x, out);
  record_softmax_work(scope, x, out);
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::safe_softmax(ctx, x, out);
    return;
  }
  cpu::safe_softmax(ctx, x, out);
}

}  // namespace attnscope::ops
