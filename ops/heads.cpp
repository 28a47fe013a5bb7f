// ops::split_qkv and ops::merge_heads: checks, then the cpu copies or the cuda kernels
// (ops/dispatch.h explains the pattern).
#include "ops/heads.h"

#include <string>

#include "ops/check.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"
#include "runtime/paged_kv_cache.h"

namespace attnscope::ops {

void split_qkv(Context& ctx, const Tensor& qkv, Tensor& q_out, Tensor& k_cache, Tensor& v_cache,
               const Tensor& positions) {
  profiler::Scope scope(ctx, "split_qkv");
  const Device device = common_device("split_qkv", {{qkv, "qkv"},
                                                    {q_out, "q_out"},
                                                    {k_cache, "k_cache"},
                                                    {v_cache, "v_cache"},
                                                    {positions, "positions"}});
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
  require_dtype(positions, DType::I32, "split_qkv", "positions");
  require_shape(positions, {s.batch * s.tokens}, "split_qkv", "positions");
  // A copy: each row read and written, each position read.
  scope.set_work(0,
                 2.0 * static_cast<double>(qkv.nbytes()) + static_cast<double>(positions.nbytes()));
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::split_qkv(ctx, qkv, q_out, k_cache, v_cache, positions);
    return;
  }
  for (std::int64_t i = 0; i < positions.numel(); ++i) {
    const std::int32_t position = positions.data<std::int32_t>()[i];
    check(0 <= position && position < s.capacity, "split_qkv", [&] {
      return "token " + std::to_string(i) + "'s position " + std::to_string(position) +
             " is outside a cache of " + std::to_string(s.capacity);
    });
  }
  cpu::split_qkv(ctx, qkv, q_out, k_cache, v_cache, positions);
}

void split_qkv_paged(Context& ctx, const Tensor& qkv, Tensor& q_out, Tensor& key_blocks,
                     Tensor& value_blocks, const Tensor& slots) {
  profiler::Scope scope(ctx, "split_qkv_paged");
  const char* op = "split_qkv_paged";
  const Device device = common_device(op, {{qkv, "qkv"},
                                           {q_out, "q_out"},
                                           {key_blocks, "key_blocks"},
                                           {value_blocks, "value_blocks"},
                                           {slots, "slots"}});
  require_float(qkv, device, op, "qkv");
  require_dtype(q_out, qkv.dtype(), op, "q_out");
  require_dtype(value_blocks, key_blocks.dtype(), op, "value_blocks");
  require_dtype(slots, DType::I32, op, "slots");
  check(qkv.rank() == 2 && q_out.rank() == 3 && key_blocks.rank() == 4, op,
        "qkv must be [N, W], q_out [N, Hq, D] and the blocks [blocks, Hkv, block_tokens, D]");
  const std::int64_t rows = qkv.dim(0), heads = q_out.dim(1), head_dim = q_out.dim(2);
  const std::string cache_reason =
      kv_dtype_refusal(device, qkv.dtype(), key_blocks.dtype(), head_dim);
  check(cache_reason.empty(), op, cache_reason);
  const std::int64_t kv_heads = key_blocks.dim(1);
  check(kv_heads >= 1 && heads % kv_heads == 0, op, "the blocks' heads must divide q_out's");
  require_shape(q_out, {rows, heads, head_dim}, op, "q_out");
  require_shape(qkv, {rows, (heads + 2 * kv_heads) * head_dim}, op, "qkv");
  require_shape(key_blocks, {key_blocks.dim(0), kv_heads, key_blocks.dim(2), head_dim}, op,
                "key_blocks");
  require_shape(value_blocks, key_blocks.shape(), op, "value_blocks");
  require_shape(slots, {rows}, op, "slots");
  scope.set_work(0, 2.0 * static_cast<double>(qkv.nbytes()) + static_cast<double>(slots.nbytes()));
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild)
      cuda::split_qkv_paged(ctx, qkv, q_out, key_blocks, value_blocks, slots);
    return;
  }
  const std::int64_t slot_count = key_blocks.dim(0) * key_blocks.dim(2);
  for (std::int64_t n = 0; n < rows; ++n) {
    const std::int32_t slot = slots.data<std::int32_t>()[n];
    check(0 <= slot && slot < slot_count, op, [&] {
      return "slot " + std::to_string(slot) + " of row " + std::to_string(n) + " is outside the " +
             std::to_string(slot_count) + " slots of the blocks";
    });
  }
  cpu::split_qkv_paged(ctx, qkv, q_out, key_blocks, value_blocks, slots);
}

void merge_heads(Context& ctx, const Tensor& x, Tensor& out) {
  profiler::Scope scope(ctx, "merge_heads");
  const Device device = common_device("merge_heads", {{x, "x"}, {out, "out"}});
  require_float(x, device, "merge_heads", "x");
  require_dtype(out, x.dtype(), "merge_heads", "out");
  check(x.rank() == 4, "merge_heads", "x must be 4-D");
  require_shape(out, {x.dim(0), x.dim(2), x.dim(1) * x.dim(3)}, "merge_heads", "out");
  scope.set_work(0, static_cast<double>(x.nbytes() + out.nbytes()));  // a copy: no FLOPs
  if (device == Device::CUDA) {
    if constexpr (kCudaBuild) cuda::merge_heads(ctx, x, out);
    return;
  }
  cpu::merge_heads(ctx, x, out);
}

}  // namespace attnscope::ops
