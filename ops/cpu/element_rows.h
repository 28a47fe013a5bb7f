// Rows of the element types a KV cache holds on the cpu, to and from f32, many values at a time
// (16 a step from the avx512 level on, 8 at the avx2 level, one at a time below):
// - f16 and bf16 (runtime/dtype.h): widen_16bit is exact (bf16 is the top half of an f32, f16
//   converts with vcvtph2ps); narrow_16bit rounds to nearest, ties to even: bf16 by adding 0x7FFF
//   plus the kept half's last bit to the f32's bits (NaN kept a quiet NaN: dot_tile.h's
//   Bf16Format::narrow, which the bf16 GEMM's packing uses too), f16 with vcvtps2ph;
//   bit for bit dtype.h's f32_to_bf16 and f32_to_f16, except that an f16 NaN keeps its payload's
//   top bits.
// - q8_0 (runtime/q8_0.h): quantize_q8_0_rows makes the blocks runtime/q8_0.h's quantize_q8_0
//   makes, bit for bit, for every finite value it accepts; where it would refuse (a value not
//   finite, or past 65504 * 127), the block's scale becomes an f16 NaN, so that the block reads
//   back as NaN, as an f32 cache would pass the NaN on, instead of throwing in the middle of a
//   step. dequantize_q8_0_rows is exact (d q is exact in f32).
// rows_from_f32 and rows_to_f32 pick the one for a dtype (f32: a copy).
// Cost: one pass, 4 bytes per value on the f32 side, 2 (16-bit) or 34/32 (q8_0) on the other.
// Used by the KV cache on the cpu (written by ops/cpu/heads.cpp, read by
// ops/attention/cpu/flash.cpp and the gathered path's ops/attention/cpu/paged.cpp) and by the
// 16-bit linear layers' prefill at the portable level (ops/cpu/linear_16bit.cpp).
#pragma once

#include <cstdint>

#include "runtime/dtype.h"
#include "runtime/q8_0.h"

namespace attnscope::ops::cpu {

// dst[i] = src[i] widened, for i < n; `format` is DType::F16 or DType::BF16.
void widen_16bit(const std::uint16_t* src, DType format, std::int64_t n, float* dst);

// dst[i] = src[i] rounded to `format` (DType::F16 or DType::BF16), for i < n.
void narrow_16bit(const float* src, DType format, std::int64_t n, std::uint16_t* dst);

// n values (a multiple of 32) into n / 32 blocks, and back.
void quantize_q8_0_rows(const float* src, std::int64_t n, BlockQ8_0* dst);
void dequantize_q8_0_rows(const BlockQ8_0* src, std::int64_t n, float* dst);

// n values from f32 into `dtype` (f32, f16, bf16 or q8_0; n a multiple of 32 for q8_0) at dst,
// and from `dtype` back to f32.
void rows_from_f32(const float* src, DType dtype, std::int64_t n, void* dst);
void rows_to_f32(const void* src, DType dtype, std::int64_t n, float* dst);

}  // namespace attnscope::ops::cpu
