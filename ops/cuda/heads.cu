// ops::split_qkv and ops::merge_heads on a GPU: pure copies between layouts, one thread per
// element, 256 per block, one launch each.
//
// split_qkv (the KV-cache append): thread i takes element i of qkv [B, T, (Hq + 2 Hkv) D], so
// reads are coalesced; it decodes i into (b, t, head h of the row, d) and writes
//   h < Hq:               q_out  [b, h, t, d]
//   h - Hq < Hkv:         k_cache[b, h - Hq, p, d]          p = positions[b T + t]
//   else:                 v_cache[b, h - Hq - Hkv, p, d]
// Consecutive threads share (b, t, h) and differ in d, so writes are coalesced in runs of
// D elements. Only the tokens' own cache rows are touched; a position outside [0, S) writes
// nothing.
// split_qkv_paged: the same, row n's keys and values written at slot slots[n] of the blocks
//   key_blocks[slot / bt, g, slot % bt, d] (value_blocks likewise); a slot outside the blocks
//   writes nothing (the engine gives every token a slot of its own blocks).
// merge_heads: thread i takes element i of out [B, T, H D] and reads x [b, h, t, d].
// Cost: each element read and written once (split_qkv: B T (Hq + 2 Hkv) D elements;
// merge_heads: B T Hq D).
// (In the model, an attention kernel that wrote [B, T, H, D] directly would make merge_heads
// and its launch unnecessary.)
#include "ops/cuda/device_math.cuh"
#include "ops/heads.h"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void split_qkv_kernel(const T* qkv, T* q_out, T* k_cache, T* v_cache,
                                 const std::int32_t* positions, std::int64_t tokens,
                                 std::int64_t heads, std::int64_t kv_heads, std::int64_t head_dim,
                                 std::int64_t capacity, std::int64_t total) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const std::int64_t row_width = (heads + 2 * kv_heads) * head_dim;
  const std::int64_t token_row = i / row_width;  // b * tokens + t
  const std::int64_t h = (i % row_width) / head_dim;
  const std::int64_t d = i % head_dim;
  const std::int64_t b = token_row / tokens;
  const std::int64_t t = token_row % tokens;
  if (h < heads) {
    q_out[((b * heads + h) * tokens + t) * head_dim + d] = qkv[i];
  } else {
    const std::int64_t position = positions[token_row];
    if (position < 0 || position >= capacity) return;
    T* cache = h < heads + kv_heads ? k_cache : v_cache;
    const std::int64_t g = (h - heads) % kv_heads;
    cache[((b * kv_heads + g) * capacity + position) * head_dim + d] = qkv[i];
  }
}

template <typename T>
__global__ void split_qkv_paged_kernel(const T* qkv, T* q_out, T* key_blocks, T* value_blocks,
                                       const std::int32_t* slots, std::int64_t heads,
                                       std::int64_t kv_heads, std::int64_t head_dim,
                                       std::int64_t block_tokens, std::int64_t slot_count,
                                       std::int64_t total) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const std::int64_t row_width = (heads + 2 * kv_heads) * head_dim;
  const std::int64_t n = i / row_width;
  const std::int64_t h = (i % row_width) / head_dim;
  const std::int64_t d = i % head_dim;
  if (h < heads) {
    q_out[(n * heads + h) * head_dim + d] = qkv[i];
    return;
  }
  const std::int64_t slot = slots[n];
  if (slot < 0 || slot >= slot_count) return;
  T* blocks = h < heads + kv_heads ? key_blocks : value_blocks;
  const std::int64_t g = (h - heads) % kv_heads;
  const std::int64_t block = slot / block_tokens;
  blocks[((block * kv_heads + g) * block_tokens + slot % block_tokens) * head_dim + d] = qkv[i];
}

template <typename T>
__global__ void merge_heads_kernel(const T* x, T* out, std::int64_t heads, std::int64_t tokens,
                                   std::int64_t head_dim, std::int64_t total) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const std::int64_t width = heads * head_dim;
  const std::int64_t token_row = i / width;  // b * tokens + t
  const std::int64_t b = token_row / tokens;
  const std::int64_t t = token_row % tokens;
  const std::int64_t h = (i % width) / head_dim;
  const std::int64_t d = i % head_dim;
  out[i] = x[((b * heads + h) * tokens + t) * head_dim + d];
}

}  // namespace

void split_qkv(Context& ctx, const Tensor& qkv, Tensor& q_out, Tensor& k_cache, Tensor& v_cache,
               const Tensor& positions) {
  const std::int64_t total = qkv.numel();
  if (total == 0) return;
  const QkvSplit s = QkvSplit::of(q_out, k_cache);
  with_storage_type(qkv.dtype(), "split_qkv", [&](auto tag) {
    using T = decltype(tag);
    split_qkv_kernel<T><<<gpu::blocks_for(total, kThreads), kThreads, 0, gpu::stream_of(ctx)>>>(
        static_cast<const T*>(qkv.raw_data()), static_cast<T*>(q_out.raw_data()),
        static_cast<T*>(k_cache.raw_data()), static_cast<T*>(v_cache.raw_data()),
        positions.data<std::int32_t>(), s.tokens, s.heads, s.kv_heads, s.head_dim, s.capacity,
        total);
    gpu::check_launch("split_qkv_kernel");
  });
}

void split_qkv_paged(Context& ctx, const Tensor& qkv, Tensor& q_out, Tensor& key_blocks,
                     Tensor& value_blocks, const Tensor& slots) {
  const std::int64_t total = qkv.numel();
  if (total == 0) return;
  with_storage_type(qkv.dtype(), "split_qkv_paged", [&](auto tag) {
    using T = decltype(tag);
    split_qkv_paged_kernel<T>
        <<<gpu::blocks_for(total, kThreads), kThreads, 0, gpu::stream_of(ctx)>>>(
            static_cast<const T*>(qkv.raw_data()), static_cast<T*>(q_out.raw_data()),
            static_cast<T*>(key_blocks.raw_data()), static_cast<T*>(value_blocks.raw_data()),
            slots.data<std::int32_t>(), q_out.dim(1), key_blocks.dim(1), q_out.dim(2),
            key_blocks.dim(2), key_blocks.dim(0) * key_blocks.dim(2), total);
    gpu::check_launch("split_qkv_paged_kernel");
  });
}

void merge_heads(Context& ctx, const Tensor& x, Tensor& out) {
  const std::int64_t total = x.numel();
  if (total == 0) return;
  with_storage_type(x.dtype(), "merge_heads", [&](auto tag) {
    using T = decltype(tag);
    merge_heads_kernel<T><<<gpu::blocks_for(total, kThreads), kThreads, 0, gpu::stream_of(ctx)>>>(
        static_cast<const T*>(x.raw_data()), static_cast<T*>(out.raw_data()), x.dim(1), x.dim(2),
        x.dim(3), total);
    gpu::check_launch("merge_heads_kernel");
  });
}

}  // namespace attnscope::ops::cuda
