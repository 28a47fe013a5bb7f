// ops::swiglu on a GPU: out[r, j] = round_to_dtype(silu(gate_up[r, j])) * gate_up[r, F + j],
// with silu from ops/activation_math.h (the cpu op's formula), in f32.
//
// One thread per output element, 256 per block, one launch; consecutive threads read
// consecutive gate and up elements and write consecutive outputs (coalesced). Cost: reads 2 N F
// elements, writes N F, one expf and ~5 FLOPs each: bandwidth-bound. (In the model it follows
// the gate/up GEMM; a GEMM epilogue applying it would save this launch and one round trip of
// the [N, 2 F] activations.)
#include "ops/activation_math.h"
#include "ops/cuda/device_math.cuh"
#include "ops/swiglu.h"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void swiglu_kernel(const T* gate_up, T* out, std::int64_t half, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const std::int64_t row = i / half;
  const std::int64_t j = i % half;
  const std::int64_t gate_at = row * 2 * half + j;
  const T silu = from_f32<T>(activate(Activation::Silu, load_f32(gate_up, gate_at)));
  out[i] = from_f32<T>(load_f32(&silu, 0) * load_f32(gate_up, gate_at + half));
}

}  // namespace

void swiglu(Context& ctx, const Tensor& gate_up, Tensor& out) {
  const std::int64_t n = out.numel();
  if (n == 0) return;
  with_storage_type(gate_up.dtype(), "swiglu", [&](auto tag) {
    using T = decltype(tag);
    swiglu_kernel<T><<<gpu::blocks_for(n, kThreads), kThreads, 0, gpu::stream_of(ctx)>>>(
        static_cast<const T*>(gate_up.raw_data()), static_cast<T*>(out.raw_data()), out.dim(-1), n);
    gpu::check_launch("swiglu_kernel");
  });
}

}  // namespace attnscope::ops::cuda
