// `inplace` attention on a CUDA device: naive with the study's one "small change", the mask
// applied in place on the scaled scores (masked_fill_ instead of masked_fill), the same steps as
// inplace_cpu.cpp:
//
//   scores = q @ k^T                   cuBLAS strided-batched GEMM -> new [B, Hq, Tq, Tk]
//   scaled = scores * scale            elementwise kernel          -> new [B, Hq, Tq, Tk]
//   scaled.masked_fill_(causal, -inf)  fill kernel, in place: no copy
//   probs  = softmax(scaled, dim=-1)   row kernel                  -> new [B, Hq, Tq, Tk]
//   out    = probs @ v                 cuBLAS strided-batched GEMM -> out
//
// Intermediates in the storage dtype (f32, f16 or bf16), arithmetic in f32, as in
// naive_cuda.cu. Cost model (S = B Hq Tq Tk elements of e bytes): 5 launches per call;
// temporaries 3 S e bytes (768 MiB in bf16 at B=8, H=16, T=1024): one score buffer and one
// full read-and-write pass fewer than naive. The fill writes only the masked half of each
// causal block and reads nothing.
#include <limits>

#include "ops/attention/cost_models.h"
#include "ops/attention/cuda_steps.h"
#include "ops/attention/inplace_cuda.h"
#include "profiler/scope.h"

namespace attnscope::ops::attention {

namespace {

class InplaceCuda final : public Backend {
 public:
  std::string_view name() const override { return "inplace"; }
  std::string_view summary() const override {
    return "eager with the mask applied in place: GEMM, scale, mask fill, softmax, GEMM";
  }

  CostModel cost_model(const Context& /*ctx*/, const Call& call) const override {
    return inplace_cost(call);
  }

  void forward(Context& ctx, const Call& call) const override {
    profiler::Scope scope(ctx, "attention.inplace", "attention");
    gpu::validate_gpu_call(ctx, call, "attention inplace");
    const HeadLayout layout = layout_of(call);
    const Shape score_shape = {call.batch(), call.q_heads(), call.q_len(), call.kv_len};
    const DType dtype = call.q.dtype();
    Allocator& allocator = ctx.allocator();

    Tensor scores = Tensor::empty(score_shape, dtype, allocator);
    {
      profiler::Scope step(ctx, "inplace.qk_gemm", "kernel");
      gpu::qk_gemm(ctx, layout, call.q, call.k, scores);
    }
    Tensor scaled = Tensor::empty(score_shape, dtype, allocator);
    {
      profiler::Scope step(ctx, "inplace.scale", "kernel");
      gpu::scale(ctx, scores, scaled, call.scale);
    }
    {
      profiler::Scope step(ctx, "inplace.mask_fill_", "kernel");
      gpu::causal_fill(ctx, layout, scaled, -std::numeric_limits<float>::infinity());
    }
    Tensor probs = Tensor::empty(score_shape, dtype, allocator);
    {
      profiler::Scope step(ctx, "softmax", "kernel");
      gpu::softmax(ctx, scaled, probs, /*nan_safe=*/false);
    }
    {
      profiler::Scope step(ctx, "inplace.pv_gemm", "kernel");
      Tensor out = call.out;  // a handle on the caller's output, not a copy of its bytes
      gpu::pv_gemm(ctx, layout, probs, call.v, out);
    }
  }
};

}  // namespace

const Backend& inplace_cuda_backend() {
  static const InplaceCuda backend;
  return backend;
}

}  // namespace attnscope::ops::attention
