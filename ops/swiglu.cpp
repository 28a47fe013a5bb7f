// ops::swiglu: checks, then the cpu loop or the cuda kernel (ops/dispatch.h explains the
// pattern).
#include "ops/swiglu.h"

#include <string>

#include "ops/check.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"

namespace attnscope::ops {

void swiglu(Context& ctx, const Tensor& gate_up, Tensor& out) {
  profiler::Scope scope(ctx, "swiglu");
  const Device device = common_device("swiglu", {{gate_up, "gate_up"}, {out, "out"}});
  require_float(gate_up, device, "swiglu", "gate_up");
  require_dtype(out, gate_up.dtype(), "swiglu", "out");
  check(gate_up.rank() >= 1, "swiglu", "gate_up must have at least one dimension");
  const std::int64_t width = gate_up.dim(-1);
  check(width % 2 == 0, "swiglu", [&] {
    return "gate_up's last dimension holds gate and up side by side and must be even, got " +
           std::to_string(width);
  });
  Shape out_shape = gate_up.shape();
  out_shape.back() = width / 2;
  require_shape(out, out_shape, "swiglu", "out");
  scope.set_work(5.0 * static_cast<double>(out.numel()),  // the cost in swiglu.h
                 static_cast<double>(gate_up.nbytes() + out.nbytes()));
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::swiglu(ctx, gate_up, out);
    return;
  }
  cpu::swiglu(ctx, gate_up, out);
}

}  // namespace attnscope::ops
