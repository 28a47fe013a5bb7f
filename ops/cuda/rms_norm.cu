// ops::rms_norm on a GPU, one block per row:
//
//   rms = sqrt(sum(x^2) / C + eps)
//   out = round_to_dtype(x / rms) * weight
//
// Each block (256 threads) makes a strided f32 sum of squares over its row and one block
// reduction (warp shuffles, then across warps), then a second strided pass reads the row again
// (now from L1/L2) and writes the normalised, weighted row. The normalised value is rounded to
// the storage dtype before the weight multiplies it, as transformers' LlamaRMSNorm does. Each
// thread rewrites only elements it read itself after the reduction's barrier, so out may alias
// x. No limit on C (nothing is staged in shared memory).
// Cost: N blocks, one launch; reads 2 N C elements (the second time from cache) + C (the
// weight, from L2 after the first rows), writes N C; ~4 FLOPs per element. (In the model an
// RMSNorm follows each residual add: fusing the add in would save one launch and one round
// trip of the residual stream.)
#include "ops/cuda/device_math.cuh"
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

  float squares = 0.0f;
  for (std::int64_t c = threadIdx.x; c < width; c += blockDim.x) {
    const float value = load_f32(x, offset + c);
    squares += value * value;
  }
  const float mean_square = block_sum(squares, scratch) / static_cast<float>(width);
  const float inv_rms = 1.0f / sqrtf(mean_square + eps);

  for (std::int64_t c = threadIdx.x; c < width; c += blockDim.x) {
    const T normalised = from_f32<T>(load_f32(x, offset + c) * inv_rms);
    out[offset + c] = from_f32<T>(load_f32(&normalised, 0) * load_f32(weight, c));
  }
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
