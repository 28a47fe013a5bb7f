// What the flash kernels on a GPU share (flash_mma.cu, flash_simt.cu, flash_split_kv.cu): the
// call's sizes as the kernels read them, which query tile and keys a CTA owns, and the tiled
// launch; the online-softmax update they all use is online_softmax.cuh. Only for files compiled
// by nvcc.
//
// The kernels work in log2 units: with x_j = scale log2(e) q_i . k_j, 2^(x_j - m) is
// exp(scale q.k - max), the same softmax as flash.cpp states with one exp2 per score.
//
// Each CTA owns one tile of query rows of one (b, h) and loops over key tiles from key 0 up to
// the tile's last query position (causal tile skipping); on a tile that crosses the diagonal
// each masked score is left out of the max and gets P = 0. Key rows at or beyond kv_len are
// never read (their shared-memory rows are zero-filled), so the unused cache rows may hold
// anything. CTAs go longest query tile first (blockIdx.x = rank * B Hq + head, rank 0 = the
// last tile), so the short tiles fill the end of the grid. The output is written once, rounded
// to the storage dtype.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "ops/attention/cuda/flash.h"
#include "ops/attention/cuda/online_softmax.cuh"
#include "ops/check.h"
#include "ops/cuda/device_math.cuh"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::attention::cuda {

// The device_math.cuh building blocks the kernels use.
using ops::cuda::from_f32;
using ops::cuda::load_f32;

constexpr std::size_t kDefaultSharedBytes = 48 * 1024;

// What the kernels read about one call: its sizes as 32-bit ints (the grid indexes with them),
// and how the work is cut: query tiles per head (tiled kernels) or key chunks per head (split-KV).
struct FlashShape {
  int q_heads;
  int kv_heads;
  int q_len;
  int kv_len;
  std::int64_t capacity;  // rows of the cache per kv head
  int head_dim;
  int heads;            // B Hq
  int query_tiles = 1;  // tiled: per head
  int chunks = 1;       // split-KV: key ranges per head
  float scale_log2;     // scale log2(e): scores in log2 units
  // Split-KV only: each batch row's own key count (Call::kv_lens, kv_len then bounding them), or
  // nullptr: every row has kv_len.
  const std::int32_t* kv_lens = nullptr;
};

// The sizes of `call` (checked to fit in int by flash.cpp), one query tile and one chunk.
inline FlashShape flash_shape(const Call& call) {
  constexpr double kLog2e = 1.4426950408889634;
  FlashShape s{};
  s.q_heads = static_cast<int>(call.q_heads());
  s.kv_heads = static_cast<int>(call.kv_heads());
  s.q_len = static_cast<int>(call.q_len());
  s.kv_len = static_cast<int>(call.kv_len);
  s.capacity = call.k.dim(2);
  s.head_dim = static_cast<int>(call.head_dim());
  s.heads = static_cast<int>(call.batch() * call.q_heads());
  s.scale_log2 = static_cast<float>(static_cast<double>(call.scale) * kLog2e);
  s.kv_lens = call.kv_lens.defined() ? call.kv_lens.data<std::int32_t>() : nullptr;
  return s;
}

// One CTA's rows and keys: blockIdx.x = rank * heads + head, rank 0 = the head's last (longest)
// query tile.
struct CtaWork {
  int head;                // b Hq + h
  int first_row;           // of the query tile
  int rows;                // query rows in the tile
  int first_position;      // of query row 0: kv_len - Tq
  int key_tiles;           // key tiles up to the tile's last query position
  std::int64_t q_offset;   // element offset of the head's query row 0 (and output row 0)
  std::int64_t kv_offset;  // element offset of the kv head's cache row 0
};

__device__ __forceinline__ CtaWork cta_work(const FlashShape& s, int tile_rows, int tile_keys) {
  CtaWork w;
  w.head = static_cast<int>(blockIdx.x) % s.heads;
  const int tile = s.query_tiles - 1 - static_cast<int>(blockIdx.x) / s.heads;
  w.first_row = tile * tile_rows;
  w.rows = min(tile_rows, s.q_len - w.first_row);
  w.first_position = s.kv_len - s.q_len;
  const int last_position = w.first_position + w.first_row + w.rows - 1;
  w.key_tiles = last_position / tile_keys + 1;
  const int batch = w.head / s.q_heads;
  const int kv_head = (w.head % s.q_heads) / (s.q_heads / s.kv_heads);
  w.q_offset = static_cast<std::int64_t>(w.head) * s.q_len * s.head_dim;
  w.kv_offset = (static_cast<std::int64_t>(batch) * s.kv_heads + kv_head) * s.capacity * s.head_dim;
  return w;
}

inline FlashShape tile_shape(const Call& call, int rows_per_tile) {
  const std::int64_t heads = call.batch() * call.q_heads();
  const std::int64_t query_tiles = (call.q_len() + rows_per_tile - 1) / rows_per_tile;
  check(heads * query_tiles <= std::numeric_limits<int>::max(), "attention flash",
        "too many query tiles for one grid");
  FlashShape s = flash_shape(call);
  s.query_tiles = static_cast<int>(query_tiles);
  return s;
}

// Launches `kernel` over the call's query tiles with `shared_bytes` of dynamic shared memory,
// raising the kernel's limit first (once per context) when that is above the default 48 KiB.
template <typename T>
void launch_tiles(Context& ctx, const Call& call,
                  void (*kernel)(const T*, const T*, const T*, T*, FlashShape), int rows_per_tile,
                  int threads, std::size_t shared_bytes, const char* name) {
  const FlashShape shape = tile_shape(call, rows_per_tile);
  const std::int64_t blocks = static_cast<std::int64_t>(shape.heads) * shape.query_tiles;
  if (blocks == 0) return;
  if (shared_bytes > kDefaultSharedBytes) {
    std::size_t& limit =
        gpu::device_state(ctx).kernel_shared_limits[reinterpret_cast<const void*>(kernel)];
    if (shared_bytes > limit) {
      gpu::check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(shared_bytes)),
                      name);
      limit = shared_bytes;
    }
  }
  kernel<<<static_cast<unsigned int>(blocks), threads, shared_bytes, gpu::stream_of(ctx)>>>(
      static_cast<const T*>(call.q.raw_data()), static_cast<const T*>(call.k.raw_data()),
      static_cast<const T*>(call.v.raw_data()), static_cast<T*>(call.out.raw_data()), shape);
  gpu::check_launch(name);
}

// The tensor-core kernel's launch (flash_mma.cu), which flash_tiled (flash_simt.cu) picks for
// 16-bit storage at D = 64 or 128.
void flash_tiled_mma(Context& ctx, const Call& call);

}  // namespace attnscope::ops::attention::cuda
