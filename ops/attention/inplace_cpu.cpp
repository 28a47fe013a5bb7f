// `inplace` attention on the CPU: naive with the one "small change" of the study, the mask
// applied in place on the scaled scores (masked_fill_ instead of masked_fill):
//
//   scores = q @ k^T                       (batched GEMM)  -> new [B, Hq, Tq, Tk]
//   scaled = scores * scale                (elementwise)   -> new [B, Hq, Tq, Tk]
//   scaled.masked_fill_(causal, -inf)      (in place: no copy)
//   probs  = softmax(scaled, dim=-1)       (row-wise)      -> new [B, Hq, Tq, Tk]
//   out    = probs @ v                     (batched GEMM)  -> out
//
// Cost model (f32, S = B Hq Tq Tk): 5 steps per call; temporaries 3 S floats (12 S bytes): one
// score-sized buffer and one full copy pass fewer than naive. The fill writes only the masked
// half of each causal block and reads nothing.
#include "ops/attention/inplace_cpu.h"

#include <limits>

#include "ops/attention/cost_models.h"
#include "ops/attention/cpu_steps.h"
#include "ops/check.h"
#include "ops/softmax.h"
#include "profiler/scope.h"

namespace attnscope::ops::attention {

namespace {

class InplaceCpu final : public Backend {
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
    validate_call(call);
    require_cpu_f32(call.q, "attention inplace", "q");
    const HeadLayout layout = layout_of(call);
    const Shape score_shape = {call.batch(), call.q_heads(), call.q_len(), call.kv_len};
    Allocator& allocator = ctx.allocator();

    Tensor scores = Tensor::empty(score_shape, DType::F32, allocator);
    {
      profiler::Scope step(ctx, "inplace.qk_gemm", "kernel");
      qk_gemm(ctx, layout, call.q.data<float>(), call.k.data<float>(), scores.data<float>());
    }
    Tensor scaled = Tensor::empty(score_shape, DType::F32, allocator);
    {
      profiler::Scope step(ctx, "inplace.scale", "kernel");
      scale(ctx, scores.data<float>(), scaled.data<float>(), scores.numel(), call.scale);
    }
    {
      profiler::Scope step(ctx, "inplace.mask_fill_", "kernel");
      causal_fill(ctx, layout, scaled.data<float>(), -std::numeric_limits<float>::infinity());
    }
    Tensor probs = Tensor::empty(score_shape, DType::F32, allocator);
    softmax(ctx, scaled, probs);
    {
      profiler::Scope step(ctx, "inplace.pv_gemm", "kernel");
      pv_gemm(ctx, layout, probs.data<float>(), call.v.data<float>(), call.out.data<float>());
    }
  }
};

}  // namespace

const Backend& inplace_cpu_backend() {
  static const InplaceCpu backend;
  return backend;
}

}  // namespace attnscope::ops::attention
