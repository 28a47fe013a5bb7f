// `fused` attention on the CPU: the two GEMMs with everything between them done in one pass:
//
//   scores = q @ k^T                                   (batched GEMM) -> new [B, Hq, Tq, Tk]
//   for each row, in place: scale, causal mask, softmax  (one fused pass, row in cache)
//   out    = scores @ v                                (batched GEMM) -> out
//
// Per row i (position p): m = max_{j <= p} s_j * scale; e_j = exp(s_j * scale - m) for j <= p,
// written back; then e_j / sum(e) for j <= p and 0 beyond. The row (Tk floats, 4 KiB at
// Tk = 1024) stays in L1/L2 across these sweeps, so memory sees one read and one write of it.
// Masked entries are never computed with: no mask value, so nothing to overflow in any dtype.
//
// Cost model (f32, S = B Hq Tq Tk): 3 steps per call; temporaries S floats (4 S bytes), the
// score buffer alone; about 3 S float reads and writes between the GEMMs (GEMM writes, the fused
// pass reads and writes, the second GEMM reads) instead of naive's ~11 S.
#include "ops/attention/fused_cpu.h"

#include <algorithm>
#include <cmath>

#include "ops/attention/cost_models.h"
#include "ops/attention/cpu_steps.h"
#include "ops/check.h"
#include "profiler/scope.h"

namespace attnscope::ops::attention {

namespace {

// Scale, causal mask and softmax of one row of `length` scores, of which `visible` are kept.
void scale_mask_softmax_row(float* row, std::int64_t length, std::int64_t visible, float factor) {
  float max_value = row[0] * factor;
  for (std::int64_t j = 0; j < visible; ++j) max_value = std::max(max_value, row[j] * factor);
  float sum = 0.0f;
  for (std::int64_t j = 0; j < visible; ++j) {
    row[j] = std::exp(row[j] * factor - max_value);
    sum += row[j];
  }
  const float inv_sum = 1.0f / sum;
  for (std::int64_t j = 0; j < visible; ++j) row[j] *= inv_sum;
  std::fill(row + visible, row + length, 0.0f);
}

class FusedCpu final : public Backend {
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
    validate_call(call);
    require_cpu_f32(call.q, "attention fused", "q");
    const HeadLayout layout = layout_of(call);
    Tensor scores = Tensor::empty({call.batch(), call.q_heads(), call.q_len(), call.kv_len},
                                  DType::F32, ctx.allocator());
    {
      profiler::Scope step(ctx, "fused.qk_gemm", "kernel");
      qk_gemm(ctx, layout, call.q.data<float>(), call.k.data<float>(), scores.data<float>());
    }
    {
      profiler::Scope step(ctx, "fused.scale_mask_softmax", "kernel");
      float* s = scores.data<float>();
      const std::int64_t first_position = layout.kv_len - layout.q_len;
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
      for (std::int64_t row = 0; row < layout.heads() * layout.q_len; ++row) {
        scale_mask_softmax_row(s + row * layout.kv_len, layout.kv_len,
                               first_position + row % layout.q_len + 1, call.scale);
      }
    }
    {
      profiler::Scope step(ctx, "fused.pv_gemm", "kernel");
      pv_gemm(ctx, layout, scores.data<float>(), call.v.data<float>(), call.out.data<float>());
    }
  }
};

}  // namespace

const Backend& fused_cpu_backend() {
  static const FusedCpu backend;
  return backend;
}

}  // namespace attnscope::ops::attention
