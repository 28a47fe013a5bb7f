// The cost models of the four eager backends: one formula each, returned by both the CPU and the
// GPU twin (they run the same steps, so they promise the same numbers; a step is a pass over
// memory on the CPU and a kernel launch on the GPU). flash differs by device (its tiling) and
// keeps its formulas in its own files.
//
// S = B Hq Tq Tk score elements (HeadLayout::score_elements), e = bytes per score element: the
// storage dtype's (f32 on the CPU), except in math, which computes in f32 whatever it is given.
#pragma once

#include <cstddef>

#include "ops/attention/attention.h"
#include "ops/attention/cpu_steps.h"
#include "runtime/dtype.h"

namespace attnscope::ops::attention {

inline std::size_t score_bytes(const Call& call) {
  return static_cast<std::size_t>(layout_of(call).score_elements()) * dtype_size(call.q.dtype());
}

// Scores, a scaled copy, a masked copy, probabilities: 4 S e; six steps.
inline CostModel naive_cost(const Call& call) { return {4 * score_bytes(call), 6}; }

// The masked copy is gone: 3 S e; five steps.
inline CostModel inplace_cost(const Call& call) { return {3 * score_bytes(call), 5}; }

// f32 copies of q, k and v and the f32 output (2 Q + 2 K elements, Q = B Hq Tq D, K = B Hkv Tk D),
// three f32 score-sized buffers (scores, masked, probabilities) and the Tq x Tk byte mask, all
// live at the peak: 4 (2 Q + 2 K + 3 S) + Tq Tk bytes; eleven steps.
inline CostModel math_cost(const Call& call) {
  const HeadLayout l = layout_of(call);
  const auto q = static_cast<std::size_t>(l.heads() * l.q_len * l.head_dim);
  const auto kv = static_cast<std::size_t>(l.batch * l.kv_heads * l.kv_len * l.head_dim);
  const auto scores = static_cast<std::size_t>(l.score_elements());
  const auto mask = static_cast<std::size_t>(l.q_len * l.kv_len);
  return {sizeof(float) * (2 * q + 2 * kv + 3 * scores) + mask, 11};
}

// The score buffer alone: S e; three steps.
inline CostModel fused_cost(const Call& call) { return {score_bytes(call), 3}; }

}  // namespace attnscope::ops::attention
