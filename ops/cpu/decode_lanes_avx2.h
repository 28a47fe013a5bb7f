// The batched decode step of a linear layer with f32, 16-bit or q8_0 weights at the avx2 level
// (runtime/cpu_features.h), the input rows in the vector lanes: ops/cpu/decode_lanes_avx2.cpp
// holds the math and the cost model.
#pragma once

#include <cstdint>

#include "ops/cpu/output_blocks.h"
#include "runtime/context.h"
#include "runtime/cpu_features.h"
#include "runtime/dtype.h"

namespace attnscope::ops::cpu {

// Whether a decode step of `rows` rows through `weights` (f32, f16, bf16 or q8_0) takes
// decode_lanes_avx2: at the avx2 level from 12 rows (f32) or 16 (the others) up to gemm_min_rows
// (output_blocks.h: 128, where the lanes still led the GEMM); below, the avx2 tiles (dot_tile.h,
// q8_0: linear_q8_0.cpp's) keep the rows, the step bound by reading the weights, which their one
// stream does at the read roof and the lanes' 12 row streams do not. Measured (decode tokens/s of
// a batch, lanes / tiles, medians of 3 interleaved rounds; AMD EPYC Zen 3, 2 threads,
// synthetic:gpt2, docs/results/2026-12-07-avx2-decode-lanes/):
//   rows   8     12    16    24    32    48    63
//   f32    0.91  1.08  1.43  1.09  1.51  1.37  1.45
//   bf16   0.75  0.92  1.22  1.06  1.35  1.35  1.36
//   f16    0.72  0.86  1.09  1.02  1.26  1.33  1.29
//   q8_0               1.11  1.03  1.50  1.26  (from 32 rows against the GEMM, which had them)
// (24 rows: the odd vector of 8 runs the one-vector kernel, which costs nearly what a tile of 16
// does.) With q8_0 weights x stays f32 here, where the other q8_0 decode kernels quantize it
// (linear_q8_0.h: q8_0_quantizes_x).
inline bool decode_in_lanes_avx2(CpuLevel level, DType weights, std::int64_t rows) {
  const std::int64_t lanes_min_rows = weights == DType::F32 ? 12 : 16;
  return level == CpuLevel::Avx2 && rows >= lanes_min_rows && rows < gemm_min_rows(level, weights);
}

// y [rows, outputs] = x W^T + b, or y += x W^T + b with `accumulate`, for x [rows, in] f32,
// W [outputs, in] of `weights` (F32, F16, BF16 or Q8_0, `in` then a multiple of 32, unchecked)
// and b [outputs] f32 or null. The context's threads share the outputs. Call only when
// cpu_level() is at least CpuLevel::Avx2.
void decode_lanes_avx2(const Context& ctx, const float* x, const void* w, DType weights,
                       const float* b, float* y, std::int64_t rows, std::int64_t in,
                       std::int64_t outputs, bool accumulate);

}  // namespace attnscope::ops::cpu
