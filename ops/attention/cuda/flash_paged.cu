// `flash` on a GPU for a paged call (paged.h): every query row of a ragged batch against its own
// sequence's keys, read through the sequence's block table, never copied.
//
// flash.paged, flash_paged_kernel (4 warps a CTA, one warp per (token row, query head), so a CTA
// takes four heads of one row, or the last heads of one row and the first of the next). Warp
// (n, h): n's sequence s comes from a binary search of query_starts; its query sits at position
// p = kv_len[s] - Tq_s + (n - query_starts[s]) and sees keys 0..p. The warp walks them in groups
// of 32, lane = key: the lane finds its key's block (block_tables[s][key / block_tokens]) and
// scores q . k with q broadcast from shared memory; one online-softmax update per group (the
// running max m, the rescale factor and the row sum l of online_softmax.cuh); then lane = output
// element for O += P V, p of key j broadcast from lane j. out = O / l, rounded once.
//
// This is the simplest kernel that reads a block table, the split-KV decode kernel's inner loop
// with the key's address found through the table. Each query row reads its keys once, so a
// prefill chunk of Tq rows reads K and V Tq times (from L2 after the first heads); a tiled paged
// kernel that shares a key tile among the rows of a query tile, and split-KV for long decodes,
// are the known headroom, to be measured on a GPU first.
// Temporaries: none. Steps: 1. Bytes: q read, out written, each query row's visible K and V rows.
#include <cmath>

#include "ops/attention/cuda/flash.h"
#include "ops/attention/cuda/flash_kernels.cuh"
#include "ops/attention/paged.h"

namespace attnscope::ops::attention::cuda {

namespace {

constexpr int kWarps = 4;
constexpr int kGroupKeys = 32;
constexpr int kMaxDim = static_cast<int>(kFlashMaxHeadDim);

struct PagedShape {
  int rows;  // N
  int sequences;
  int q_heads, kv_heads, head_dim;
  int block_tokens, max_blocks;
  float scale_log2;
};

template <typename T, int DC>
__global__ void __launch_bounds__(kWarps * 32)
    flash_paged_kernel(const T* q, const T* key_blocks, const T* value_blocks, T* out,
                       const std::int32_t* query_starts, const std::int32_t* kv_lens,
                       const std::int32_t* block_tables, PagedShape s) {
  __shared__ float q_rows[kWarps][kMaxDim];
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t item = static_cast<std::int64_t>(blockIdx.x) * kWarps + warp;
  if (item >= static_cast<std::int64_t>(s.rows) * s.q_heads) return;  // no barriers below
  const int n = static_cast<int>(item / s.q_heads);
  const int h = static_cast<int>(item % s.q_heads);
  // The sequence of row n: the last s with query_starts[s] <= n.
  int low = 0, high = s.sequences - 1;
  while (low < high) {
    const int mid = (low + high + 1) / 2;
    if (query_starts[mid] <= n) {
      low = mid;
    } else {
      high = mid - 1;
    }
  }
  const int sequence = low;
  const int q_len = query_starts[sequence + 1] - query_starts[sequence];
  const int position = kv_lens[sequence] - q_len + (n - query_starts[sequence]);
  const std::int32_t* table = block_tables + static_cast<std::int64_t>(sequence) * s.max_blocks;
  const int kv_head = h / (s.q_heads / s.kv_heads);
  const int d_len = s.head_dim;
  const std::int64_t row_offset = item * d_len;  // (n Hq + h) D: token-major q and out

  for (int d = lane; d < d_len; d += 32) q_rows[warp][d] = load_f32(q, row_offset + d);
  __syncwarp();

  // Row `key` of this kv head: row key % block_tokens of block table[key / block_tokens].
  auto row_of = [&](const T* blocks, int key) {
    const std::int64_t block = table[key / s.block_tokens];
    return blocks +
           ((block * s.kv_heads + kv_head) * s.block_tokens + key % s.block_tokens) * d_len;
  };
  float m = -INFINITY, l = 0.0f, o[DC];
#pragma unroll
  for (int c = 0; c < DC; ++c) o[c] = 0.0f;
  for (int group = 0; group <= position; group += kGroupKeys) {
    const int key = group + lane;
    const bool visible = key <= position;
    float score = 0.0f;
    if (visible) {
      const T* k_row = row_of(key_blocks, key);
      for (int d = 0; d < d_len; ++d) score = fmaf(q_rows[warp][d], load_f32(k_row, d), score);
    }
    const float p = online_softmax_update(score * s.scale_log2, visible, m, l, o);
    const int group_keys = min(kGroupKeys, position + 1 - group);
    for (int j = 0; j < group_keys; ++j) {
      const T* v_row = row_of(value_blocks, group + j);
      const float pj = __shfl_sync(0xffffffffu, p, j);
#pragma unroll
      for (int c = 0; c < DC; ++c) {
        const int d = c * 32 + lane;
        if (d < d_len) o[c] = fmaf(pj, load_f32(v_row, d), o[c]);
      }
    }
  }
#pragma unroll
  for (int c = 0; c < DC; ++c) {
    const int d = c * 32 + lane;
    if (d < d_len) out[row_offset + d] = from_f32<T>(o[c] / l);
  }
}

}  // namespace

FlashPlan flash_paged_plan(const Context& /*ctx*/, const RaggedShape& /*shape*/) {
  return {FlashPath::tiled, 1, 0, "flash_paged_kernel", "a paged call has one path"};
}

void flash_paged(Context& ctx, const PagedCall& call) {
  constexpr double kLog2e = 1.4426950408889634;
  const RaggedBatch& batch = *call.batch;
  PagedShape s{};
  s.rows = static_cast<int>(call.q.dim(0));
  s.sequences = static_cast<int>(batch.sequences());
  s.q_heads = static_cast<int>(call.q_heads());
  s.kv_heads = static_cast<int>(call.kv_heads());
  s.head_dim = static_cast<int>(call.head_dim());
  s.block_tokens = static_cast<int>(batch.block_tokens);
  s.max_blocks = static_cast<int>(batch.max_blocks);
  s.scale_log2 = static_cast<float>(static_cast<double>(call.scale) * kLog2e);
  const std::int64_t warps = call.q.dim(0) * call.q_heads();
  if (warps == 0) return;
  const auto blocks = static_cast<unsigned int>((warps + kWarps - 1) / kWarps);
  with_lane_chunks(call.head_dim(), [&](auto chunks) {
    constexpr int DC = decltype(chunks)::value;
    ops::cuda::with_storage_type(call.q.dtype(), "attention flash", [&](auto tag) {
      using T = decltype(tag);
      flash_paged_kernel<T, DC><<<blocks, kWarps * 32, 0, gpu::stream_of(ctx)>>>(
          static_cast<const T*>(call.q.raw_data()),
          static_cast<const T*>(call.key_blocks.raw_data()),
          static_cast<const T*>(call.value_blocks.raw_data()), static_cast<T*>(call.out.raw_data()),
          batch.device_query_starts.data<std::int32_t>(), batch.device_kv_lens.data<std::int32_t>(),
          batch.device_block_tables.data<std::int32_t>(), s);
      gpu::check_launch("flash_paged_kernel");
    });
  });
}

}  // namespace attnscope::ops::attention::cuda
