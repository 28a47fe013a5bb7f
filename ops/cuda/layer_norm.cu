// ops::layer_norm on a GPU, one block per row:
//
//   mean = sum(x) / C,  var = sum((x - mean)^2) / C
//   out  = (x - mean) / sqrt(var + eps) * gamma + beta
//
// Each block (256 threads) reads its row once from global memory into shared memory as f32,
// then makes two block reductions over it: the mean, then the variance around the mean (two
// passes: E[x^2] - mean^2 would cancel badly on the large means of residual streams), and writes
// the normalised row. Sums are f32 in a tree (each thread a strided partial sum, then warp
// shuffles). The mean is summed as x[0] + sum(x - x[0]) / C: the terms are then of the size of
// the row's spread, not of its mean, so a large mean costs no precision (the cpu sums in f64).
// Each thread only touches shared elements it wrote itself, so out may alias x.
// Limits: C <= 8192 (the row in 32 KiB of shared memory, under the 48 KiB a block gets without
// opting in).
// Cost: N blocks, one launch; reads N C + 2 C elements (gamma and beta from L2 after the first
// rows), writes N C; ~8 FLOPs per element. (In the model a layer norm follows each residual add:
// fusing the add in would save one launch and one round trip of the residual stream.)
#include <string>

#include "ops/cuda/device_math.cuh"
#include "ops/layer_norm.h"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::cuda {

namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxWidth = 8192;

template <typename T>
__global__ void layer_norm_kernel(const T* x, const T* gamma, const T* beta, float eps, T* out,
                                  int width) {
  extern __shared__ float row[];  // width floats: this block's row, widened to f32
  __shared__ float scratch[32];
  const std::int64_t offset = static_cast<std::int64_t>(blockIdx.x) * width;

  const float shift = load_f32(x, offset);  // any value of the row will do; the first is at hand
  float shifted_sum = 0.0f;
  for (int c = threadIdx.x; c < width; c += blockDim.x) {
    row[c] = load_f32(x, offset + c);
    shifted_sum += row[c] - shift;
  }
  const float mean = shift + block_sum(shifted_sum, scratch) / static_cast<float>(width);

  float squares = 0.0f;
  for (int c = threadIdx.x; c < width; c += blockDim.x) {
    const float centred = row[c] - mean;
    squares += centred * centred;
  }
  const float variance = block_sum(squares, scratch) / static_cast<float>(width);
  const float inv_std = 1.0f / sqrtf(variance + eps);

  for (int c = threadIdx.x; c < width; c += blockDim.x) {
    out[offset + c] =
        from_f32<T>((row[c] - mean) * inv_std * load_f32(gamma, c) + load_f32(beta, c));
  }
}

}  // namespace

void layer_norm(Context& ctx, const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                Tensor& out) {
  const std::int64_t width = x.dim(-1);
  check(width <= kMaxWidth, "layer_norm", [&] {
    return "rows of " + std::to_string(width) + " elements exceed the cuda kernel's limit of " +
           std::to_string(kMaxWidth);
  });
  const std::int64_t rows = width == 0 ? 0 : x.numel() / width;
  if (rows == 0) return;
  const std::size_t shared_bytes = static_cast<std::size_t>(width) * sizeof(float);
  with_storage_type(x.dtype(), "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    layer_norm_kernel<T>
        <<<static_cast<unsigned int>(rows), kThreads, shared_bytes, gpu::stream_of(ctx)>>>(
            static_cast<const T*>(x.raw_data()), static_cast<const T*>(gamma.raw_data()),
            static_cast<const T*>(beta.raw_data()), eps, static_cast<T*>(out.raw_data()),
            static_cast<int>(width));
    gpu::check_launch("layer_norm_kernel");
  });
}

}  // namespace attnscope::ops::cuda
