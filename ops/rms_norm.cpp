// ops::rms_norm: checks, then the cpu loop or the cuda kernel (ops/dispatch.h explains the
// pattern).
#include "ops/rms_norm.h"

#include "ops/check.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"

namespace attnscope::ops {

void rms_norm(Context& ctx, const Tensor& x, const Tensor& weight, float eps, Tensor& out) {
  profiler::Scope scope(ctx, "rms_norm");
  const Device device = common_device("rms_norm", {{x, "x"}, {weight, "weight"}, {out, "out"}});
  require_float(x, device, "rms_norm", "x");
  require_dtype(weight, x.dtype(), "rms_norm", "weight");
  require_dtype(out, x.dtype(), "rms_norm", "out");
  check(x.rank() >= 1, "rms_norm", "x must have at least one dimension");
  require_shape(weight, {x.dim(-1)}, "rms_norm", "weight");
  require_shape(out, x.shape(), "rms_norm", "out");
  check(eps >= 0.0f, "rms_norm", "eps must not be negative");
  scope.set_work(4.0 * static_cast<double>(x.numel()),  // the cost in rms_norm.h
                 static_cast<double>(x.nbytes() + weight.nbytes() + out.nbytes()));
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::rms_norm(ctx, x, weight, eps, out);
    return;
  }
  cpu::rms_norm(ctx, x, weight, eps, out);
}

}  // namespace attnscope::ops
