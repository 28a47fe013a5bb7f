// ops::softmax and ops::safe_softmax on a GPU, one block per row, in f32:
//
//   out[i] = exp(x[i] - max(x)) * (1 / sum_j exp(x[j] - max(x)))
//
// The same definition and order of operations as the cpu's softmax_row: entries equal to -inf
// get 0; a row of only -inf gives NaN (softmax) or zeros (safe_softmax: "is every entry -inf"
// is one more block reduction, taken in the max pass). Three passes over the row from global
// memory (max; sum of exps; write), so rows of any width work; the second and third reads
// usually come from L1/L2. All reads of a row finish (inside the block reduction) before any
// write, so out may alias x.
// Cost: rows blocks of 256 threads, one launch; reads 3 n and writes n elements; 2 expf per
// element.
#include "ops/cuda/device_math.cuh"
#include "ops/softmax.h"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T, bool kSafe>
__global__ void softmax_kernel(const T* x, T* out, std::int64_t width) {
  __shared__ float scratch[32];
  const T* in = x + static_cast<std::int64_t>(blockIdx.x) * width;
  T* dst = out + static_cast<std::int64_t>(blockIdx.x) * width;

  float local_max = -INFINITY;
  float any_unmasked = 0.0f;  // 1 once this thread has seen an entry other than -inf
  for (std::int64_t c = threadIdx.x; c < width; c += blockDim.x) {
    const float v = load_f32(in, c);
    local_max = fmaxf(local_max, v);
    if (v != -INFINITY) any_unmasked = 1.0f;
  }
  const float row_max = block_max(local_max, scratch);
  if constexpr (kSafe) {
    // The same value in every thread, so the whole block takes the branch or none does.
    if (block_max(any_unmasked, scratch) == 0.0f) {
      for (std::int64_t c = threadIdx.x; c < width; c += blockDim.x) dst[c] = from_f32<T>(0.0f);
      return;
    }
  }

  float local_sum = 0.0f;
  for (std::int64_t c = threadIdx.x; c < width; c += blockDim.x) {
    local_sum += expf(load_f32(in, c) - row_max);
  }
  const float inv_sum = 1.0f / block_sum(local_sum, scratch);

  for (std::int64_t c = threadIdx.x; c < width; c += blockDim.x) {
    dst[c] = from_f32<T>(expf(load_f32(in, c) - row_max) * inv_sum);
  }
}

template <bool kSafe>
void launch(Context& ctx, const char* op, const Tensor& x, Tensor& out) {
  const std::int64_t width = x.dim(-1);
  const std::int64_t rows = width == 0 ? 0 : x.numel() / width;
  if (rows == 0) return;
  with_storage_type(x.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    softmax_kernel<T, kSafe><<<static_cast<unsigned int>(rows), kThreads, 0, gpu::stream_of(ctx)>>>(
        static_cast<const T*>(x.raw_data()), static_cast<T*>(out.raw_data()), width);
    gpu::check_launch("softmax_kernel");
  });
}

}  // namespace

void softmax(Context& ctx, const Tensor& x, Tensor& out) { launch<false>(ctx, "softmax", x, out); }

void safe_softmax(Context& ctx, const Tensor& x, Tensor& out) {
  launch<true>(ctx, "safe_softmax", x, out);
}

}  // namespace attnscope::ops::cuda
