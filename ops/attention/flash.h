// What the two devices' flash implementations share: the paths and their step names, the
// split-KV threshold, the plan (which path, how many chunks, what it allocates), the compile-time
// switches the kernels share, and the entry points flash.cpp dispatches to. The algorithm is
// FlashAttention's tiling with online softmax (flash.cpp states it once); how it is cut into
// work differs by device, so each device has its own files:
//
//   cpu:  flash_cpu.cpp        tiles of 64 queries x 256 keys per task, Eigen GEMMs per tile
//   cuda: flash_mma.cu         tensor-core kernel (f16/bf16, D = 64 or 128)
//         flash_simt.cu        f32-FMA kernel (f32 storage, or any D up to 256)
//         flash_kernels.cuh    what the GPU kernels share (sizes, a CTA's work, the launch)
//         flash_split_kv.cu    the split-KV (flash-decoding) pair of kernels
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

// Calls with this many query rows or fewer (decode of one token, or a few speculative ones)
// against a long cache take the split-KV path, on both devices. 4 is the most rows the GPU's
// split kernel keeps per CTA (its state arrays are sized by it); on the CPU, splitting was
// measured to pay at 1 and 4 rows (flash_cpu.cpp). Every chunk holds at least this many keys,
// so it starts at or before the first query row's position.
constexpr std::int64_t kSplitKvMaxQueries = 4;

// The largest head dim of the GPU's SIMT kernels (split-KV and the general tiled one).
constexpr std::int64_t kFlashMaxHeadDim = 256;

enum class FlashPath { tiled, split_kv };

struct FlashPlan {
  FlashPath path = FlashPath::tiled;
  std::int64_t chunks = 1;          // split-KV: key ranges per (batch, query head)
  std::size_t temporary_bytes = 0;  // what forward() takes from ctx.allocator(), at the peak
};

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

// What flash.cpp calls on one device: one table per device (flash_cpu.cpp; flash_simt.cu for the
// GPU, whose `tiled` picks the MMA or the SIMT kernel). `plan` is that device's half of the cost
// model: the path, and the temporaries it allocates. The partials tensor holds
// split_kv_partial_floats(shape, plan.chunks) floats; flash.cpp allocates it around the two
// split-KV steps. A build without the CUDA path has no CUDA table.
struct FlashBodies {
  FlashPlan (*plan)(const Context& ctx, const Shape& shape);
  void (*tiled)(Context& ctx, const Call& call);
  void (*split_kv_partials)(Context& ctx, const Call& call, const FlashPlan& plan,
                            Tensor& partials);
  void (*split_kv_combine)(Context& ctx, const Call& call, const FlashPlan& plan,
                           const Tensor& partials);
};
const FlashBodies& cpu_flash_bodies();
const FlashBodies& cuda_flash_bodies();

}  // namespace attnscope::ops::attention
