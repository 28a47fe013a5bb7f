// The f32 GEMM under every prefill linear layer on the cpu (ops/cpu/linear.cpp with f32 weights,
// ops/cpu/linear_16bit.cpp with 16-bit ones widened as they are packed, ops/cpu/widened_gemm.h
// with weights widened to f32 first: 16-bit at the portable level, q8_0). ops/cpu/gemm.cpp holds
// the math, the cost model and the implementations (one packed blocking with an AVX-512 and an
// AVX2 micro-kernel, Eigen below avx2).
#pragma once

#include <cstdint>

#include "runtime/cpu_features.h"
#include "runtime/dtype.h"

namespace attnscope::ops::cpu {

// Columns [first, first + width) of y [rows, outputs] get x [rows, in] times the f32 weight rows
// w_block [width, in] transposed, plus b[first..] when b is given: y = x W^T + b, or y += x W^T + b
// with `accumulate`. `level` (cpu_level(), read by the caller outside its parallel region) picks
// the implementation. Runs on the calling thread (the callers give each thread its own columns).
// Must not throw: it runs inside OpenMP regions.
void gemm_output_columns(CpuLevel level, const float* x, const float* w_block, const float* b,
                         float* y, std::int64_t rows, std::int64_t in, std::int64_t outputs,
                         std::int64_t first, std::int64_t width, bool accumulate);

#if defined(__x86_64__)
// The same with bf16 or f16 weights (`weight_dtype`), from the avx2 level on: the packed GEMM
// widens the weights to f32 as it packs them (ops/cpu/linear_16bit.cpp says what that saves);
// with bf16 weights where bf16_linear_rounds_x (output_blocks.h), it rounds x to bf16 instead and
// multiplies bf16 pairs with vdpbf16ps (twice the multiply-adds per instruction; ops/cpu/gemm.cpp's
// recipes).
void gemm_output_columns(CpuLevel level, const float* x, const std::uint16_t* w_block,
                         DType weight_dtype, const float* b, float* y, std::int64_t rows,
                         std::int64_t in, std::int64_t outputs, std::int64_t first,
                         std::int64_t width, bool accumulate);
#endif

}  // namespace attnscope::ops::cpu
