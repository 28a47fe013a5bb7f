// The split-KV path (flash-decoding) of `flash` on a GPU: few query rows against a long cache
// (flash.cpp states the algorithm and when it runs; flash.h the threshold).
//
// One query token per head gives one row of work per (batch, head): B Hq CTAs would leave most
// of an H200's 132 SMs idle at batch 1. So the keys of each (batch, query head) are cut into
// `chunks` equal ranges, one CTA each, and a second kernel merges the results:
//
//   flash.split_kv_partials, flash_decode_split_kernel (grid B Hq chunks, 4 warps): for its key
//     range [k0, k1) the CTA keeps, for each of the Tq <= 4 query rows (query i at position
//     p_i = kv_len - Tq + i, keys j <= p_i visible), the online-softmax state of scores
//     x_j = scale log2(e) q_i . k_j:
//        m = max_j x_j,   l = sum_j 2^(x_j - m),   O = sum_j 2^(x_j - m) v_j    (unnormalised)
//     Warp w takes the 32-key groups w, w + 4, ... of the range: lane = key for the dot
//     products (q in shared memory, broadcast), one warp max and one warp sum per row and group,
//     then lane = output element for O += P V (p broadcast by shuffles). The four warp states
//     merge through shared memory into the CTA's partial (m_c, l_c, O_c), written to the
//     partials tensor.
//   flash.split_kv_combine, flash_decode_combine_kernel (one warp per output row): the
//     log-sum-exp merge M = max_c m_c, w_c = 2^(m_c - M), out = sum_c w_c O_c / sum_c w_c l_c,
//     rounded once to the storage dtype.
//
// Chunks (flash_plan): chunks = clamp(ceil(4 SMs / (B Hq)), 1, floor(kv_len / 128)) (at least
// 1): about four CTAs per SM in all, none shorter than 128 keys (one 32-key group per warp).
// Each chunk then starts at least 128 keys before the cache's end, so at or before the first
// query row's position (Tq <= 4): every real row sees a key of every chunk. A state that saw no
// key (a warp with no group, m = -inf) gets weight 0, never 2^(-inf - -inf). Keys at or beyond
// a row's key count are never read (the unused cache rows may hold anything).
// Per-row key counts (Call::kv_lens, what a replayed CUDA graph's decode step passes): the grid
// and the chunk count stay those of the bound kv_len, and each CTA cuts its row's own count
// n_b <= kv_len into the same number of ranges, [c n_b / chunks, (c + 1) n_b / chunks). Chunks
// may then be short or empty (a CTA with no key writes m = -inf, l = 0, weight 0), but the
// ranges still cover [0, n_b) and key 0 is visible to every row: M stays finite.
//
// Bytes: q, K and V read once (2 B Hkv Tk D s, each kv head once per query head that reads it:
// GQA heads re-read through L2), partials written once and read once, out written once.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "ops/attention/cuda/flash_kernels.cuh"
#include "ops/check.h"
#include "ops/cuda/device_math.cuh"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::attention::cuda {

namespace {

constexpr int kMaxRows = static_cast<int>(kSplitKvMaxQueries);
constexpr int kSplitWarps = 4;
constexpr int kSplitThreads = kSplitWarps * 32;
constexpr int kGroupKeys = 32;  // keys one warp scores at once, one per lane
constexpr std::int64_t kMinChunkKeys = kSplitWarps * kGroupKeys;
constexpr std::int64_t kCtasPerSm = 4;
constexpr int kCombineWarps = 4;
constexpr int kMaxDim = static_cast<int>(kFlashMaxHeadDim);
static_assert(kSplitKvMaxQueries <= kMinChunkKeys,
              "a chunk must start at or before the first query row's position");

// The partials, one f32 block: O [heads, chunks, Tq, D], then m and l [heads, chunks, Tq].
template <typename F>
struct Partials {
  F* o;
  F* m;
  F* l;
};

template <typename F>
__device__ __forceinline__ Partials<F> partials_of(F* base, const FlashShape& s) {
  const std::int64_t slots = static_cast<std::int64_t>(s.heads) * s.chunks * s.q_len;
  return {base, base + slots * s.head_dim, base + slots * (s.head_dim + 1)};
}

// Step 1: one CTA per (head, chunk), blockIdx.x = head * chunks + chunk. DC = lane chunks of a
// row (D <= 32 DC).
template <typename T, int DC>
__global__ void __launch_bounds__(kSplitThreads)
    flash_decode_split_kernel(const T* q, const T* k, const T* v, float* partials, FlashShape s) {
  __shared__ float q_rows[kMaxRows][kMaxDim];
  __shared__ float warp_o[kSplitWarps][kMaxRows][kMaxDim];
  __shared__ float warp_m[kSplitWarps][kMaxRows];
  __shared__ float warp_l[kSplitWarps][kMaxRows];

  const int d_len = s.head_dim;
  const int head = static_cast<int>(blockIdx.x) / s.chunks;
  const int chunk = static_cast<int>(blockIdx.x) % s.chunks;
  const int batch = head / s.q_heads;
  const int kv_head = (head % s.q_heads) / (s.q_heads / s.kv_heads);
  const T* q_head = q + static_cast<std::int64_t>(head) * s.q_len * d_len;
  const std::int64_t kv_offset =
      (static_cast<std::int64_t>(batch) * s.kv_heads + kv_head) * s.capacity * d_len;
  const T* k_head = k + kv_offset;
  const T* v_head = v + kv_offset;
  // The row's keys: its own count (kept in [Tq, kv_len]) when the call gives one, else kv_len.
  const int kv_len = s.kv_lens != nullptr
                         ? min(max(static_cast<int>(s.kv_lens[batch]), s.q_len), s.kv_len)
                         : s.kv_len;
  const int key_begin = static_cast<int>(static_cast<std::int64_t>(chunk) * kv_len / s.chunks);
  const int key_end = static_cast<int>(static_cast<std::int64_t>(chunk + 1) * kv_len / s.chunks);

  // Query rows in f32; rows past Tq are zeros and their results are never written.
  for (int i = static_cast<int>(threadIdx.x); i < kMaxRows * d_len; i += kSplitThreads) {
    const int r = i / d_len;
    const int d = i % d_len;
    q_rows[r][d] = r < s.q_len ? load_f32(q_head, static_cast<std::int64_t>(r) * d_len + d) : 0.0f;
  }
  __syncthreads();

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  int position[kMaxRows];
  float m[kMaxRows], l[kMaxRows], o[kMaxRows][DC];
#pragma unroll
  for (int r = 0; r < kMaxRows; ++r) {
    position[r] = kv_len - s.q_len + r;
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int c = 0; c < DC; ++c) o[r][c] = 0.0f;
  }

  for (int group = key_begin + warp * kGroupKeys; group < key_end;
       group += kSplitWarps * kGroupKeys) {
    // Scores: lane = key.
    const int key = group + lane;
    const bool in_range = key < key_end;
    float score[kMaxRows] = {};
    if (in_range) {
      const T* k_row = k_head + static_cast<std::int64_t>(key) * d_len;
      for (int d = 0; d < d_len; ++d) {
        const float kd = load_f32(k_row, d);
#pragma unroll
        for (int r = 0; r < kMaxRows; ++r) score[r] = fmaf(q_rows[r][d], kd, score[r]);
      }
    }
    // Online softmax over the group, row by row (m, l are the same in every lane). Rows past Tq
    // are skipped (a uniform branch) and keep their empty state.
    float p[kMaxRows] = {};
#pragma unroll
    for (int r = 0; r < kMaxRows; ++r) {
      if (r >= s.q_len) continue;
      p[r] = online_softmax_update(score[r] * s.scale_log2, in_range && key <= position[r], m[r],
                                   l[r], o[r]);
    }
    // O += P V: lane = output element, p of key j broadcast from lane j.
    const int group_keys = min(kGroupKeys, key_end - group);
    for (int j = 0; j < group_keys; ++j) {
      const T* v_row = v_head + static_cast<std::int64_t>(group + j) * d_len;
      float vd[DC];
#pragma unroll
      for (int c = 0; c < DC; ++c) {
        const int d = c * 32 + lane;
        vd[c] = d < d_len ? load_f32(v_row, d) : 0.0f;
      }
#pragma unroll
      for (int r = 0; r < kMaxRows; ++r) {
        if (r >= s.q_len) continue;
        const float pj = __shfl_sync(0xffffffffu, p[r], j);
#pragma unroll
        for (int c = 0; c < DC; ++c) o[r][c] = fmaf(pj, vd[c], o[r][c]);
      }
    }
  }

  // Merge the four warps' states into the CTA's partial.
#pragma unroll
  for (int r = 0; r < kMaxRows; ++r) {
    if (lane == 0) {
      warp_m[warp][r] = m[r];
      warp_l[warp][r] = l[r];
    }
#pragma unroll
    for (int c = 0; c < DC; ++c) {
      const int d = c * 32 + lane;
      if (d < d_len) warp_o[warp][r][d] = o[r][c];
    }
  }
  __syncthreads();
  const Partials<float> out = partials_of(partials, s);
  for (int i = static_cast<int>(threadIdx.x); i < s.q_len * d_len; i += kSplitThreads) {
    const int r = i / d_len;
    const int d = i % d_len;
    float merged_max = -INFINITY;
    for (int w = 0; w < kSplitWarps; ++w) merged_max = fmaxf(merged_max, warp_m[w][r]);
    float sum = 0.0f;
    float acc = 0.0f;
    for (int w = 0; w < kSplitWarps; ++w) {
      const float weight = merge_weight(warp_m[w][r], merged_max);
      sum = fmaf(weight, warp_l[w][r], sum);
      acc = fmaf(weight, warp_o[w][r][d], acc);
    }
    const std::int64_t slot = (static_cast<std::int64_t>(head) * s.chunks + chunk) * s.q_len + r;
    out.o[slot * d_len + d] = acc;
    if (d == 0) {
      out.m[slot] = merged_max;
      out.l[slot] = sum;
    }
  }
}

// Step 2: one warp per output row (head, query row).
template <typename T>
__global__ void __launch_bounds__(kCombineWarps * 32)
    flash_decode_combine_kernel(const float* partials, T* out, FlashShape s) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kCombineWarps + threadIdx.x / 32;
  if (row >= static_cast<std::int64_t>(s.heads) * s.q_len) return;  // no barriers below
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t head = row / s.q_len;
  const int r = static_cast<int>(row % s.q_len);
  const Partials<const float> in = partials_of(partials, s);
  auto slot = [&](int c) { return (head * s.chunks + c) * s.q_len + r; };

  float merged_max = -INFINITY;
  for (int c = 0; c < s.chunks; ++c) merged_max = fmaxf(merged_max, in.m[slot(c)]);
  float sum = 0.0f;
  for (int c = 0; c < s.chunks; ++c)
    sum = fmaf(merge_weight(in.m[slot(c)], merged_max), in.l[slot(c)], sum);
  for (int d = lane; d < s.head_dim; d += 32) {
    float acc = 0.0f;
    for (int c = 0; c < s.chunks; ++c) {
      acc = fmaf(merge_weight(in.m[slot(c)], merged_max), in.o[slot(c) * s.head_dim + d], acc);
    }
    out[row * s.head_dim + d] = from_f32<T>(acc / sum);
  }
}

FlashShape split_shape(const Call& call, std::int64_t chunks) {
  FlashShape s = flash_shape(call);
  s.chunks = static_cast<int>(chunks);
  return s;
}
// The kernels' element type T for the call's storage dtype, and the call's tensors as T.
template <typename F>
void with_typed_call(const Call& call, F&& f) {
  ops::cuda::with_storage_type(call.q.dtype(), "attention flash", [&](auto tag) {
    using T = decltype(tag);
    f(tag, static_cast<const T*>(call.q.raw_data()), static_cast<const T*>(call.k.raw_data()),
      static_cast<const T*>(call.v.raw_data()), static_cast<T*>(call.out.raw_data()));
  });
}

}  // namespace

FlashPlan flash_plan(const Context& ctx, const Shape& shape) {
  const std::int64_t sms = gpu::device_state(ctx).properties.multiProcessorCount;
  const std::string heads = "B Hq = " + std::to_string(shape.heads()) + " heads";
  if (shape.q_len > kSplitKvMaxQueries) {  // no temporaries
    const bool mma = flash_uses_tensor_cores(shape.dtype, shape.head_dim);
    return {FlashPath::tiled, 1, 0,
            mma ? "flash_forward_mma_kernel: tensor cores (mma.sync, f32 accumulators), one CTA "
                  "of 4 warps per 64 query rows of a head"
                : "flash_forward_simt_kernel: f32 FMA, one CTA of 4 warps per 32 query rows of a "
                  "head",
            std::to_string(shape.q_len) + " query rows per head fill the " + std::to_string(sms) +
                " SMs without a split (split-KV takes at most " +
                std::to_string(kSplitKvMaxQueries) + "); " +
                (mma ? "16-bit storage at head dim " + std::to_string(shape.head_dim) +
                           " takes the tensor-core kernel"
                     : "the tensor-core kernel takes only f16/bf16 at head dim 64 or 128")};
  }
  const std::int64_t ctas = kCtasPerSm * sms;
  const std::int64_t wanted = shape.heads() > 0 ? (ctas + shape.heads() - 1) / shape.heads() : 1;
  const std::int64_t most = std::max<std::int64_t>(1, shape.kv_len / kMinChunkKeys);
  const std::int64_t chunks = std::clamp<std::int64_t>(wanted, 1, most);
  return {FlashPath::split_kv, chunks,
          static_cast<std::size_t>(split_kv_partial_floats(shape, chunks)) * sizeof(float),
          "flash_decode_split_kernel: " + std::to_string(shape.heads() * chunks) +
              " CTAs of 4 warps (" + std::to_string(chunks) +
              " per head), then flash_decode_combine_kernel",
          std::to_string(shape.q_len) + " query rows per head: " + heads + " alone would leave " +
              "most of the " + std::to_string(sms) + " SMs idle, so each head's " +
              std::to_string(shape.kv_len) + " keys are cut into " + std::to_string(chunks) +
              " chunks (about " + std::to_string(kCtasPerSm) + " CTAs per SM, none under " +
              std::to_string(kMinChunkKeys) + " keys)"};
}

void flash_split_kv_partials(Context& ctx, const Call& call, const FlashPlan& plan,
                             Tensor& partials) {
  const FlashShape shape = split_shape(call, plan.chunks);
  check(shape.q_len <= kMaxRows, "attention flash",
        [] { return "split-KV takes at most " + std::to_string(kMaxRows) + " query rows"; });
  check(static_cast<std::int64_t>(shape.heads) * plan.chunks <= std::numeric_limits<int>::max(),
        "attention flash", "too many (head, chunk) pairs for one grid");
  if (static_cast<std::int64_t>(shape.heads) * shape.q_len == 0) return;
  with_typed_call(call, [&](auto tag, const auto* q, const auto* k, const auto* v, auto*) {
    using T = decltype(tag);
    with_lane_chunks(shape.head_dim, [&](auto chunks_per_lane) {
      constexpr int kChunks = decltype(chunks_per_lane)::value;
      const auto blocks = static_cast<unsigned int>(shape.heads * plan.chunks);
      flash_decode_split_kernel<T, kChunks><<<blocks, kSplitThreads, 0, gpu::stream_of(ctx)>>>(
          q, k, v, partials.data<float>(), shape);
      gpu::check_launch("flash_decode_split_kernel");
    });
  });
}

void flash_split_kv_combine(Context& ctx, const Call& call, const FlashPlan& plan,
                            const Tensor& partials) {
  const FlashShape shape = split_shape(call, plan.chunks);
  const std::int64_t rows = static_cast<std::int64_t>(shape.heads) * shape.q_len;
  if (rows == 0) return;
  with_typed_call(call, [&](auto tag, const auto*, const auto*, const auto*, auto* out) {
    using T = decltype(tag);
    flash_decode_combine_kernel<T>
        <<<gpu::blocks_for(rows, kCombineWarps), kCombineWarps * 32, 0, gpu::stream_of(ctx)>>>(
            partials.data<float>(), out, shape);
    gpu::check_launch("flash_decode_combine_kernel");
  });
}

}  // namespace attnscope::ops::attention::cuda
