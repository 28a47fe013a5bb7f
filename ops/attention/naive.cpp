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
// as torch eager does; the GEMMs accumulate and the kernels compute in f32.
// The masked value is -inf: exact in every float dtype (a large finite negative such as -1e9
// overflows f16), and softmax maps it to 0; a causal row always keeps its diagonal, so no row
// is entirely masked.
//
// Cost model (S = B Hq Tq Tk score elements of e bytes; naive_cost below): 6 steps per call
// (the out-of-place mask is two: a full copy of the scores, then the fill); temporaries 4 S e
// bytes, all live at the peak (1 GiB in bf16 at B=8, H=16, T=1024). Score traffic between the
// GEMMs, in S e bytes: scale reads 1 and writes 1, the copy reads 1 and writes 1, the fill writes
// the masked half, softmax reads 2 to 3 (ops/softmax.h) and writes 1, the second GEMM reads 1:
// about 10 S e. FLOPs: 4 S D in the two GEMMs; the rest is memory traffic.
#include <limits>

#include "ops/attention/steps.h"

namespace attnscope::ops::attention {

namespace {

CostModel naive_cost(const Call& call) { return {4 * score_bytes(call), 6}; }

void naive(Context& ctx, const Call& call, const HeadLayout& layout, Tensor& out) {
  Tensor scores = new_scores(ctx, call);
  qk_gemm(ctx, "naive.qk_gemm", layout, call.q, call.k, scores);
  Tensor scaled = new_scores(ctx, call);
  scale(ctx, "naive.scale", scores, scaled, call.scale);
  Tensor masked = new_scores(ctx, call);
  copy(ctx, "naive.mask_copy", scaled, masked);
  causal_fill(ctx, "naive.mask_fill", layout, masked, -std::numeric_limits<float>::infinity());
  Tensor probs = new_scores(ctx, call);
  softmax(ctx, "naive.softmax", masked, probs);
  pv_gemm(ctx, "naive.pv_gemm", layout, probs, call.v, out);
}

}  // namespace

const Backend& naive_backend() {
  static const Recipe backend("naive",
                              "eager: GEMM, scale, out-of-place mask (copy + fill), softmax, GEMM",
                              naive_cost, naive);
  return backend;
}

}  // namespace attnscope::ops::attention
