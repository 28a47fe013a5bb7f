// `fused` attention: the two GEMMs with everything between them in ONE step. The same recipe on
// every device (steps.h):
//
//   scores = q @ k^T                                qk_gemm             -> new [B, Hq, Tq, Tk]
//   per row, in place: scale, causal mask, softmax  scale_mask_softmax
//   out    = scores @ v                             pv_gemm             -> out
//
// Per row i (query position p = kv_len - Tq + i, keys 0..p visible): m = max_{j <= p} s_j scale;
// sum = sum_{j <= p} exp(s_j scale - m); then s_j = exp(s_j scale - m) / sum for j <= p and
// s_j = 0 beyond. The exp of a masked entry is never computed, so there is no mask value to
// overflow in any dtype. The row (4 KiB in f32, 2 KiB in bf16 at Tk = 1024) stays in L1/L2
// across the sweeps, so memory sees one read and one write of it.
//
// Cost model (S = B Hq Tq Tk score elements of e bytes; fused_cost below): 3 steps per call;
// temporaries S e bytes, the score buffer alone (256 MiB in bf16 at B=8, H=16, T=1024); about
// 3 S e bytes of score traffic outside the GEMMs' own (the first GEMM writes, the fused step
// reads and writes, the second GEMM reads) instead of naive's ~10 S e. FLOPs: 4 S D in the GEMMs.
#include "ops/attention/steps.h"

namespace attnscope::ops::attention {

static void fused(Context& ctx, const Call& call, const HeadLayout& layout, Tensor& out) {
  Tensor scores = qk_gemm(ctx, "fused.qk_gemm", layout, call.q, call.k);
  scale_mask_softmax_(ctx, "fused.scale_mask_softmax", layout, scores, call.scale);
  pv_gemm(ctx, "fused.pv_gemm", layout, scores, call.v, out);
}

static CostModel fused_cost(const Shape& shape) { return cost_of(shape, score_bytes(shape), 3); }

const Backend& fused_backend() {
  static const Recipe backend("fused", "GEMM, one fused scale + mask + softmax pass, GEMM",
                              fused_cost, fused);
  return backend;
}

}  // namespace attnscope::ops::attention
