// ops::layer_norm: checks, then the cpu loop or the cuda kernel (ops/dispatch.h explains the
// pattern).
#include "ops/layer_norm.h"

#include "ops/check.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"

namespace attnscope::ops {

void layer_norm(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                Tensor& out) {
  profiler::Scope scope(ctx, "layer_norm");
  const Device device =
      common_device("layer_norm", {{x, "x"}, {gamma, "gamma"}, {beta, "beta"}, {out, "out"}});
  require_float(x, device, "layer_norm", "x");
  require_dtype(gamma, x.dtype(), "layer_norm", "gamma");
  require_dtype(beta, x.dtype(), "layer_norm", "beta");
  require_dtype(out, x.dtype(), "layer_norm", "out");
  const std::int64_t width = x.dim(-1);
  require_shape(gamma, {width}, "layer_norm", "gamma");
  require_shape(beta, {width}, "layer_norm", "beta");
  require_shape(out, x.shape(), "layer_norm", "out");
  scope.set_work(8.0 * static_cast<double>(x.numel()),  // the cost in layer_norm.h
                 static_cast<double>(x.nbytes() + gamma.nbytes() + beta.nbytes() + out.nbytes()));
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::layer_norm(ctx, x, gamma, beta, eps, out);
    return;
  }
  cpu::layer_norm(ctx, x, gamma, beta, eps, out);
}

}  // namespace attnscope::ops
