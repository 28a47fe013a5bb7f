// ops::add: checks, then the cpu loop or the cuda kernel (ops/dispatch.h explains the pattern).
#include "ops/add.h"

#include "ops/check.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"

namespace attnscope::ops {

void add(Context& ctx, const Tensor& a, const Tensor& b, Tensor& out) {
  profiler::Scope scope(ctx, "add");
  const Device device = common_device("add", {{a, "a"}, {b, "b"}, {out, "out"}});
  require_float(a, device, "add", "a");
  require_dtype(b, a.dtype(), "add", "b");
  require_dtype(out, a.dtype(), "add", "out");
  require_shape(b, a.shape(), "add", "b");
  require_shape(out, a.shape(), "add", "out");
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::add(ctx, a, b, out);
    return;
  }
  cpu::add(ctx, a, b, out);
}

}  // namespace attnscope::ops
