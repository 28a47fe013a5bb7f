// `naive` attention on a CUDA device: eager, one whole-tensor launch at a time, as hand-written
// PyTorch runs it on a GPU (the same steps as naive_cpu.cpp):
//
//   scores = q @ k^T                           cuBLAS strided-batched GEMM -> new [B, Hq, Tq, Tk]
//   scaled = scores * scale                    elementwise kernel          -> new [B, Hq, Tq, Tk]
//   masked = scaled.masked_fill(causal, -inf)  copy kernel, fill kernel    -> new [B, Hq, Tq, Tk]
//   probs  = softmax(masked, dim=-1)           row kernel                  -> new [B, Hq, Tq, Tk]
//   out    = probs @ v                         cuBLAS strided-batched GEMM -> out
//
// Every intermediate is held in the storage dtype (f32, f16 or bf16), as torch eager does; the
// GEMMs accumulate in f32 (tensor cores for f16/bf16), the kernels compute in f32.
// Cost model (S = B Hq Tq Tk score elements of e = sizeof(dtype) bytes): 6 launches per call
// (the out-of-place mask is two: a full copy of the scores, then the fill); temporaries 4 S e
// bytes, all live at the peak (1 GiB in bf16 at B=8, H=16, T=1024); about 11 S e bytes of
// score traffic between the GEMMs (scale reads and writes, copy reads and writes, the fill
// writes the masked half, softmax reads three times and writes, the second GEMM reads).
// FLOPs: 4 S D in the two GEMMs. The masked value is -inf: exact in every dtype (see
// naive_cpu.cpp).
#include <limits>

#include "ops/attention/cost_models.h"
#include "ops/attention/cuda_steps.h"
#include "ops/attention/naive_cuda.h"
#include "profiler/scope.h"

namespace attnscope::ops::attention {

namespace {

class NaiveCuda final : public Backend {
 public:
  std::string_view name() const override { return "naive"; }
  std::string_view summary() const override {
    return "eager: GEMM, scale, out-of-place mask (copy + fill), softmax, GEMM";
  }

  CostModel cost_model(const Context& /*ctx*/, const Call& call) const override {
    return naive_cost(call);
  }

  void forward(Context& ctx, const Call& call) const override {
    profiler::Scope scope(ctx, "attention.naive", "attention");
    gpu::validate_gpu_call(ctx, call, "attention naive");
    const HeadLayout layout = layout_of(call);
    const Shape score_shape = {call.batch(), call.q_heads(), call.q_len(), call.kv_len};
    const DType dtype = call.q.dtype();
    Allocator& allocator = ctx.allocator();

    Tensor scores = Tensor::empty(score_shape, dtype, allocator);
    {
      profiler::Scope step(ctx, "naive.qk_gemm", "kernel");
      gpu::qk_gemm(ctx, layout, call.q, call.k, scores);
    }
    Tensor scaled = Tensor::empty(score_shape, dtype, allocator);
    {
      profiler::Scope step(ctx, "naive.scale", "kernel");
      gpu::scale(ctx, scores, scaled, call.scale);
    }
    Tensor masked = Tensor::empty(score_shape, dtype, allocator);
    {
      profiler::Scope step(ctx, "naive.mask_copy", "kernel");
      gpu::copy(ctx, scaled, masked);
    }
    {
      profiler::Scope step(ctx, "naive.mask_fill", "kernel");
      gpu::causal_fill(ctx, layout, masked, -std::numeric_limits<float>::infinity());
    }
    Tensor probs = Tensor::empty(score_shape, dtype, allocator);
    {
      profiler::Scope step(ctx, "softmax", "kernel");
      gpu::softmax(ctx, masked, probs, /*nan_safe=*/false);
    }
    {
      profiler::Scope step(ctx, "naive.pv_gemm", "kernel");
      Tensor out = call.out;  // a handle on the caller's output, not a copy of its bytes
      gpu::pv_gemm(ctx, layout, probs, call.v, out);
    }
  }
};

}  // namespace

const Backend& naive_cuda_backend() {
  static const NaiveCuda backend;
  return backend;
}

}  // namespace attnscope::ops::attention
