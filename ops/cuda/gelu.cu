// ops::gelu on a GPU, the tanh form of the cpu op, in f32:
//
//   gelu(x) = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
//
// One thread per element, 256 per block, one launch; out may alias x. Cost: one read and one
// write per element and ~20 FLOPs (tanhf): bandwidth-bound. (In the model it follows the MLP's
// up-projection; cublasLt's GELU_BIAS epilogue could apply it there and save this launch and
// one round trip of the [N, 4 C] activations.)
#include "ops/cuda/device_math.cuh"
#include "ops/gelu.h"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void gelu_kernel(const T* x, T* out, std::int64_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = load_f32(x, i);
  out[i] = from_f32<T>(0.5f * v * (1.0f + tanhf(kSqrt2OverPi * (v + 0.044715f * v * v * v))));
}

}  // namespace

void gelu(Context& ctx, const Tensor& x, Tensor& out) {
  const std::int64_t n = x.numel();
  if (n == 0) return;
  with_storage_type(x.dtype(), "gelu", [&](auto tag) {
    using T = decltype(tag);
    gelu_kernel<T><<<gpu::blocks_for(n, kThreads), kThreads, 0,
                     gpu::stream_of(ctx)>>>(static_cast<const T*>(x.raw_data()),
                                                        static_cast<T*>(out.raw_data()), n);
    gpu::check_launch("gelu_kernel");
  });
}

}  // namespace attnscope::ops::cuda
