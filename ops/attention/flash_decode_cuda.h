// The split-KV decode path (flash-decoding) of the CUDA `flash` backend: what
// ops/attention/flash_cuda.cu needs from ops/attention/flash_decode_cuda.cu.
//
// A call with at most kFlashDecodeMaxQueries query rows cuts the cache of every (batch, query
// head) into `chunks` key ranges, one CTA each; each CTA leaves an unnormalised partial
// (m, l, O) per query row in an f32 temporary, and a second kernel merges the partials into
// the output. See flash_decode_cuda.cu for the kernels and the rule that picks `chunks`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "ops/attention/attention.h"
#include "runtime/error.h"

namespace attnscope::ops::attention {

// Calls with this many query rows or fewer take the split-KV path (decode of one token, or a
// few speculative ones); longer calls take the single tiled kernel.
constexpr std::int64_t kFlashDecodeMaxQueries = 4;

struct FlashDecodePlan {
  std::int64_t chunks = 1;        // key ranges per (batch, query head), one CTA each
  std::size_t partial_bytes = 0;  // the temporary: B Hq chunks Tq (D + 2) floats
};

// The largest head dim of the SIMT kernels (split-KV and the general tiled one).
constexpr std::int64_t kFlashMaxHeadDim = 256;

// Calls f(std::integral_constant<int, C>{}) with C = 1, 2, 4 or 8 the number of 32-wide chunks a
// lane covers in a row of `head_dim` (<= 256) elements: lane i owns elements i, i + 32, ...
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

// The plan for `call` (q_len <= kFlashDecodeMaxQueries) on the device of `ctx`.
FlashDecodePlan flash_decode_plan(const Context& ctx, const Call& call);

// Runs the two kernels of the split-KV path on stream_of(ctx), each inside its own profiler
// scope ("flash.decode_split", "flash.decode_combine"), for a call that the backend has already
// validated (CUDA tensors, f32/f16/bf16, head dim in [1, 256], sizes that fit in int).
void flash_decode_forward(Context& ctx, const Call& call, const FlashDecodePlan& plan);

}  // namespace attnscope::ops::attention
