// `naive` attention on the CPU: eager, one whole-tensor step at a time, as hand-written PyTorch
// does it:
//
//   scores = q @ k^T                           (batched GEMM)        -> new [B, Hq, Tq, Tk]
//   scaled = scores * scale                    (elementwise)         -> new [B, Hq, Tq, Tk]
//   masked = scaled.masked_fill(causal, -inf)  (copy, then fill)     -> new [B, Hq, Tq, Tk]
//   probs  = softmax(masked, dim=-1)           (row-wise)            -> new [B, Hq, Tq, Tk]
//   out    = probs @ v                         (batched GEMM)        -> out
//
// Cost model (f32, S = B Hq Tq Tk score elements): 6 steps per call (the out-of-place mask is
// two: a full copy of the scores, then the fill); temporaries 4 S floats (16 S bytes), all live
// at the peak; about 11 S float reads and writes between the GEMMs (write scores; read them and
// write scaled; read scaled and write the copy; fill; softmax reads twice and writes; the second
// GEMM reads). FLOPs: 4 S D in the two GEMMs; the rest is memory traffic.
// The masked value is -inf: exact in every float dtype (a large finite negative such as -1e9
// overflows f16), and softmax maps it to 0; a causal row always keeps its diagonal, so no row
// is entirely masked.
#include "ops/attention/naive_cpu.h"

#include <algorithm>
#include <limits>

#include "ops/attention/cost_models.h"
#include "ops/attention/cpu_steps.h"
#include "ops/check.h"
#include "ops/softmax.h"
#include "profiler/scope.h"

namespace attnscope::ops::attention {

namespace {

class NaiveCpu final : public Backend {
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
    validate_call(call);
    require_cpu_f32(call.q, "attention naive", "q");
    const HeadLayout layout = layout_of(call);
    const Shape score_shape = {call.batch(), call.q_heads(), call.q_len(), call.kv_len};
    Allocator& allocator = ctx.allocator();

    Tensor scores = Tensor::empty(score_shape, DType::F32, allocator);
    {
      profiler::Scope step(ctx, "naive.qk_gemm", "kernel");
      qk_gemm(ctx, layout, call.q.data<float>(), call.k.data<float>(), scores.data<float>());
    }
    Tensor scaled = Tensor::empty(score_shape, DType::F32, allocator);
    {
      profiler::Scope step(ctx, "naive.scale", "kernel");
      scale(ctx, scores.data<float>(), scaled.data<float>(), scores.numel(), call.scale);
    }
    Tensor masked = Tensor::empty(score_shape, DType::F32, allocator);
    {
      profiler::Scope step(ctx, "naive.mask_copy", "kernel");
      std::copy_n(scaled.data<float>(), scaled.numel(), masked.data<float>());
    }
    {
      profiler::Scope step(ctx, "naive.mask_fill", "kernel");
      causal_fill(ctx, layout, masked.data<float>(), -std::numeric_limits<float>::infinity());
    }
    Tensor probs = Tensor::empty(score_shape, DType::F32, allocator);
    softmax(ctx, masked, probs);
    {
      profiler::Scope step(ctx, "naive.pv_gemm", "kernel");
      pv_gemm(ctx, layout, probs.data<float>(), call.v.data<float>(), call.out.data<float>());
    }
  }
};

}  // namespace

const Backend& naive_cpu_backend() {
  static const NaiveCpu backend;
  return backend;
}

}  // namespace attnscope::ops::attention
