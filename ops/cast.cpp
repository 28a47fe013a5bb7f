// ops::cast: checks, then the cpu conversion or the cuda kernel (ops/dispatch.h explains the
// pattern).
#include "ops/cast.h"

#include "ops/check.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"

namespace attnscope::ops {

void cast(Context& ctx, const Tensor& x, Tensor& out) {
  profiler::Scope scope(ctx, "cast");
  const Device device = common_device("cast", {{x, "x"}, {out, "out"}});
  // Every float dtype is allowed on both devices: converting between them is the op's job. The
  // cpu also quantizes f32 to q8_0 and back (runtime/q8_0.h).
  check(x.dtype() != DType::I32 && out.dtype() != DType::I32, "cast",
        "converts between f32, f16 and bf16, not i32");
  require_shape(out, x.shape(), "cast", "out");
  scope.set_work(0, static_cast<double>(x.nbytes() + out.nbytes()));  // the cost in cast.h
  if (device == Device::CUDA) {
    check(is_float_dtype(x.dtype()) && is_float_dtype(out.dtype()), "cast", [&] {
      return "cannot convert " + std::string(dtype_name(x.dtype())) + " to " +
             std::string(dtype_name(out.dtype())) + " on cuda (q8_0 runs on the cpu only)";
    });
    if constexpr (kCudaBuild) cuda::cast(ctx, x, out);
    return;
  }
  cpu::cast(ctx, x, out);
}

}  // namespace attnscope::ops
