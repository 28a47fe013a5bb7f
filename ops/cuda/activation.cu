// ops::activation on a GPU: the formula of ops/activation_math.h (the cpu op's), in f32.
//
// One thread per element, 256 per block, one launch; out may alias x. Cost: one read and one
// write per element and ~20 FLOPs (one tanhf, erff or expf): bandwidth-bound. (In the model it
// follows the MLP's up-projection; cublasLt's GELU_BIAS epilogue could apply the tanh GELU there
// and save this launch and one round trip of the [N, 4 C] activations.)
#include "ops/activation.h"
#include "ops/activation_math.h"
#include "ops/cuda/device_math.cuh"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void activation_kernel(Activation function, const T* x, T* out, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = from_f32<T>(activate(function, load_f32(x, i)));
}

}  // namespace

void activation(Context& ctx, Activation function, const Tensor& x, Tensor& out) {
  const std::int64_t n = x.numel();
  if (n == 0) return;
  with_storage_type(x.dtype(), "activation", [&](auto tag) {
    using T = decltype(tag);
    activation_kernel<T><<<gpu::blocks_for(n, kThreads), kThreads, 0, gpu::stream_of(ctx)>>>(
        function, static_cast<const T*>(x.raw_data()), static_cast<T*>(out.raw_data()), n);
    gpu::check_launch("activation_kernel");
  });
}

}  // namespace attnscope::ops::cuda
