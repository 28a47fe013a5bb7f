// What the two devices' flash implementations share: the paths and their step names, the
// split-KV threshold, the plan (which path, how many chunks, what it allocates) and the
// compile-time switches the kernels share. The algorithm is FlashAttention's tiling with online
// softmax (flash.cpp states it once); how it is cut into work differs by device, so each device
// has its own files, whose entry points (a plan and three bodies) cpu/flash.h and cuda/flash.h
// declare and flash.cpp dispatches to:
//
//   cpu:  cpu/flash.cpp             tiles of 64 queries x 256 keys per task, the online-softmax
//                                   update of one row, Eigen GEMMs per tile where the kernels
//         cpu/query_tile.cpp        (AVX-512) of a tile's two products
//         cpu/query_tile_amx.cpp    (AMX's bf16 tiles, for a call with bf16_products)
//         cpu/decode_row.cpp        and of one query row's (decode) do not apply
//   cuda: cuda/flash_mma.cu         tensor-core kernel (f16/bf16, D = 64 or 128)
//         cuda/flash_simt.cu        f32-FMA kernel (f32 storage, or any D up to 256); picks
//                                   which of the two tiled kernels takes a call
//         cuda/flash_split_kv.cu    the split-KV (flash-decoding) pair of kernels
//         cuda/flash_kernels.cuh    what the GPU kernels share (sizes, a CTA's work, the launch)
//         cuda/online_softmax.cuh   the online-softmax update and the combine's rescale
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "ops/attention/backend.h"
#include "runtime/error.h"

namespace attnscope::ops::attention {

// The step names, the same on every device: one tiled pass, or the split-KV pair.
constexpr const char* kFlashTiledStep = "flash.tiled";
constexpr const char* kFlashPartialsStep = "flash.split_kv_partials";
constexpr const char* kFlashCombineStep = "flash.split_kv_combine";
// A paged call's one step (paged.h): the tiled path reading keys through the block tables.
constexpr const char* kFlashPagedStep = "flash.paged";

// Calls with this many query rows or fewer (decode of one token, or a few speculative ones)
// against a long cache take the split-KV path, on both devices. 4 is the most rows the GPU's
// split kernel keeps per CTA (its state arrays are sized by it); on the CPU, splitting was
// measured to pay at 1 and 4 rows (cpu/flash.cpp). Every chunk holds at least this many keys,
// so it starts at or before the first query row's position.
constexpr std::int64_t kSplitKvMaxQueries = 4;

// The largest head dim of the GPU's SIMT kernels (split-KV and the general tiled one).
constexpr std::int64_t kFlashMaxHeadDim = 256;

enum class FlashPath { tiled, split_kv };

struct FlashPlan {
  FlashPath path = FlashPath::tiled;
  std::int64_t chunks = 1;          // split-KV: key ranges per (batch, query head)
  std::size_t temporary_bytes = 0;  // what attend() takes from ctx.allocator(), at the peak
  // In words, for `attnscope explain` (Plan in backend.h): how the work is cut (tiles, tasks or
  // CTAs, threads or SMs, the kernel) and why this path and chunk count.
  std::string how;
  std::string why;
};

// The GPU's tiled step runs on tensor cores (cuda/flash_mma.cu) for 16-bit storage at the head
// dims that kernel is built for, and on the f32-FMA SIMT kernel (cuda/flash_simt.cu) otherwise.
inline bool flash_uses_tensor_cores(DType dtype, std::int64_t head_dim) {
  return (dtype == DType::F16 || dtype == DType::BF16) && (head_dim == 64 || head_dim == 128);
}

// The split-KV partials: for every (batch, query head, chunk) and query row, the unnormalised
// output O [D] and the running max m and sum l: B Hq chunks Tq (D + 2) floats.
inline std::int64_t split_kv_partial_floats(const Shape& shape, std::int64_t chunks) {
  return shape.heads() * chunks * shape.q_len * (shape.head_dim + 2);
}

// Calls f(std::integral_constant<int, C>{}) with C = 1, 2, 4 or 8 the number of 32-wide chunks a
// lane covers in a row of `head_dim` (<= 256) elements: lane i owns elements i, i + 32, ... The
// GPU's SIMT and split-KV kernels are instantiated for each C.
template <typename F>
void with_lane_chunks(std::int64_t head_dim, F&& f) {
  if (head_dim <= 32) {
    f(std::integral_constant<int, 1>{});
  } else if (head_dim <= 64) {
    f(std::integral_constant<int, 2>{});
  } else if (head_dim <= 128) {
    f(std::integral_constant<int, 4>{});
  } else if (head_dim <= kFlashMaxHeadDim) {
    f(std::integral_constant<int, 8>{});
  } else {
    throw Error("attention flash", "head dim " + std::to_string(head_dim) + " is above 256");
  }
}

}  // namespace attnscope::ops::attention
