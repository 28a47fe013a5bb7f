// The SIMT kernel of `flash` on a GPU (flash.cpp states the algorithm, flash_kernels.cuh what the
// tiled kernels share): every call the tensor-core kernel does not take, f32 storage or any
// head dim up to 256, in f32 FMAs, one launch per call.
//
// 4 warps, 32 query rows per CTA (8 per warp), key tiles of 32. Q, K and V tiles in shared
// memory as f32 (K rows padded by one float: lane = key reads a column without bank conflicts).
// Per tile and warp: lane j scores key j against the warp's 8 rows (Q broadcast), warp max and
// warp sum per row (online_softmax_update, online_softmax.cuh), then lane d accumulates
// O[., d] += P V (P broadcast by shuffles). Shared memory (96 D + 32) x 4 bytes: 24.1 KiB at
// D = 64, 96.1 KiB at D = 256 (raised limit above 48 KiB). This file also holds flash_tiled
// (cuda/flash.h): which kernel takes which call.
#include <cstdint>

#include "ops/attention/cuda/flash_kernels.cuh"
#include "ops/cuda/device_math.cuh"

namespace attnscope::ops::attention::cuda {

namespace {

constexpr int kSimtWarps = 4;
constexpr int kSimtThreads = kSimtWarps * 32;
constexpr int kSimtRowsPerWarp = 8;
constexpr int kSimtRows = kSimtWarps * kSimtRowsPerWarp;  // query rows per CTA
constexpr int kSimtKeys = 32;                             // keys per tile: one per lane

constexpr std::size_t simt_shared_bytes(int head_dim) {
  return (std::size_t{kSimtRows} * head_dim + std::size_t{kSimtKeys} * (head_dim + 1) +
          std::size_t{kSimtKeys} * head_dim) *
         sizeof(float);
}

// DC: lane chunks of a row (D <= 32 DC); lane owns output elements lane, lane + 32, ...
template <typename T, int DC>
__global__ void __launch_bounds__(kSimtThreads)
    flash_forward_simt_kernel(const T* q, const T* k, const T* v, T* out, FlashShape s) {
  // Q [32][D], K [32][D + 1], V [32][D], f32.
  extern __shared__ float simt_tiles[];
  const int d_len = s.head_dim;
  float* q_tile = simt_tiles;
  float* k_tile = q_tile + kSimtRows * d_len;
  float* v_tile = k_tile + kSimtKeys * (d_len + 1);

  const CtaWork w = cta_work(s, kSimtRows, kSimtKeys);
  const T* q_head = q + w.q_offset;
  T* out_head = out + w.q_offset;
  const T* k_head = k + w.kv_offset;
  const T* v_head = v + w.kv_offset;

  // Query rows past Tq are zeros; their results are never written.
  for (int i = static_cast<int>(threadIdx.x); i < kSimtRows * d_len; i += kSimtThreads) {
    const int row = w.first_row + i / d_len;
    q_tile[i] =
        row < s.q_len ? load_f32(q_head, static_cast<std::int64_t>(row) * d_len + i % d_len) : 0.0f;
  }

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const float* warp_q = q_tile + warp * kSimtRowsPerWarp * d_len;
  int position[kSimtRowsPerWarp];
  float m[kSimtRowsPerWarp], l[kSimtRowsPerWarp], o[kSimtRowsPerWarp][DC];
#pragma unroll
  for (int r = 0; r < kSimtRowsPerWarp; ++r) {
    position[r] = w.first_position + w.first_row + warp * kSimtRowsPerWarp + r;
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int c = 0; c < DC; ++c) o[r][c] = 0.0f;
  }

  for (int j = 0; j < w.key_tiles; ++j) {
    __syncthreads();  // the previous tile is no longer read (and Q is staged)
    for (int i = static_cast<int>(threadIdx.x); i < kSimtKeys * d_len; i += kSimtThreads) {
      const int key_in_tile = i / d_len;
      const int d = i % d_len;
      const int key = j * kSimtKeys + key_in_tile;
      const bool valid = key < s.kv_len;
      const std::int64_t from = static_cast<std::int64_t>(key) * d_len + d;
      k_tile[key_in_tile * (d_len + 1) + d] = valid ? load_f32(k_head, from) : 0.0f;
      v_tile[i] = valid ? load_f32(v_head, from) : 0.0f;
    }
    __syncthreads();

    // Scores: lane = key of the tile, against the warp's 8 rows.
    const int key = j * kSimtKeys + lane;
    float score[kSimtRowsPerWarp] = {};
    const float* k_row = k_tile + lane * (d_len + 1);
    for (int d = 0; d < d_len; ++d) {
      const float kd = k_row[d];
#pragma unroll
      for (int r = 0; r < kSimtRowsPerWarp; ++r) {
        score[r] = fmaf(warp_q[r * d_len + d], kd, score[r]);
      }
    }
    float p[kSimtRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kSimtRowsPerWarp; ++r) {
      p[r] = online_softmax_update(score[r] * s.scale_log2, key <= position[r], m[r], l[r], o[r]);
    }

    // O += P V: lane = output element.
    for (int kj = 0; kj < kSimtKeys; ++kj) {
      float vd[DC];
#pragma unroll
      for (int c = 0; c < DC; ++c) {
        const int d = c * 32 + lane;
        vd[c] = d < d_len ? v_tile[kj * d_len + d] : 0.0f;
      }
#pragma unroll
      for (int r = 0; r < kSimtRowsPerWarp; ++r) {
        const float pj = __shfl_sync(0xffffffffu, p[r], kj);
#pragma unroll
        for (int c = 0; c < DC; ++c) o[r][c] = fmaf(pj, vd[c], o[r][c]);
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kSimtRowsPerWarp; ++r) {
    const int row = w.first_row + warp * kSimtRowsPerWarp + r;
    if (row >= s.q_len) continue;
#pragma unroll
    for (int c = 0; c < DC; ++c) {
      const int d = c * 32 + lane;
      if (d < d_len) {
        out_head[static_cast<std::int64_t>(row) * d_len + d] = from_f32<T>(o[r][c] / l[r]);
      }
    }
  }
}

void flash_tiled_simt(Context& ctx, const Call& call) {
  ops::cuda::with_storage_type(call.q.dtype(), "attention flash", [&](auto tag) {
    using T = decltype(tag);
    with_lane_chunks(call.head_dim(), [&](auto chunks_per_lane) {
      constexpr int kChunks = decltype(chunks_per_lane)::value;
      launch_tiles<T>(ctx, call, flash_forward_simt_kernel<T, kChunks>, kSimtRows, kSimtThreads,
                      simt_shared_bytes(static_cast<int>(call.head_dim())),
                      "flash_forward_simt_kernel");
    });
  });
}

}  // namespace

// The tiled step: tensor cores for 16-bit storage at the head dims the MMA kernel is built for,
// the SIMT kernel for everything else (flash_uses_tensor_cores, flash.h).
void flash_tiled(Context& ctx, const Call& call) {
  if (flash_uses_tensor_cores(call.q.dtype(), call.head_dim())) {
    flash_tiled_mma(ctx, call);
  } else {
    flash_tiled_simt(ctx, call);
  }
}

}  // namespace attnscope::ops::attention::cuda
