// ops::head_rms_norm_: checks, then the cpu loop or the cuda kernel (ops/dispatch.h explains the
// pattern).
#include "ops/head_rms_norm.h"

#include "ops/check.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"

namespace attnscope::ops {

void head_rms_norm_(Context& ctx, Tensor& qkv, const Tensor& q_weight, const Tensor& k_weight,
                    std::int64_t q_heads, std::int64_t kv_heads, float eps) {
  profiler::Scope scope(ctx, "head_rms_norm");
  const Device device = common_device(
      "head_rms_norm", {{qkv, "qkv"}, {q_weight, "q_weight"}, {k_weight, "k_weight"}});
  require_float(qkv, device, "head_rms_norm", "qkv");
  require_dtype(q_weight, qkv.dtype(), "head_rms_norm", "q_weight");
  require_dtype(k_weight, qkv.dtype(), "head_rms_norm", "k_weight");
  check(qkv.rank() == 2, "head_rms_norm", "qkv must be [N, (Hq + 2 Hkv) D]");
  check(q_weight.rank() == 1 && q_weight.dim(0) > 0, "head_rms_norm", "q_weight must be [D]");
  const std::int64_t head_dim = q_weight.dim(0);
  require_shape(k_weight, {head_dim}, "head_rms_norm", "k_weight");
  check(q_heads > 0 && kv_heads > 0 && qkv.dim(1) == (q_heads + 2 * kv_heads) * head_dim,
        "head_rms_norm", [&] {
          return "qkv's rows hold " + std::to_string(qkv.dim(1)) + " values, not (" +
                 std::to_string(q_heads) + " + 2 x " + std::to_string(kv_heads) + ") heads of " +
                 std::to_string(head_dim);
        });
  check(eps >= 0.0f, "head_rms_norm", "eps must not be negative");
  const double normed = static_cast<double>(qkv.dim(0) * (q_heads + kv_heads) * head_dim);
  scope.set_work(4.0 * normed,  // the cost in head_rms_norm.h
                 2.0 * normed * static_cast<double>(dtype_size(qkv.dtype())));
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild)
      cuda::head_rms_norm_(ctx, qkv, q_weight, k_weight, q_heads, kv_heads, eps);
    return;
  }
  cpu::head_rms_norm_(ctx, qkv, q_weight, k_weight, q_heads, kv_heads, eps);
}

}  // namespace attnscope::ops
