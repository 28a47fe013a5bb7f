// ops::gelu: checks, then the cpu loop or the cuda kernel (ops/dispatch.h explains the pattern).
#include "ops/gelu.h"

#include "ops/check.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"

namespace attnscope::ops {

void gelu(Context& ctx, const Tensor& x, Tensor& out) {
  profiler::Scope scope(ctx, "gelu");
  const Device device = common_device("gelu", {{x, "x"}, {out, "out"}});
  require_float(x, device, "gelu", "x");
  require_dtype(out, x.dtype(), "gelu", "out");
  require_shape(out, x.shape(), "gelu", "out");
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::gelu(ctx, x, out);
    return;
  }
  cpu::gelu(ctx, x, out);
}

}  // namespace attnscope::ops
