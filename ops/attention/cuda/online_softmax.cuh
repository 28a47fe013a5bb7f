// The online-softmax update of `flash` on a GPU, written once for every kernel (flash_simt.cu,
// flash_split_kv.cu, flash_mma.cu) and the split-KV merges; flash.cpp states the algorithm. The
// pieces are named as in flash-attention's softmax.h: the running max m of a query row, the
// rescale factor 2^(m - m') that moves the row's sum and output onto a new max m', and the row
// sum l. Scores are in log2 units (flash_kernels.cuh), so every exp is one exp2f. Only for files
// compiled by nvcc.
#pragma once

#include "ops/cuda/device_math.cuh"

namespace attnscope::ops::attention::cuda {

// 2^(m - new_max): the factor that moves a state kept relative to max m onto new_max; 1 when the
// max did not change (also when both are still -inf: no key seen yet).
__device__ __forceinline__ float rescale_factor(float m, float new_max) {
  return m == new_max ? 1.0f : exp2f(m - new_max);
}

// Moves the running max m of a row onto max(m, tile_max), tile_max being the max of the row's
// visible scores in the new tile (-inf when none is visible), and returns the rescale factor by
// which the row's sum and output must be multiplied before the tile's terms are added.
__device__ __forceinline__ float update_running_max(float& m, float tile_max) {
  const float new_max = fmaxf(m, tile_max);
  const float factor = rescale_factor(m, new_max);
  m = new_max;
  return factor;
}

// The whole update of one query row over a tile of 32 keys held one per lane (the SIMT and
// split-KV kernels): lane j's score x (log2 units) counts when `visible`. Updates the running max
// m and the row sum l (the same in every lane: warp-wide max and sum), rescales the lane's DC
// output elements o, and returns the lane's P = 2^(x - m) (0 when masked) for O += P V.
template <int DC>
__device__ __forceinline__ float online_softmax_update(float x, bool visible, float& m, float& l,
                                                       float (&o)[DC]) {
  const float factor = update_running_max(m, ops::cuda::warp_max(visible ? x : -INFINITY));
  const float p = visible ? exp2f(x - m) : 0.0f;
  l = l * factor + ops::cuda::warp_sum(p);
#pragma unroll
  for (int c = 0; c < DC; ++c) o[c] *= factor;
  return p;
}

// The combine's rescale: the weight of a state kept relative to max m when the merged max is
// `merged`, 2^(m - merged), and 0 for a state that saw no key (m = -inf), whatever `merged` is.
__device__ __forceinline__ float merge_weight(float m, float merged) {
  return m == -INFINITY ? 0.0f : exp2f(m - merged);
}

}  // namespace attnscope::ops::attention::cuda
