// `math` attention on the CPU: the generic, dtype-safe path of a library (PyTorch's SDPA MATH
// backend is the model). It serves any input dtype and every corner case, and pays for it:
//
//   q32, k32, v32 = q, k, v converted to f32        (3 copies, even when already f32)
//   mask          = causal mask rebuilt on every call  (Tq x Tk bytes)
//   q32 *= sqrt(scale); k32 *= sqrt(scale)          (the scale split over both operands)
//   scores        = q32 @ k32^T                     (batched GEMM)   -> new [B, Hq, Tq, Tk]
//   masked        = where(mask, scores, -inf)       (select)         -> new [B, Hq, Tq, Tk]
//   probs         = safe_softmax(masked)            (fully masked rows give 0, not NaN)
//   out32         = probs @ v32                     (batched GEMM)   -> new [B, Hq, Tq, D]
//   out           = out32 converted to out's dtype
//
// Cost model (S = B Hq Tq Tk, Q = B Hq Tq D, K = B Hkv Tk D): 11 steps per call; temporaries
// 4 (2 Q + 2 K + 3 S) + Tq Tk bytes, all live at the peak. Between the GEMMs it moves about as
// much as naive (~9 S), plus the conversions and the mask, which the hand-written backends
// never build: the generic path knows nothing about the caller, so it cannot skip any of it.
#include "ops/attention/math_cpu.h"

#include <cmath>
#include <limits>

#include "ops/attention/cost_models.h"
#include "ops/attention/cpu_steps.h"
#include "ops/softmax.h"
#include "profiler/scope.h"
#include "runtime/error.h"

namespace attnscope::ops::attention {

namespace {

class MathCpu final : public Backend {
 public:
  std::string_view name() const override { return "math"; }
  std::string_view summary() const override {
    return "generic safe path: f32 upcast, mask rebuilt per call, select, NaN-safe softmax";
  }

  CostModel cost_model(const Context& /*ctx*/, const Call& call) const override {
    return math_cost(call);
  }

  void forward(Context& ctx, const Call& call) const override {
    profiler::Scope scope(ctx, "attention.math", "attention");
    validate_call(call);
    check(call.q.device() == Device::CPU, "attention math", "this backend runs on the cpu");
    const HeadLayout layout = layout_of(call);
    HeadLayout compact = layout;  // the f32 copies hold only the kv_len valid rows
    compact.capacity = layout.kv_len;
    Allocator& allocator = ctx.allocator();
    const DType dtype = call.q.dtype();

    Tensor q32 = Tensor::empty(call.q.shape(), DType::F32, allocator);
    {
      profiler::Scope step(ctx, "math.upcast_q", "kernel");
      convert_elements(call.q.raw_data(), dtype, q32.raw_data(), DType::F32,
                       static_cast<std::size_t>(q32.numel()));
    }
    const Shape kv_shape = {layout.batch, layout.kv_heads, layout.kv_len, layout.head_dim};
    Tensor k32 = Tensor::empty(kv_shape, DType::F32, allocator);
    upcast_rows(ctx, "math.upcast_k", call.k, layout, k32);
    Tensor v32 = Tensor::empty(kv_shape, DType::F32, allocator);
    upcast_rows(ctx, "math.upcast_v", call.v, layout, v32);

    Buffer mask(allocator, static_cast<std::size_t>(layout.q_len * layout.kv_len));
    auto* keep = static_cast<std::uint8_t*>(mask.data());
    {
      profiler::Scope step(ctx, "math.build_causal_mask", "kernel");
      const std::int64_t first_position = layout.kv_len - layout.q_len;
      for (std::int64_t i = 0; i < layout.q_len; ++i) {
        for (std::int64_t j = 0; j < layout.kv_len; ++j) {
          keep[i * layout.kv_len + j] = j <= first_position + i;
        }
      }
    }
    const float root_scale = std::sqrt(call.scale);
    {
      profiler::Scope step(ctx, "math.scale_q", "kernel");
      scale(ctx, q32.data<float>(), q32.data<float>(), q32.numel(), root_scale);
    }
    {
      profiler::Scope step(ctx, "math.scale_k", "kernel");
      scale(ctx, k32.data<float>(), k32.data<float>(), k32.numel(), root_scale);
    }

    const Shape score_shape = {layout.batch, layout.q_heads, layout.q_len, layout.kv_len};
    Tensor scores = Tensor::empty(score_shape, DType::F32, allocator);
    {
      profiler::Scope step(ctx, "math.qk_gemm", "kernel");
      qk_gemm(ctx, compact, q32.data<float>(), k32.data<float>(), scores.data<float>());
    }
    Tensor masked = Tensor::empty(score_shape, DType::F32, allocator);
    {
      profiler::Scope step(ctx, "math.where", "kernel");
      const float* s = scores.data<float>();
      float* m = masked.data<float>();
      const std::int64_t block = layout.q_len * layout.kv_len;
      const float masked_value = -std::numeric_limits<float>::infinity();
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
      for (std::int64_t i = 0; i < scores.numel(); ++i) {
        m[i] = keep[i % block] ? s[i] : masked_value;
      }
    }
    Tensor probs = Tensor::empty(score_shape, DType::F32, allocator);
    safe_softmax(ctx, masked, probs);
    Tensor out32 = Tensor::empty(call.q.shape(), DType::F32, allocator);
    {
      profiler::Scope step(ctx, "math.pv_gemm", "kernel");
      pv_gemm(ctx, compact, probs.data<float>(), v32.data<float>(), out32.data<float>());
    }
    {
      profiler::Scope step(ctx, "math.downcast_out", "kernel");
      convert_elements(out32.raw_data(), DType::F32, call.out.raw_data(), dtype,
                       static_cast<std::size_t>(out32.numel()));
    }
  }

 private:
  // Copies the kv_len valid rows of every head of the cache `source` into f32 `dest`.
  static void upcast_rows(Context& ctx, const char* name, const Tensor& source,
                          const HeadLayout& layout, Tensor& dest) {
    profiler::Scope step(ctx, name, "kernel");
    const std::size_t element = dtype_size(source.dtype());
    const auto* src = static_cast<const std::uint8_t*>(source.raw_data());
    const std::int64_t rows = layout.kv_len * layout.head_dim;
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
    for (std::int64_t head = 0; head < layout.batch * layout.kv_heads; ++head) {
      const std::int64_t offset = head * layout.capacity * layout.head_dim;
      convert_elements(src + static_cast<std::size_t>(offset) * element, source.dtype(),
                       dest.data<float>() + head * rows, DType::F32,
                       static_cast<std::size_t>(rows));
    }
  }
};

}  // namespace

const Backend& math_cpu_backend() {
  static const MathCpu backend;
  return backend;
}

}  // namespace attnscope::ops::attention
