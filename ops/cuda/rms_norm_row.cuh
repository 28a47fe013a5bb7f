// One row of RMSNorm by one thread block, shared by ops::rms_norm's kernel (a block per row) and
// ops::head_rms_norm_'s (a block per query or key head):
//
//   rms = sqrt(sum(x^2) / width + eps)
//   out = round_to_dtype(x / rms) * weight
//
// A strided f32 sum of squares and one block reduction (block_sum: blockDim.x a multiple of 32),
// then a second strided pass reads the row again (now from L1/L2) and writes the normalised,
// weighted row; the normalised value is rounded to the storage dtype before the weight multiplies
// it, as transformers' LlamaRMSNorm does. Each thread rewrites only elements it read itself after
// the reduction's barrier, so out may alias x. Every thread of the block must call it.
#pragma once

#include <cstdint>

#include "ops/cuda/device_math.cuh"

namespace attnscope::ops::cuda {

template <typename T>
__device__ void rms_norm_row(const T* x, const T* weight, float eps, T* out, std::int64_t width,
                             float* scratch) {
  float squares = 0.0f;
  for (std::int64_t c = threadIdx.x; c < width; c += blockDim.x) {
    const float value = load_f32(x, c);
    squares += value * value;
  }
  const float mean_square = block_sum(squares, scratch) / static_cast<float>(width);
  const float inv_rms = 1.0f / sqrtf(mean_square + eps);
  for (std::int64_t c = threadIdx.x; c < width; c += blockDim.x) {
    const T normalised = from_f32<T>(load_f32(x, c) * inv_rms);
    out[c] = from_f32<T>(load_f32(&normalised, 0) * load_f32(weight, c));
  }
}

}  // namespace attnscope::ops::cuda
