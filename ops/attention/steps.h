// The steps the eager backends (naive, inplace, math, fused) are written in. Each is one pass
// over memory with one signature on every device: it checks that its tensors share a device,
// opens the profiler step `step` (profiler::KernelStep, directly inside the backend's scope) and
// runs the body for that device, as every op dispatches (ops/dispatch.h): cpu/steps.cpp (a
// parallel loop or an Eigen product per head) or cuda/steps.cu (one launch on the context's
// stream: a cuBLAS call or one kernel, never a synchronisation, so a whole call can be captured
// in a CUDA graph).
//
//   qk_gemm             scores[b, h] = q[b, h] k[b, h / group]^T      [Tq, Tk], 2 Tq Tk D FLOPs
//   pv_gemm             out[b, h]    = probs[b, h] v[b, h / group]    [Tq, D],  2 Tq Tk D FLOPs
//   scale, scale_       out = in * factor; scale_ in place            reads S, writes S
//   copy                out = in (a real copy, as an eager clone)     reads S, writes S
//   causal_fill_        scores[b, h, i, j] = value for keys j after query i's position, in
//                       place; reads nothing, writes the masked part (about S / 2 in prefill)
//   softmax             row-wise softmax (ops/softmax.h); safe_softmax: all -inf rows give 0
//   scale_mask_softmax_ per row, in place: scale, causal mask and softmax fused in one pass
//   convert             out = in rounded to out's dtype (ops/cast.h)
//   upcast_cache_rows   the kv_len valid rows of each head of a cache, as a compact f32 copy
//   build_causal_mask   keep[i, j] = 1 when key j is visible to query i, else 0 (Tq Tk bytes)
//   where               masked = keep ? scores : -inf, the mask of one head repeated per head
//
// S = B Hq Tq Tk score elements. Tensors hold f32 on the cpu; f32, f16 or bf16 on a GPU (one
// dtype per step, arithmetic in f32). Query i sits at position kv_len - Tq + i (backend.h).
// K and V are read as `layout` says, so the GEMMs read the KV cache in place.
#pragma once

#include <limits>
#include <string>
#include <string_view>

#include "ops/attention/backend.h"
#include "runtime/tensor.h"

namespace attnscope::ops::attention {

// An eager backend: a name, a one-line summary, the cost model (a plain function of the shape)
// and the recipe (a plain function of the call). attend() opens the backend's scope
// ("attention.<name>"), validates the call (validate_call) and runs the recipe, which writes `out`
// (a handle on call.out).
class Recipe final : public Backend {
 public:
  using CostFunction = CostModel (*)(const Shape& shape);
  using StepsFunction = void (*)(Context& ctx, const Call& call, const HeadLayout& layout,
                                 Tensor& out);
  Recipe(std::string_view name, std::string_view summary, CostFunction cost, StepsFunction steps,
         bool any_float_on_cpu = false);

  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return summary_; }
  CostModel cost_model(const Context& ctx, const Shape& shape) const override;
  // The dtype rule (dtype_refusal) is all an eager recipe refuses: its steps serve any shape.
  std::string refusal(const Context& ctx, const Shape& shape) const override;
  Plan plan(const Context& ctx, const Shape& shape) const override;
  void attend(Context& ctx, const Call& call) const override;
  // Gathered (paged.h): each sequence copied into a contiguous call of this recipe.
  void attend_paged(Context& ctx, const PagedCall& call) const override;
  CostModel paged_cost_model(const Context& ctx, const RaggedShape& shape) const override;

 private:
  std::string name_;
  std::string summary_;
  std::string scope_;        // "attention.<name>"
  std::string paged_scope_;  // "attention.<name>.paged"
  std::string where_;        // "attention <name>", for errors
  CostFunction cost_;
  StepsFunction steps_;
  bool any_float_on_cpu_;
};

// The value the eager backends write over masked scores: -inf, exact in every float dtype (a
// large finite negative such as -1e9 overflows f16), and softmax maps it to 0. A causal row
// always keeps its diagonal, so no row is entirely masked.
constexpr float kMaskedScore = -std::numeric_limits<float>::infinity();

// The bytes of one score-sized tensor of the call's dtype: S e.
std::size_t score_bytes(const Shape& shape);

// The steps. A step that returns a Tensor allocates it from ctx's allocator (a new tensor, as an
// eager framework's out-of-place op); a name ending in `_` works in place, as PyTorch's
// masked_fill_ does. Scores are [B, Hq, Tq, kv_len] of the inputs' dtype.
Tensor qk_gemm(Context& ctx, const char* step, const HeadLayout& layout, const Tensor& q,
               const Tensor& k);
void pv_gemm(Context& ctx, const char* step, const HeadLayout& layout, const Tensor& probs,
             const Tensor& v, Tensor& out);
Tensor pv_gemm(Context& ctx, const char* step, const HeadLayout& layout, const Tensor& probs,
               const Tensor& v);
Tensor scale(Context& ctx, const char* step, const Tensor& in, float factor);
void scale_(Context& ctx, const char* step, Tensor& x, float factor);
Tensor copy(Context& ctx, const char* step, const Tensor& in);
void causal_fill_(Context& ctx, const char* step, const HeadLayout& layout, Tensor& scores,
                  float value);
Tensor softmax(Context& ctx, const char* step, const Tensor& in);
Tensor safe_softmax(Context& ctx, const char* step, const Tensor& in);
void scale_mask_softmax_(Context& ctx, const char* step, const HeadLayout& layout, Tensor& scores,
                         float factor);
Tensor convert(Context& ctx, const char* step, const Tensor& in, DType dtype);
void convert(Context& ctx, const char* step, const Tensor& in, Tensor& out);
Tensor upcast_cache_rows(Context& ctx, const char* step, const HeadLayout& layout,
                         const Tensor& cache);
void build_causal_mask(Context& ctx, const char* step, const HeadLayout& layout, Buffer& keep);
Tensor where(Context& ctx, const char* step, const Buffer& keep, const Tensor& scores);

}  // namespace attnscope::ops::attention
