// ops::head_rms_norm_ on a GPU: one block (64 threads; heads are 64 to 256 wide) per query or key
// head of each row, normalising it in place with rms_norm_row (ops/cuda/rms_norm_row.cuh).
// Block b takes row b / (Hq + Hkv), head b % (Hq + Hkv); the value heads get no block.
// Cost: N (Hq + Hkv) blocks, one launch; reads each head twice (the second time from cache) and
// writes it once.
#include "ops/cuda/rms_norm_row.cuh"
#include "ops/head_rms_norm.h"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::cuda {

namespace {

constexpr int kThreads = 64;

template <typename T>
__global__ void head_rms_norm_kernel(T* qkv, const T* q_weight, const T* k_weight, float eps,
                                     std::int64_t q_heads, std::int64_t kv_heads,
                                     std::int64_t head_dim) {
  __shared__ float scratch[32];
  const std::int64_t normed_heads = q_heads + kv_heads;
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) / normed_heads;
  const std::int64_t head = static_cast<std::int64_t>(blockIdx.x) % normed_heads;
  T* x = qkv + (row * (normed_heads + kv_heads) + head) * head_dim;
  rms_norm_row(x, head < q_heads ? q_weight : k_weight, eps, x, head_dim, scratch);
}

}  // namespace

void head_rms_norm_(Context& ctx, Tensor& qkv, const Tensor& q_weight, const Tensor& k_weight,
                    std::int64_t q_heads, std::int64_t kv_heads, float eps) {
  const std::int64_t blocks = qkv.dim(0) * (q_heads + kv_heads);
  if (blocks == 0) return;
  with_storage_type(qkv.dtype(), "head_rms_norm", [&](auto tag) {
    using T = decltype(tag);
    head_rms_norm_kernel<T>
        <<<static_cast<unsigned int>(blocks), kThreads, 0, gpu::stream_of(ctx)>>>(
            static_cast<T*>(qkv.raw_data()), static_cast<const T*>(q_weight.raw_data()),
            static_cast<const T*>(k_weight.raw_data()), eps, q_heads, kv_heads, q_weight.dim(0));
    gpu::check_launch("head_rms_norm_kernel");
  });
}

}  // namespace attnscope::ops::cuda
