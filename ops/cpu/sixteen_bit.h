// Values stored in 16 bits (f16 or bf16) to and from f32 on the cpu, as runtime/dtype.h defines
// the conversions, many at a time: 16 values a step from the avx512 level on, 8 at the avx2 level
// when widening (each format's load: ops/cpu/dot_tile.h), one at a time below.
// widen_16bit is exact: bf16 is the top half of an f32, f16 converts with vcvtph2ps.
// narrow_16bit rounds to nearest, ties to even: bf16 by adding 0x7FFF plus the kept half's last
// bit to the f32's bits (NaN kept a quiet NaN), f16 with vcvtps2ph; bit for bit
// runtime/dtype.h's f32_to_bf16 and f32_to_f16, except that an f16 NaN keeps its payload's top
// bits. Cost: 2 n bytes one way, 4 n the other. Used by a 16-bit KV cache on the cpu (written by
// ops/cpu/heads.cpp, widened run by run by ops/attention/cpu/flash.cpp, gathered by
// ops/attention/cpu/paged.cpp) and by the 16-bit linear layers' prefill below the avx512 level
// (ops/cpu/linear_16bit.cpp).
#pragma once

#include <cstdint>

#include "runtime/dtype.h"

namespace attnscope::ops::cpu {

// dst[i] = src[i] widened, for i < n; `format` is DType::F16 or DType::BF16.
void widen_16bit(const std::uint16_t* src, DType format, std::int64_t n, float* dst);

// dst[i] = src[i] rounded to `format` (DType::F16 or DType::BF16), for i < n.
void narrow_16bit(const float* src, DType format, std::int64_t n, std::uint16_t* dst);

}  // namespace attnscope::ops::cpu
