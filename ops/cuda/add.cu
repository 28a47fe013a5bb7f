// ops::add on a GPU: out[i] = a[i] + b[i], in f32, stored in the tensors' dtype.
//
// One thread per element, 256 per block: n / 256 blocks, one launch. out may alias a or b: each
// thread reads its own element before writing it. Cost: reads 2 n and writes n elements
// (2 bytes each in f16/bf16, 4 in f32): purely bandwidth-bound, ~3 n * 2 B / 4.8 TB/s on an
// H200. (In the model this add follows a linear; writing the residual through the GEMM's beta
// would save this launch.)
#include "ops/add.h"
#include "ops/cuda/device_math.cuh"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* out, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = from_f32<T>(load_f32(a, i) + load_f32(b, i));
}

}  // namespace

void add(Context& ctx, const Tensor& a, const Tensor& b, Tensor& out) {
  const std::int64_t n = a.numel();
  if (n == 0) return;
  with_storage_type(a.dtype(), "add", [&](auto tag) {
    using T = decltype(tag);
    add_kernel<T><<<attnscope::cuda::blocks_for(n, kThreads), kThreads, 0,
                    attnscope::cuda::stream_of(ctx)>>>(static_cast<const T*>(a.raw_data()),
                                                       static_cast<const T*>(b.raw_data()),
                                                       static_cast<T*>(out.raw_data()), n);
    attnscope::cuda::check_launch("add_kernel");
  });
}

}  // namespace attnscope::ops::cuda
