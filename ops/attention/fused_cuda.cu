// `fused` attention on a CUDA device: the two GEMMs with everything between them in ONE kernel,
// the same steps as fused_cpu.cpp:
//
//   scores = q @ k^T                                   cuBLAS strided-batched GEMM -> new S
//   per row, in place: scale, causal mask, softmax     one kernel, one block per row
//   out    = scores @ v                                cuBLAS strided-batched GEMM -> out
//
// Per row i (query position p = kv_len - Tq + i, keys 0..p visible): m = max_{j <= p} s_j scale;
// sum = sum_{j <= p} exp(s_j scale - m); then s_j = exp(s_j scale - m) / sum for j <= p and
// s_j = 0 beyond. The exp of a masked entry is never computed, so there is no mask value to
// overflow. The block reads the visible part of its row three times (max, sum, normalise) and
// writes the row once; a row (2 KiB in bf16 at Tk = 1024) stays in L1/L2 between the sweeps, so
// device memory sees about one read and one write of it. Scores are held in the storage dtype;
// the arithmetic is f32.
//
// Cost model (S = B Hq Tq Tk elements of e bytes): 3 launches per call; temporaries S e bytes,
// the score buffer alone (256 MiB in bf16 at B=8, H=16, T=1024); about 3 S e bytes of score
// traffic outside the GEMMs' own (the first GEMM writes, the fused kernel reads and writes, the
// second GEMM reads) instead of naive's ~11 S e. FLOPs: 4 S D in the GEMMs.
#include <cstdint>

#include "ops/attention/cost_models.h"
#include "ops/attention/cuda_steps.h"
#include "ops/attention/fused_cuda.h"
#include "ops/cuda/device_math.cuh"
#include "profiler/scope.h"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::attention {

namespace {

// One block per row of `kv_len` scores (grid-stride over the rows). Row r belongs to query
// r % q_len. m and sum are block-wide, so every thread takes the same path through the
// barriers inside block_max / block_sum.
template <typename T>
__global__ void scale_mask_softmax_kernel(T* scores, std::int64_t rows, std::int64_t q_len,
                                          std::int64_t kv_len, float factor) {
  using ops::cuda::block_max;
  using ops::cuda::block_sum;
  using ops::cuda::from_f32;
  using ops::cuda::load_f32;
  __shared__ float scratch[32];
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    T* s = scores + row * kv_len;
    const std::int64_t visible = kv_len - q_len + row % q_len + 1;  // keys 0..position, >= 1
    float row_max = -INFINITY;
    for (std::int64_t j = threadIdx.x; j < visible; j += blockDim.x) {
      row_max = fmaxf(row_max, load_f32(s, j) * factor);
    }
    row_max = block_max(row_max, scratch);
    float sum = 0.0f;
    for (std::int64_t j = threadIdx.x; j < visible; j += blockDim.x) {
      sum += expf(load_f32(s, j) * factor - row_max);
    }
    sum = block_sum(sum, scratch);
    const float inv_sum = 1.0f / sum;
    // Each element is read and then written by the same thread, so the in-place update is safe.
    for (std::int64_t j = threadIdx.x; j < kv_len; j += blockDim.x) {
      const float p = j < visible ? expf(load_f32(s, j) * factor - row_max) * inv_sum : 0.0f;
      s[j] = from_f32<T>(p);
    }
  }
}

class FusedCuda final : public Backend {
 public:
  std::string_view name() const override { return "fused"; }
  std::string_view summary() const override {
    return "GEMM, one fused scale + mask + softmax pass, GEMM";
  }

  CostModel cost_model(const Context& /*ctx*/, const Call& call) const override {
    return fused_cost(call);
  }

  void forward(Context& ctx, const Call& call) const override {
    profiler::Scope scope(ctx, "attention.fused", "attention");
    gpu::validate_gpu_call(ctx, call, "attention fused");
    const HeadLayout layout = layout_of(call);
    Tensor scores = Tensor::empty({call.batch(), call.q_heads(), call.q_len(), call.kv_len},
                                  call.q.dtype(), ctx.allocator());
    {
      profiler::Scope step(ctx, "fused.qk_gemm", "kernel");
      gpu::qk_gemm(ctx, layout, call.q, call.k, scores);
    }
    {
      profiler::Scope step(ctx, "fused.scale_mask_softmax", "kernel");
      launch_scale_mask_softmax(ctx, layout, scores, call.scale);
    }
    {
      profiler::Scope step(ctx, "fused.pv_gemm", "kernel");
      Tensor out = call.out;  // a handle on the caller's output, not a copy of its bytes
      gpu::pv_gemm(ctx, layout, scores, call.v, out);
    }
  }

 private:
  static void launch_scale_mask_softmax(const Context& ctx, const HeadLayout& layout,
                                        Tensor& scores, float factor) {
    const std::int64_t rows = layout.heads() * layout.q_len;
    if (rows == 0) return;
    const int threads = gpu::row_block_threads(layout.kv_len);
    const unsigned int blocks = gpu::grid_stride_blocks(rows, 1);  // one block per row
    ops::cuda::with_storage_type(scores.dtype(), "attention fused", [&](auto tag) {
      using T = decltype(tag);
      scale_mask_softmax_kernel<T><<<blocks, threads, 0, attnscope::cuda::stream_of(ctx)>>>(
          static_cast<T*>(scores.raw_data()), rows, layout.q_len, layout.kv_len, factor);
      attnscope::cuda::check_launch("attention scale_mask_softmax_kernel");
    });
  }
};

}  // namespace

const Backend& fused_cuda_backend() {
  static const FusedCuda backend;
  return backend;
}

}  // namespace attnscope::ops::attention
