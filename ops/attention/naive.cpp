// `naive` attention (alias `eager`): one whole-tensor step at a time, as hand-written PyTorch
// does it. The same recipe on every device (steps.h); only what a step is differs (a parallel
// pass on the CPU, one launch on a GPU):
//
//   scores = q @ k^T                           qk_gemm      -> new [B, Hq, Tq, Tk]
//   scaled = scores * scale                    scale        -> new [B, Hq, Tq, Tk]
//   masked = scaled.masked_fill(causal, -inf)  copy + fill  -> new [B, Hq, Tq, Tk]
//   probs  = softmax(masked, dim=-1)           softmax      -> new [B, Hq, Tq, Tk]
//   out    = probs @ v                         pv_gemm      -> out
//
// Every intermediate is held in the storage dtype (f32 on the CPU; f32, f16 or bf16 on a GPU),
// as torch eager does; the GEMMs accumulate and the kernels compute in f32. The masked value is
// -inf (kMaskedScore, steps.h says why). On a GPU the copy is a device-to-device memcpy, as a
// clone is in PyTorch.
//
// Cost model (S = B Hq Tq Tk score elements of e bytes; naive_cost below): 6 steps per call
// (the out-of-place mask is two: a full copy of the scores, then the fill); temporaries 4 S e
// bytes, all live at the peak (1 GiB in bf16 at B=8, H=16, T=1024). Score traffic between the
// GEMMs, in S e bytes: scale reads 1 and writes 1, the copy reads 1 and writes 1, the fill writes
// the masked half, softmax reads 2 to 3 (ops/softmax.h) and writes 1, the second GEMM reads 1:
// about 10 S e. FLOPs: 4 S D in the two GEMMs; the rest is memory traffic.
#include "ops/attention/steps.h"

namespace attnscope::ops::attention {

static void naive(Context& ctx, const Call& call, const HeadLayout& layout, Tensor& out) {
  Tensor scores = qk_gemm(ctx, "naive.qk_gemm", layout, call.q, call.k);
  Tensor scaled = scale(ctx, "naive.scale", scores, call.scale);
  Tensor masked = copy(ctx, "naive.mask_copy", scaled);  // masked_fill: a new tensor...
  causal_fill_(ctx, "naive.mask_fill", layout, masked, kMaskedScore);  // ...then the fill
  Tensor probs = softmax(ctx, "naive.softmax", masked);
  pv_gemm(ctx, "naive.pv_gemm", layout, probs, call.v, out);
}

static CostModel naive_cost(const Shape& shape) {
  return cost_of(shape, 4 * score_bytes(shape), 6);
}

const Backend& naive_backend() {
  static const Recipe backend("naive",
                              "eager: GEMM, scale, out-of-place mask (copy + fill), softmax, GEMM",
                              naive_cost, naive);
  return backend;
}

}  // namespace attnscope::ops::attention
