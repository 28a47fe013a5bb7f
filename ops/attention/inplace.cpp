// `inplace` attention: naive with the study's one "small change", the mask applied in place on
// the scaled scores (masked_fill_ instead of masked_fill). The same recipe on every device
// (steps.h):
//
//   scores = q @ k^T                   qk_gemm      -> new [B, Hq, Tq, Tk]
//   scaled = scores * scale            scale        -> new [B, Hq, Tq, Tk]
//   scaled.masked_fill_(causal, -inf)  causal_fill, in place: no copy
//   probs  = softmax(scaled, dim=-1)   softmax      -> new [B, Hq, Tq, Tk]
//   out    = probs @ v                 pv_gemm      -> out
//
// Intermediates in the storage dtype, arithmetic in f32, the mask value -inf, as in naive.cpp.
//
// Cost model (S = B Hq Tq Tk score elements of e bytes; inplace_cost below): 5 steps per call;
// temporaries 3 S e bytes (768 MiB in bf16 at B=8, H=16, T=1024): one score-sized buffer and one
// full read-and-write pass fewer than naive. The fill writes only the masked half of each causal
// block and reads nothing.
#include "ops/attention/steps.h"

namespace attnscope::ops::attention {

static void inplace(Context& ctx, const Call& call, const HeadLayout& layout, Tensor& out) {
  Tensor scores = qk_gemm(ctx, "inplace.qk_gemm", layout, call.q, call.k);
  Tensor scaled = scale(ctx, "inplace.scale", scores, call.scale);
  causal_fill_(ctx, "inplace.mask_fill_", layout, scaled, kMaskedScore);  // masked_fill_: no copy
  Tensor probs = softmax(ctx, "inplace.softmax", scaled);
  pv_gemm(ctx, "inplace.pv_gemm", layout, probs, call.v, out);
}

static CostModel inplace_cost(const Shape& shape) {
  return cost_of(shape, 3 * score_bytes(shape), 5);
}

const Backend& inplace_backend() {
  static const Recipe backend(
      "inplace", "eager with the mask applied in place: GEMM, scale, mask fill, softmax, GEMM",
      inplace_cost, inplace);
  return backend;
}

}  // namespace attnscope::ops::attention
