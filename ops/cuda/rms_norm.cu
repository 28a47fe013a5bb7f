// ops::rms_norm on a GPU, one block (256 threads) per row, each normalising its row with
// rms_norm_row (ops/cuda/rms_norm_row.cuh: the math, its rounding, why out may alias x). No limit
// on C (nothing is staged in shared memory).
// Cost: N blocks, one launch; reads 2 N C elements (the second time from cache) + C (the
// weight, from L2 after the first rows), writes N C; ~4 FLOPs per element. (In the model an
// RMSNorm follows each residual add: fusing the add in would save one launch and one round
// trip of the residual stream.)
#include "ops/cuda/rms_norm_row.cuh"
#include "ops/rms_norm.h"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void rms_norm_kernel(const T* x, const T* weight, float eps, T* out,
                                std::int64_t width) {
  __shared__ float scratch[32];
  const std::int64_t offset = static_cast<std::int64_t>(blockIdx.x) * width;
  rms_norm_row(x + offset, weight, eps, out + offset, width, scratch);
}

}  // namespace

void rms_norm(Context& ctx, const Tensor& x, const Tensor& weight, float eps, Tensor& out) {
  const std::int64_t width = x.dim(-1);
  const std::int64_t rows = width == 0 ? 0 : x.numel() / width;
  if (rows == 0) return;
  with_storage_type(x.dtype(), "rms_norm", [&](auto tag) {
    using T = decltype(tag);
    rms_norm_kernel<T><<<static_cast<unsigned int>(rows), kThreads, 0, gpu::stream_of(ctx)>>>(
        static_cast<const T*>(x.raw_data()), static_cast<const T*>(weight.raw_data()), eps,
        static_cast<T*>(out.raw_data()), width);
    gpu::check_launch("rms_norm_kernel");
  });
}

}  // namespace attnscope::ops::cuda
