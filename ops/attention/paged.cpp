// Paged attention's checks, its shape, and the gathered way to serve it (paged.h): the copies in
// and out of a sequence's compact tensors, dispatched per device as every step is
// (ops/dispatch.h).
#include "ops/attention/paged.h"

#include <algorithm>
#include <string>

#include "ops/check.h"
#include "ops/dispatch.h"
#include "profiler/scope.h"
#include "runtime/paged_kv_cache.h"

namespace attnscope::ops::attention {

RaggedShape ragged_shape_of(const PagedCall& call) {
  RaggedShape shape;
  shape.q_heads = call.q_heads();
  shape.kv_heads = call.kv_heads();
  shape.head_dim = call.head_dim();
  shape.dtype = call.q.dtype();
  shape.kv_dtype = call.key_blocks.dtype();
  shape.bf16_products = call.bf16_products;
  for (std::int64_t s = 0; s < call.batch->sequences(); ++s) {
    shape.lengths.push_back({call.batch->q_len(s), call.batch->kv_len(s)});
  }
  return shape;
}

void validate_paged_call(const Context& ctx, const PagedCall& call, const char* backend,
                         bool any_float_on_cpu) {
  for (const Tensor* t : {&call.q, &call.out}) {
    check(t->defined() && t->rank() == 3, backend, "q and out must be [N, Hq, D] tensors");
  }
  for (const Tensor* t : {&call.key_blocks, &call.value_blocks}) {
    check(t->defined() && t->rank() == 4, backend,
          "key and value blocks must be [blocks, Hkv, block_tokens, D] tensors");
  }
  check(call.batch != nullptr, backend, "a paged call needs its ragged batch");
  const RaggedBatch& batch = *call.batch;
  const std::int64_t rows = call.q.dim(0), q_heads = call.q_heads(), head_dim = call.head_dim();
  const std::int64_t kv_heads = call.kv_heads(), blocks = call.key_blocks.dim(0);
  require_shape(call.out, call.q.shape(), backend, "out");
  require_shape(call.key_blocks, {blocks, kv_heads, batch.block_tokens, head_dim}, backend,
                "key_blocks");
  require_shape(call.value_blocks, call.key_blocks.shape(), backend, "value_blocks");
  check(kv_heads > 0 && q_heads % kv_heads == 0, backend, [&] {
    return "query heads (" + std::to_string(q_heads) + ") must be a multiple of key/value heads (" +
           std::to_string(kv_heads) + ")";
  });
  const Device device = common_device(backend, {{call.q, "q"},
                                                {call.key_blocks, "key_blocks"},
                                                {call.value_blocks, "value_blocks"},
                                                {call.out, "out"}});
  check(device == ctx.device(), backend, [&] {
    return "the tensors are on " + std::string(device_name(device)) + " but the context runs on " +
           std::string(device_name(ctx.device()));
  });
  require_dtype(call.out, call.q.dtype(), backend, "out");
  require_dtype(call.value_blocks, call.key_blocks.dtype(), backend, "value_blocks");
  const std::string dtype_reason = dtype_refusal(device, call.q.dtype(), any_float_on_cpu);
  check(dtype_reason.empty(), backend, dtype_reason);
  const std::string cache_reason =
      kv_dtype_refusal(device, call.q.dtype(), call.key_blocks.dtype(), head_dim);
  check(cache_reason.empty(), backend, cache_reason);
  const std::int64_t sequences = batch.sequences();
  check(static_cast<std::int64_t>(batch.query_starts.size()) == sequences + 1 &&
            batch.query_starts.front() == 0 && batch.rows() == rows &&
            static_cast<std::int64_t>(batch.block_tables.size()) == sequences * batch.max_blocks,
        backend, "the ragged batch's tables do not match its sequences and q's rows");
  for (std::int64_t s = 0; s < sequences; ++s) {
    const std::int64_t q_len = batch.q_len(s), kv_len = batch.kv_len(s);
    check(1 <= q_len && q_len <= kv_len, backend, [&] {
      return "sequence " + std::to_string(s) + " has " + std::to_string(q_len) +
             " new tokens and a kv_len of " + std::to_string(kv_len);
    });
    const std::int64_t needed = (kv_len + batch.block_tokens - 1) / batch.block_tokens;
    check(needed <= batch.max_blocks, backend, [&] {
      return "sequence " + std::to_string(s) + " needs " + std::to_string(needed) +
             " blocks; its table has " + std::to_string(batch.max_blocks);
    });
    for (const std::int32_t block : batch.blocks(s).first(static_cast<std::size_t>(needed))) {
      check(0 <= block && block < blocks, backend, [&] {
        return "sequence " + std::to_string(s) + " names block " + std::to_string(block) + " of " +
               std::to_string(blocks);
      });
    }
  }
}

void attend_gathered(Context& ctx, const Backend& backend, const PagedCall& call) {
  const RaggedBatch& batch = *call.batch;
  const bool on_gpu = call.q.device() == Device::CUDA;
  const std::int64_t q_heads = call.q_heads(), kv_heads = call.kv_heads(), d = call.head_dim();
  for (std::int64_t s = 0; s < batch.sequences(); ++s) {
    const std::int64_t q_len = batch.q_len(s), kv_len = batch.kv_len(s);
    Call compact;
    compact.q = Tensor::empty({1, q_heads, q_len, d}, call.q.dtype(), ctx.allocator());
    compact.k = Tensor::empty({1, kv_heads, kv_len, d}, call.q.dtype(), ctx.allocator());
    compact.v = Tensor::empty({1, kv_heads, kv_len, d}, call.q.dtype(), ctx.allocator());
    compact.out = Tensor::empty({1, q_heads, q_len, d}, call.q.dtype(), ctx.allocator());
    compact.kv_len = kv_len;
    compact.scale = call.scale;
    {
      profiler::KernelStep step(ctx, "paged.gather");
      if (on_gpu) {
        if constexpr (kCudaBuild)
          cuda::gather_sequence(ctx, call, s, compact.q, compact.k, compact.v);
      } else {
        cpu::gather_sequence(ctx, call, s, compact.q, compact.k, compact.v);
      }
    }
    backend.attend(ctx, compact);
    profiler::KernelStep step(ctx, "paged.scatter");
    if (on_gpu) {
      if constexpr (kCudaBuild) cuda::scatter_sequence(ctx, call, s, compact.out);
    } else {
      cpu::scatter_sequence(ctx, call, s, compact.out);
    }
  }
}

CostModel ragged_cost_of(const RaggedShape& shape, std::size_t temporary_bytes, int steps) {
  CostModel total{temporary_bytes, steps, 0.0, 0};
  for (std::size_t s = 0; s < shape.lengths.size(); ++s) {
    const Shape one = shape.sequence(s);
    total.flops += cost_of(one, 0, 0).flops;
    // q, out, and the kv_len key and value rows in the blocks' dtype.
    total.bytes += storage_bytes(one.dtype, 2 * one.q_heads * one.q_len * one.head_dim) +
                   storage_bytes(shape.kv_dtype, 2 * one.kv_heads * one.kv_len * one.head_dim);
  }
  return total;
}

CostModel gathered_cost(const Context& ctx, const Backend& backend, const RaggedShape& shape) {
  std::size_t temporary_bytes = 0;
  int steps = 0;
  for (std::size_t s = 0; s < shape.lengths.size(); ++s) {
    const Shape one = shape.sequence(s);
    const CostModel own = backend.cost_model(ctx, one);
    const std::size_t copies = storage_bytes(
        one.dtype, one.head_dim * (2 * one.q_heads * one.q_len + 2 * one.kv_heads * one.kv_len));
    temporary_bytes = std::max(temporary_bytes, copies + own.temporary_bytes);
    steps += own.steps + 2;
  }
  return ragged_cost_of(shape, temporary_bytes, steps);
}

}  // namespace attnscope::ops::attention
