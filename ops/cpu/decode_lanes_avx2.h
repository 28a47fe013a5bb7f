// The batched decode step of a linear layer with f32 or 16-bit weights at the avx2 level
// (runtime/cpu_features.h), the input rows in the vector lanes: ops/cpu/decode_lanes_avx2.cpp
// holds the math and the cost model.
#pragma once

#include <cstdint>

#include "ops/cpu/output_blocks.h"
#include "runtime/context.h"
#include "runtime/cpu_features.h"
#include "runtime/dtype.h"

namespace attnscope::ops::cpu {

// Whether a decode step of `rows` rows through `weights` (f32, f16 or bf16) takes
// decode_lanes_avx2: at the avx2 level from kLanesMinRows up to gemm_min_rows (output_blocks.h),
// below which the avx2 tiles (dot_tile.h) keep the rows. Measured (decode tokens/s of a batch,
// lanes / tiles; AMD EPYC Zen 3, 2 threads, synthetic:gpt2, 3 interleaved rounds, medians,
// docs/results/2026-12-07-avx2-decode-lanes/): f32 0.91x at 8 rows, 1.08x at 12, 1.43x at 16,
// 1.09x at 24 (its odd vector of 8 rows runs the slower one-vector kernel), 1.51x at 32, 1.45x
// at 63; bf16 and f16 below.
inline bool decode_in_lanes_avx2(CpuLevel level, DType weights, std::int64_t rows) {
  const std::int64_t lanes_min_rows = weights == DType::F32 ? 12 : 16;
  return level == CpuLevel::Avx2 && rows >= lanes_min_rows && rows < gemm_min_rows(level, weights);
}

// y [rows, outputs] = x W^T + b, or y += x W^T + b with `accumulate`, for x [rows, in] f32,
// W [outputs, in] of `weights` (F32, F16 or BF16) and b [outputs] f32 or null. The context's
// threads share the outputs. Call only when cpu_level() is at least CpuLevel::Avx2.
void decode_lanes_avx2(const Context& ctx, const float* x, const void* w, DType weights,
                       const float* b, float* y, std::int64_t rows, std::int64_t in,
                       std::int64_t outputs, bool accumulate);

}  // namespace attnscope::ops::cpu
