// The eager backends' steps (steps.h): the checks every device shares, one profiler scope each,
// then the body for the device the tensors live on, as every op dispatches (ops/dispatch.h):
// cuda::step (cuda/steps.cu) or cpu::step (cpu/steps.cpp).
#include "ops/attention/steps.h"

#include "ops/attention/cpu/steps.h"
#include "ops/attention/cuda/steps.h"
#include "ops/attention/paged.h"
#include "ops/cast.h"
#include "ops/check.h"
#include "ops/dispatch.h"
#include "ops/softmax.h"
#include "profiler/scope.h"
#include "runtime/attention_tap.h"

namespace attnscope::ops::attention {

namespace {

void require_score_shape(const Tensor& scores, const HeadLayout& layout, const char* step) {
  require_shape(scores, {layout.batch, layout.q_heads, layout.q_len, layout.kv_len}, step,
                "scores");
}

}  // namespace

Recipe::Recipe(std::string_view name, std::string_view summary, CostFunction cost,
               StepsFunction steps, bool any_float_on_cpu)
    : name_(name),
      summary_(summary),
      scope_("attention." + name_),
      paged_scope_(scope_ + ".paged"),
      where_("attention " + name_),
      cost_(cost),
      steps_(steps),
      any_float_on_cpu_(any_float_on_cpu) {}

CostModel Recipe::cost_model(const Context& /*ctx*/, const Shape& shape) const {
  return cost_(shape);
}

std::string Recipe::refusal(const Context& ctx, const Shape& shape) const {
  return dtype_refusal(ctx.device(), shape.dtype, any_float_on_cpu_);
}

Plan Recipe::plan(const Context& ctx, const Shape& shape) const {
  Plan plan;
  plan.path = "eager recipe of " + std::to_string(cost_(shape).steps) + " steps";
  plan.why = "an eager recipe runs the same steps whatever the shape: " + summary_;
  if (ctx.device() == Device::CUDA) {
    plan.engine =
        "the two GEMMs are cuBLAS strided batched GEMMs over the (batch, head) pairs (cuBLAS's "
        "heuristics pick the kernel: the trace names it); every other step is one kernel";
  } else {
    plan.engine = "the two GEMMs are Eigen matrix products, one per (batch, head), the " +
                  std::to_string(shape.heads()) + " heads split over " +
                  std::to_string(ctx.threads()) +
                  " threads; every other step is one parallel pass over the score rows";
  }
  return plan;
}

void Recipe::attend(Context& ctx, const Call& call) const {
  profiler::Scope scope(ctx, scope_.c_str(), "attention");
  validate_call(ctx, call, *this, where_.c_str());
  if (ctx.profiler() != nullptr) {  // the cost model, for the profile's FLOP/s and GB/s
    const CostModel cost = cost_(shape_of(call));
    scope.set_work(cost.flops, static_cast<double>(cost.bytes_with_temporaries()));
  }
  Tensor out = call.out;  // a handle on the caller's output, not a copy of its bytes
  steps_(ctx, call, layout_of(call), out);
}

void Recipe::attend_paged(Context& ctx, const PagedCall& call) const {
  profiler::Scope scope(ctx, paged_scope_.c_str(), "attention");
  validate_paged_call(ctx, call, where_.c_str(), any_float_on_cpu_);
  if (ctx.profiler() != nullptr) {
    const CostModel cost = paged_cost_model(ctx, ragged_shape_of(call));
    scope.set_work(cost.flops, static_cast<double>(cost.bytes_with_temporaries()));
  }
  attend_gathered(ctx, *this, call);
}

CostModel Recipe::paged_cost_model(const Context& ctx, const RaggedShape& shape) const {
  return gathered_cost(ctx, *this, shape);
}

std::size_t score_bytes(const Shape& shape) {
  return static_cast<std::size_t>(shape.score_elements()) * dtype_size(shape.dtype);
}

Tensor qk_gemm(Context& ctx, const char* step, const HeadLayout& layout, const Tensor& q,
               const Tensor& k) {
  const Device device = common_device(step, {{q, "q"}, {k, "k"}});
  require_dtype(k, q.dtype(), step, "k");
  profiler::KernelStep scope(ctx, step);
  Tensor scores = Tensor::empty({layout.batch, layout.q_heads, layout.q_len, layout.kv_len},
                                q.dtype(), ctx.allocator());
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::qk_gemm(ctx, layout, q, k, scores);
  } else {
    cpu::qk_gemm(ctx, layout, q, k, scores);
  }
  return scores;
}

void pv_gemm(Context& ctx, const char* step, const HeadLayout& layout, const Tensor& probs,
             const Tensor& v, Tensor& out) {
  const Device device = common_device(step, {{probs, "probs"}, {v, "v"}, {out, "out"}});
  require_dtype(v, probs.dtype(), step, "v");
  require_dtype(out, probs.dtype(), step, "out");
  require_score_shape(probs, layout, step);
  require_shape(out, {layout.batch, layout.q_heads, layout.q_len, layout.head_dim}, step, "out");
  // Every eager recipe's probabilities pass here: the one place a tap sees them.
  if (AttentionTap* tap = ctx.attention_tap()) tap->probabilities(ctx, probs);
  profiler::KernelStep scope(ctx, step);
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::pv_gemm(ctx, layout, probs, v, out);
  } else {
    cpu::pv_gemm(ctx, layout, probs, v, out);
  }
}

Tensor pv_gemm(Context& ctx, const char* step, const HeadLayout& layout, const Tensor& probs,
               const Tensor& v) {
  Tensor out = Tensor::empty({layout.batch, layout.q_heads, layout.q_len, layout.head_dim},
                             probs.dtype(), ctx.allocator());
  pv_gemm(ctx, step, layout, probs, v, out);
  return out;
}

Tensor scale(Context& ctx, const char* step, const Tensor& in, float factor) {
  const Device device = common_device(step, {{in, "in"}});
  profiler::KernelStep scope(ctx, step);
  Tensor out = Tensor::empty(in.shape(), in.dtype(), ctx.allocator());
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::scale(ctx, in, out, factor);
  } else {
    cpu::scale(ctx, in, out, factor);
  }
  return out;
}

void scale_(Context& ctx, const char* step, Tensor& x, float factor) {
  const Device device = common_device(step, {{x, "x"}});
  profiler::KernelStep scope(ctx, step);
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::scale(ctx, x, x, factor);
  } else {
    cpu::scale(ctx, x, x, factor);
  }
}

Tensor copy(Context& ctx, const char* step, const Tensor& in) {
  const Device device = common_device(step, {{in, "in"}});
  profiler::KernelStep scope(ctx, step);
  Tensor out = Tensor::empty(in.shape(), in.dtype(), ctx.allocator());
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::copy(ctx, in, out);
  } else {
    cpu::copy(ctx, in, out);
  }
  return out;
}

void causal_fill_(Context& ctx, const char* step, const HeadLayout& layout, Tensor& scores,
                  float value) {
  const Device device = common_device(step, {{scores, "scores"}});
  require_score_shape(scores, layout, step);
  profiler::KernelStep scope(ctx, step);
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::causal_fill(ctx, layout, scores, value);
  } else {
    cpu::causal_fill(ctx, layout, scores, value);
  }
}

Tensor softmax(Context& ctx, const char* step, const Tensor& in) {
  const Device device = common_device(step, {{in, "in"}});
  profiler::KernelStep scope(ctx, step);
  Tensor out = Tensor::empty(in.shape(), in.dtype(), ctx.allocator());
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) ops::cuda::softmax(ctx, in, out);
  } else {
    ops::cpu::softmax(ctx, in, out);
  }
  return out;
}

Tensor safe_softmax(Context& ctx, const char* step, const Tensor& in) {
  const Device device = common_device(step, {{in, "in"}});
  profiler::KernelStep scope(ctx, step);
  Tensor out = Tensor::empty(in.shape(), in.dtype(), ctx.allocator());
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) ops::cuda::safe_softmax(ctx, in, out);
  } else {
    ops::cpu::safe_softmax(ctx, in, out);
  }
  return out;
}

void scale_mask_softmax_(Context& ctx, const char* step, const HeadLayout& layout, Tensor& scores,
                         float factor) {
  const Device device = common_device(step, {{scores, "scores"}});
  require_score_shape(scores, layout, step);
  profiler::KernelStep scope(ctx, step);
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::scale_mask_softmax(ctx, layout, scores, factor);
  } else {
    cpu::scale_mask_softmax(ctx, layout, scores, factor);
  }
}

void convert(Context& ctx, const char* step, const Tensor& in, Tensor& out) {
  const Device device = common_device(step, {{in, "in"}, {out, "out"}});
  require_shape(out, in.shape(), step, "out");
  profiler::KernelStep scope(ctx, step);
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) ops::cuda::cast(ctx, in, out);
  } else {
    ops::cpu::cast(ctx, in, out);
  }
}

Tensor convert(Context& ctx, const char* step, const Tensor& in, DType dtype) {
  Tensor out = Tensor::empty(in.shape(), dtype, ctx.allocator());
  convert(ctx, step, in, out);
  return out;
}

Tensor upcast_cache_rows(Context& ctx, const char* step, const HeadLayout& layout,
                         const Tensor& cache) {
  const Device device = common_device(step, {{cache, "cache"}});
  profiler::KernelStep scope(ctx, step);
  Tensor out = Tensor::empty({layout.batch, layout.kv_heads, layout.kv_len, layout.head_dim},
                             DType::F32, ctx.allocator());
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::upcast_cache_rows(ctx, layout, cache, out);
  } else {
    cpu::upcast_cache_rows(ctx, layout, cache, out);
  }
  return out;
}

void build_causal_mask(Context& ctx, const char* step, const HeadLayout& layout, Buffer& keep) {
  check(keep.size() >= static_cast<std::size_t>(layout.q_len * layout.kv_len), step,
        "the mask needs Tq x Tk bytes");
  profiler::KernelStep scope(ctx, step);
  if (keep.device() == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::build_causal_mask(ctx, layout, keep);
  } else {
    cpu::build_causal_mask(ctx, layout, keep);
  }
}

Tensor where(Context& ctx, const char* step, const Buffer& keep, const Tensor& scores) {
  const Device device = common_device(step, {{scores, "scores"}});
  require_dtype(scores, DType::F32, step, "scores");
  check(keep.device() == device, step, "the mask and the scores must be on one device");
  check(
      scores.rank() == 4 && keep.size() >= static_cast<std::size_t>(scores.dim(2) * scores.dim(3)),
      step, "the mask needs Tq x Tk bytes");
  profiler::KernelStep scope(ctx, step);
  Tensor masked = Tensor::empty(scores.shape(), DType::F32, ctx.allocator());
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::where(ctx, keep, scores, masked);
  } else {
    cpu::where(ctx, keep, scores, masked);
  }
  return masked;
}

}  // namespace attnscope::ops::attention
