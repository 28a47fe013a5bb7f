// The eager backends' steps (steps.h): the checks every device shares, one profiler scope each,
// then the body for the device the tensors live on, from that device's StepBodies table.
#include "ops/attention/steps.h"

#include "ops/check.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"

namespace attnscope::ops::attention {

namespace {

// Throws unless `in` and `out` have one dtype and as many elements; returns their device.
Device same_sized(const char* step, const Tensor& in, const Tensor& out) {
  const Device device = common_device(step, {{in, "in"}, {out, "out"}});
  require_dtype(out, in.dtype(), step, "out");
  check(out.numel() == in.numel(), step, "in and out must have as many elements");
  return device;
}

void require_score_shape(const Tensor& scores, const HeadLayout& layout, const char* step) {
  require_shape(scores, {layout.batch, layout.q_heads, layout.q_len, layout.kv_len}, step,
                "scores");
}

// The bodies for `device`. A CPU-only build cannot make a CUDA tensor, so it never asks for the
// CUDA table (and does not reference it: it does not exist there).
const StepBodies& bodies_for(Device device) {
  if constexpr (kCudaBuild) {
    if (device == Device::CUDA) return cuda_step_bodies();
  }
  return cpu_step_bodies();
}

}  // namespace

Recipe::Recipe(std::string_view name, std::string_view summary, CostFunction cost,
               StepsFunction steps, bool any_float_on_cpu)
    : name_(name),
      summary_(summary),
      scope_("attention." + name_),
      where_("attention " + name_),
      cost_(cost),
      steps_(steps),
      any_float_on_cpu_(any_float_on_cpu) {}

CostModel Recipe::cost_model(const Context& /*ctx*/, const Call& call) const { return cost_(call); }

void Recipe::forward(Context& ctx, const Call& call) const {
  profiler::Scope scope(ctx, scope_.c_str(), "attention");
  validate_call(ctx, call, where_.c_str(), any_float_on_cpu_);
  Tensor out = call.out;  // a handle on the caller's output, not a copy of its bytes
  steps_(ctx, call, layout_of(call), out);
}

Tensor new_scores(Context& ctx, const Call& call, DType dtype) {
  return Tensor::empty({call.batch(), call.q_heads(), call.q_len(), call.kv_len}, dtype,
                       ctx.allocator());
}

Tensor new_scores(Context& ctx, const Call& call) { return new_scores(ctx, call, call.q.dtype()); }

std::size_t score_bytes(const Call& call) {
  return static_cast<std::size_t>(layout_of(call).score_elements()) * dtype_size(call.q.dtype());
}

void qk_gemm(Context& ctx, const char* step, const HeadLayout& layout, const Tensor& q,
             const Tensor& k, Tensor& scores) {
  const Device device = common_device(step, {{q, "q"}, {k, "k"}, {scores, "scores"}});
  require_dtype(k, q.dtype(), step, "k");
  require_dtype(scores, q.dtype(), step, "scores");
  require_score_shape(scores, layout, step);
  profiler::KernelStep scope(ctx, step);
  bodies_for(device).qk_gemm(ctx, layout, q, k, scores);
}

void pv_gemm(Context& ctx, const char* step, const HeadLayout& layout, const Tensor& probs,
             const Tensor& v, Tensor& out) {
  const Device device = common_device(step, {{probs, "probs"}, {v, "v"}, {out, "out"}});
  require_dtype(v, probs.dtype(), step, "v");
  require_dtype(out, probs.dtype(), step, "out");
  require_shape(out, {layout.batch, layout.q_heads, layout.q_len, layout.head_dim}, step, "out");
  profiler::KernelStep scope(ctx, step);
  bodies_for(device).pv_gemm(ctx, layout, probs, v, out);
}

void scale(Context& ctx, const char* step, const Tensor& in, Tensor& out, float factor) {
  const Device device = same_sized(step, in, out);
  profiler::KernelStep scope(ctx, step);
  bodies_for(device).scale(ctx, in, out, factor);
}

void copy(Context& ctx, const char* step, const Tensor& in, Tensor& out) {
  const Device device = same_sized(step, in, out);
  profiler::KernelStep scope(ctx, step);
  bodies_for(device).copy(ctx, in, out);
}

void causal_fill(Context& ctx, const char* step, const HeadLayout& layout, Tensor& scores,
                 float value) {
  const Device device = common_device(step, {{scores, "scores"}});
  require_score_shape(scores, layout, step);
  profiler::KernelStep scope(ctx, step);
  bodies_for(device).causal_fill(ctx, layout, scores, value);
}

void softmax(Context& ctx, const char* step, const Tensor& in, Tensor& out) {
  const Device device = same_sized(step, in, out);
  require_shape(out, in.shape(), step, "out");
  profiler::KernelStep scope(ctx, step);
  bodies_for(device).softmax(ctx, in, out);
}

void safe_softmax(Context& ctx, const char* step, const Tensor& in, Tensor& out) {
  const Device device = same_sized(step, in, out);
  require_shape(out, in.shape(), step, "out");
  profiler::KernelStep scope(ctx, step);
  bodies_for(device).safe_softmax(ctx, in, out);
}

void scale_mask_softmax(Context& ctx, const char* step, const HeadLayout& layout, Tensor& scores,
                        float factor) {
  const Device device = common_device(step, {{scores, "scores"}});
  require_score_shape(scores, layout, step);
  profiler::KernelStep scope(ctx, step);
  bodies_for(device).scale_mask_softmax(ctx, layout, scores, factor);
}

void convert(Context& ctx, const char* step, const Tensor& in, Tensor& out) {
  const Device device = common_device(step, {{in, "in"}, {out, "out"}});
  require_shape(out, in.shape(), step, "out");
  profiler::KernelStep scope(ctx, step);
  bodies_for(device).convert(ctx, in, out);
}

void upcast_cache_rows(Context& ctx, const char* step, const HeadLayout& layout,
                       const Tensor& cache, Tensor& out) {
  const Device device = common_device(step, {{cache, "cache"}, {out, "out"}});
  require_dtype(out, DType::F32, step, "out");
  require_shape(out, {layout.batch, layout.kv_heads, layout.kv_len, layout.head_dim}, step, "out");
  profiler::KernelStep scope(ctx, step);
  bodies_for(device).upcast_cache_rows(ctx, layout, cache, out);
}

void build_causal_mask(Context& ctx, const char* step, const HeadLayout& layout, Buffer& keep) {
  check(keep.size() >= static_cast<std::size_t>(layout.q_len * layout.kv_len), step,
        "the mask needs Tq x Tk bytes");
  profiler::KernelStep scope(ctx, step);
  bodies_for(keep.device()).build_causal_mask(ctx, layout, keep);
}

void where(Context& ctx, const char* step, const Buffer& keep, const Tensor& scores,
           Tensor& masked) {
  const Device device = same_sized(step, scores, masked);
  require_dtype(scores, DType::F32, step, "scores");
  check(keep.device() == device, step, "the mask and the scores must be on one device");
  check(
      scores.rank() == 4 && keep.size() >= static_cast<std::size_t>(scores.dim(2) * scores.dim(3)),
      step, "the mask needs Tq x Tk bytes");
  profiler::KernelStep scope(ctx, step);
  bodies_for(device).where(ctx, keep, scores, masked);
}

}  // namespace attnscope::ops::attention
