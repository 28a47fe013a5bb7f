// ops::split_qkv and ops::merge_heads: checks, then the cpu copies or the cuda kernels
// (ops/dispatch.h explains the pattern).
#include "ops/heads.h"

#include <string>

#include "ops/check.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"

namespace attnscope::ops {

void split_qkv(Context& ctx, const Tensor& qkv, Tensor& q_out, Tensor& k_cache, Tensor& v_cache,
               std::int64_t start) {
  profiler::Scope scope(ctx, "split_qkv");
  const Device device = common_device(
      "split_qkv", {{qkv, "qkv"}, {q_out, "q_out"}, {k_cache, "k_cache"}, {v_cache, "v_cache"}});
  require_float(qkv, device, "split_qkv", "qkv");
  require_dtype(q_out, qkv.dtype(), "split_qkv", "q_out");
  require_dtype(k_cache, qkv.dtype(), "split_qkv", "k_cache");
  require_dtype(v_cache, qkv.dtype(), "split_qkv", "v_cache");
  check(q_out.rank() == 4 && k_cache.rank() == 4, "split_qkv", "q_out and caches must be 4-D");
  const QkvSplit s = QkvSplit::of(q_out, k_cache);
  check(s.kv_heads >= 1 && s.heads % s.kv_heads == 0, "split_qkv", [&] {
    return "the caches' " + std::to_string(s.kv_heads) + " heads must divide q_out's " +
           std::to_string(s.heads);
  });
  require_shape(qkv, {s.batch, s.tokens, s.row_width()}, "split_qkv", "qkv");
  require_shape(k_cache, {s.batch, s.kv_heads, s.capacity, s.head_dim}, "split_qkv", "k_cache");
  require_shape(v_cache, k_cache.shape(), "split_qkv", "v_cache");
  check(0 <= start && start + s.tokens <= s.capacity, "split_qkv", [&] {
    return "appending " + std::to_string(s.tokens) + " tokens at " + std::to_string(start) +
           " overflows a cache of " + std::to_string(s.capacity);
  });
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::split_qkv(ctx, qkv, q_out, k_cache, v_cache, start);
    return;
  }
  cpu::split_qkv(ctx, qkv, q_out, k_cache, v_cache, start);
}

void merge_heads(Context& ctx, const Tensor& x, Tensor& out) {
  profiler::Scope scope(ctx, "merge_heads");
  const Device device = common_device("merge_heads", {{x, "x"}, {out, "out"}});
  require_float(x, device, "merge_heads", "x");
  require_dtype(out, x.dtype(), "merge_heads", "out");
  check(x.rank() == 4, "merge_heads", "x must be 4-D");
  require_shape(out, {x.dim(0), x.dim(2), x.dim(1) * x.dim(3)}, "merge_heads", "out");
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::merge_heads(ctx, x, out);
    return;
  }
  cpu::merge_heads(ctx, x, out);
}

}  // namespace attnscope::ops
