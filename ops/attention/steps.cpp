// The eager backends' steps (steps.h): one profiler scope each, the checks every device shares,
// then the body for the device the tensors live on (ops/dispatch.h explains the pattern).
#include "ops/attention/steps.h"

#include "ops/cast.h"
#include "ops/check.h"
#include "ops/dispatch.h"
#include "ops/softmax.h"

namespace attnscope::ops::attention {

namespace {

// Throws unless `in` and `out` have one dtype and as many elements; returns their device.
Device same_sized(const char* step, const Tensor& in, const Tensor& out) {
  const Device device = common_device(step, {{in, "in"}, {out, "out"}});
  require_dtype(out, in.dtype(), step, "out");
  check(out.numel() == in.numel(), step, "in and out must have as many elements");
  return device;
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

std::size_t score_bytes(const Call& call) {
  return static_cast<std::size_t>(layout_of(call).score_elements()) * dtype_size(call.q.dtype());
}

void qk_gemm(Context& ctx, const char* step, const HeadLayout& layout, const Tensor& q,
             const Tensor& k, Tensor& scores) {
  const Device device = common_device(step, {{q, "q"}, {k, "k"}, {scores, "scores"}});
  require_dtype(k, q.dtype(), step, "k");
  require_dtype(scores, q.dtype(), step, "scores");
  require_shape(scores, {layout.batch, layout.q_heads, layout.q_len, layout.kv_len}, step,
                "scores");
  run_step(
      ctx, step, device, [&] { cpu::qk_gemm(ctx, layout, q, k, scores); },
      [&] { cuda::qk_gemm(ctx, layout, q, k, scores); });
}

void pv_gemm(Context& ctx, const char* step, const HeadLayout& layout, const Tensor& probs,
             const Tensor& v, Tensor& out) {
  const Device device = common_device(step, {{probs, "probs"}, {v, "v"}, {out, "out"}});
  require_dtype(v, probs.dtype(), step, "v");
  require_dtype(out, probs.dtype(), step, "out");
  require_shape(out, {layout.batch, layout.q_heads, layout.q_len, layout.head_dim}, step, "out");
  run_step(
      ctx, step, device, [&] { cpu::pv_gemm(ctx, layout, probs, v, out); },
      [&] { cuda::pv_gemm(ctx, layout, probs, v, out); });
}

void scale(Context& ctx, const char* step, const Tensor& in, Tensor& out, float factor) {
  run_step(
      ctx, step, same_sized(step, in, out), [&] { cpu::scale(ctx, in, out, factor); },
      [&] { cuda::scale(ctx, in, out, factor); });
}

void copy(Context& ctx, const char* step, const Tensor& in, Tensor& out) {
  run_step(
      ctx, step, same_sized(step, in, out), [&] { cpu::copy(ctx, in, out); },
      [&] { cuda::copy(ctx, in, out); });
}

void causal_fill(Context& ctx, const char* step, const HeadLayout& layout, Tensor& scores,
                 float value) {
  const Device device = common_device(step, {{scores, "scores"}});
  require_shape(scores, {layout.batch, layout.q_heads, layout.q_len, layout.kv_len}, step,
                "scores");
  run_step(
      ctx, step, device, [&] { cpu::causal_fill(ctx, layout, scores, value); },
      [&] { cuda::causal_fill(ctx, layout, scores, value); });
}

void softmax(Context& ctx, const char* step, const Tensor& in, Tensor& out) {
  require_shape(out, in.shape(), step, "out");
  run_step(
      ctx, step, same_sized(step, in, out), [&] { ops::cpu::softmax(ctx, in, out); },
      [&] { ops::cuda::softmax(ctx, in, out); });
}

void safe_softmax(Context& ctx, const char* step, const Tensor& in, Tensor& out) {
  require_shape(out, in.shape(), step, "out");
  run_step(
      ctx, step, same_sized(step, in, out), [&] { ops::cpu::safe_softmax(ctx, in, out); },
      [&] { ops::cuda::safe_softmax(ctx, in, out); });
}

void scale_mask_softmax(Context& ctx, const char* step, const HeadLayout& layout, Tensor& scores,
                        float factor) {
  const Device device = common_device(step, {{scores, "scores"}});
  require_shape(scores, {layout.batch, layout.q_heads, layout.q_len, layout.kv_len}, step,
                "scores");
  run_step(
      ctx, step, device, [&] { cpu::scale_mask_softmax(ctx, layout, scores, factor); },
      [&] { cuda::scale_mask_softmax(ctx, layout, scores, factor); });
}

void convert(Context& ctx, const char* step, const Tensor& in, Tensor& out) {
  const Device device = common_device(step, {{in, "in"}, {out, "out"}});
  require_shape(out, in.shape(), step, "out");
  run_step(
      ctx, step, device, [&] { ops::cpu::cast(ctx, in, out); },
      [&] { ops::cuda::cast(ctx, in, out); });
}

void upcast_cache_rows(Context& ctx, const char* step, const HeadLayout& layout,
                       const Tensor& cache, Tensor& out) {
  const Device device = common_device(step, {{cache, "cache"}, {out, "out"}});
  require_dtype(out, DType::F32, step, "out");
  require_shape(out, {layout.batch, layout.kv_heads, layout.kv_len, layout.head_dim}, step, "out");
  run_step(
      ctx, step, device, [&] { cpu::upcast_cache_rows(ctx, layout, cache, out); },
      [&] { cuda::upcast_cache_rows(ctx, layout, cache, out); });
}

void build_causal_mask(Context& ctx, const char* step, const HeadLayout& layout, Buffer& keep) {
  check(keep.size() >= static_cast<std::size_t>(layout.q_len * layout.kv_len), step,
        "the mask needs Tq x Tk bytes");
  run_step(
      ctx, step, keep.device(), [&] { cpu::build_causal_mask(ctx, layout, keep); },
      [&] { cuda::build_causal_mask(ctx, layout, keep); });
}

void where(Context& ctx, const char* step, const Buffer& keep, const Tensor& scores,
           Tensor& masked) {
  const Device device = same_sized(step, scores, masked);
  require_dtype(scores, DType::F32, step, "scores");
  check(keep.device() == device, step, "the mask and the scores must be on one device");
  check(
      scores.rank() == 4 && keep.size() >= static_cast<std::size_t>(scores.dim(2) * scores.dim(3)),
      step, "the mask needs Tq x Tk bytes");
  run_step(
      ctx, step, device, [&] { cpu::where(ctx, keep, scores, masked); },
      [&] { cuda::where(ctx, keep, scores, masked); });
}

}  // namespace attnscope::ops::attention
