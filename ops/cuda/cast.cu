// ops::cast on a GPU: out[i] = x[i] converted from one of f32/f16/bf16 to another.
//
// Every element goes through f32: widening to f32 is exact, and the one rounding (to nearest,
// ties to even) happens on the store, with the cpu's results (runtime/dtype.h). One thread per
// element, 256 per block, one launch. Cost: one read and one write per element.
#include "ops/cast.h"
#include "ops/cuda/device_math.cuh"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::cuda {

namespace {

constexpr int kThreads = 256;

template <typename From, typename To>
__global__ void cast_kernel(const From* x, To* out, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = from_f32<To>(load_f32(x, i));
}

}  // namespace

void cast(Context& ctx, const Tensor& x, Tensor& out) {
  const std::int64_t n = x.numel();
  if (n == 0) return;
  with_storage_type(x.dtype(), "cast", [&](auto from_tag) {
    with_storage_type(out.dtype(), "cast", [&](auto to_tag) {
      using From = decltype(from_tag);
      using To = decltype(to_tag);
      cast_kernel<From, To><<<gpu::blocks_for(n, kThreads), kThreads, 0, gpu::stream_of(ctx)>>>(
          static_cast<const From*>(x.raw_data()), static_cast<To*>(out.raw_data()), n);
      gpu::check_launch("cast_kernel");
    });
  });
}

}  // namespace attnscope::ops::cuda
