// ops::activation: checks, then the cpu loop or the cuda kernel (ops/dispatch.h explains the
// pattern).
#include "ops/activation.h"

#include "ops/check.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"

namespace attnscope::ops {

void activation(Context& ctx, Activation function, const Tensor& x, Tensor& out) {
  profiler::Scope scope(ctx, "activation");
  const Device device = common_device("activation", {{x, "x"}, {out, "out"}});
  require_float(x, device, "activation", "x");
  require_dtype(out, x.dtype(), "activation", "out");
  require_shape(out, x.shape(), "activation", "out");
  scope.set_work(8.0 * static_cast<double>(x.numel()),  // the cost in activation.h
                 static_cast<double>(x.nbytes() + out.nbytes()));
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::activation(ctx, function, x, out);
    return;
  }
  cpu::activation(ctx, function, x, out);
}

}  // namespace attnscope::ops
