// The prefill GEMM for bf16, f16 and q8_0 weights on AMX's bf16 tiles (the amx level of
// runtime/cpu_features.h): ops/cpu/gemm_amx.cpp holds the math, the precision it keeps and the
// cost model.
#pragma once

#include <cstdint>

#include "runtime/context.h"
#include "runtime/dtype.h"

namespace attnscope::ops::cpu {

// y [rows, outputs] = x W^T + b, or y += x W^T + b with `accumulate`, for x [rows, in] f32,
// W [outputs, in] in `weight_dtype` (BF16 or F16: the raw 16-bit words; Q8_0: its blocks, `in` a
// multiple of 32) and b [outputs] f32 or null. The context's threads share the outputs. Call
// only when cpu_level() is CpuLevel::Amx (Linux has then lent this process the tiles).
void gemm_amx(const Context& ctx, const float* x, const void* w, DType weight_dtype, const float* b,
              float* y, std::int64_t rows, std::int64_t in, std::int64_t outputs, bool accumulate);

}  // namespace attnscope::ops::cpu
