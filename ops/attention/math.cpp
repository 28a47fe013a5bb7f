// `math` attention: the generic, dtype-safe path of a library (PyTorch's SDPA MATH backend is the
// model). It serves any float dtype on any device and every corner case, and pays for it. The
// same eleven steps on every device (steps.h):
//
//   q32, k32, v32 = q, k, v converted to f32      convert, upcast_cache_rows x 2 (copies even
//                                                 from f32; of k and v the kv_len valid rows)
//   mask   = causal mask rebuilt on every call    build_causal_mask (Tq x Tk bytes)
//   q32 *= sqrt(scale); k32 *= sqrt(scale)        scale x 2 (the scale split over both operands)
//   scores = q32 @ k32^T                          qk_gemm in f32          -> new [B, Hq, Tq, Tk]
//   masked = where(mask, scores, -inf)            where                   -> new [B, Hq, Tq, Tk]
//   probs  = safe_softmax(masked)                 fully masked rows give 0, not NaN
//   out32  = probs @ v32                          pv_gemm in f32          -> new [B, Hq, Tq, D]
//   out    = out32 converted to out's dtype       convert
//
// Everything between the conversions is f32 whatever the storage dtype, so f16/bf16 inputs pay
// only the final rounding of the output (and on a GPU no TF32: f32 GEMMs stay f32).
//
// Cost model (S = B Hq Tq Tk, Q = B Hq Tq D, K = B Hkv Tk D; math_cost below): 11 steps per
// call; temporaries the f32 copies of q, k and v and the f32 output (2 Q + 2 K floats), three f32
// score-sized buffers (scores, masked, probabilities) and the byte mask, all live at the peak:
// 4 (2 Q + 2 K + 3 S) + Tq Tk bytes (1665 MiB at B=8, H=16, T=1024, D=64 in any dtype). Between
// the GEMMs it moves about as much as naive (~9 S f32 elements), plus the conversions and the
// mask, which the hand-written backends never build: the generic path knows nothing about its
// caller, so it cannot skip any of it.
#include <cmath>
#include <cstdint>

#include "ops/attention/steps.h"

namespace attnscope::ops::attention {

static void math(Context& ctx, const Call& call, const HeadLayout& layout, Tensor& out) {
  HeadLayout compact = layout;  // the f32 copies hold only the kv_len valid rows
  compact.capacity = layout.kv_len;
  Tensor q32 = convert(ctx, "math.upcast_q", call.q, DType::F32);
  Tensor k32 = upcast_cache_rows(ctx, "math.upcast_k", layout, call.k);
  Tensor v32 = upcast_cache_rows(ctx, "math.upcast_v", layout, call.v);
  Buffer mask(ctx.allocator(), static_cast<std::size_t>(layout.q_len * layout.kv_len));
  build_causal_mask(ctx, "math.build_causal_mask", layout, mask);
  const float root_scale = std::sqrt(call.scale);
  scale_(ctx, "math.scale_q", q32, root_scale);
  scale_(ctx, "math.scale_k", k32, root_scale);

  Tensor scores = qk_gemm(ctx, "math.qk_gemm", compact, q32, k32);
  Tensor masked = where(ctx, "math.where", mask, scores);
  Tensor probs = safe_softmax(ctx, "math.safe_softmax", masked);
  Tensor out32 = pv_gemm(ctx, "math.pv_gemm", compact, probs, v32);
  convert(ctx, "math.downcast_out", out32, out);
}

static CostModel math_cost(const Shape& s) {
  const auto q = static_cast<std::size_t>(s.heads() * s.q_len * s.head_dim);
  const auto kv = static_cast<std::size_t>(s.batch * s.kv_heads * s.kv_len * s.head_dim);
  const auto scores = static_cast<std::size_t>(s.score_elements());
  const auto mask = static_cast<std::size_t>(s.q_len * s.kv_len);
  return cost_of(s, sizeof(float) * (2 * q + 2 * kv + 3 * scores) + mask, 11);
}

const Backend& math_backend() {
  static const Recipe backend(
      "math", "generic safe path: f32 upcast, mask rebuilt per call, select, NaN-safe softmax",
      math_cost, math, /*any_float_on_cpu=*/true);
  return backend;
}

}  // namespace attnscope::ops::attention
