// The prefill GEMM for q8_0 weights on AVX-512 VNNI's byte dot products (the avx512vnni level of
// runtime/cpu_features.h): ops/cpu/gemm_q8_0_vnni.cpp holds the math, the error and the cost
// model.
#pragma once

#include <cstdint>

#include "runtime/context.h"
#include "runtime/q8_0.h"

namespace attnscope::ops::cpu {

// y [rows, outputs] = x W^T + b, or y += x W^T + b with `accumulate`, for x [rows, in] f32,
// W [outputs, in] in q8_0 blocks (`in` a multiple of 32, unchecked) and b [outputs] f32 or null.
// x is quantized to q8_0 blocks first, as the decode kernels do (linear_q8_0.h). The context's
// threads share the outputs. Call only when cpu_level() is at least CpuLevel::Avx512Vnni.
void gemm_q8_0_vnni(const Context& ctx, const float* x, const BlockQ8_0* w, const float* b,
                    float* y, std::int64_t rows, std::int64_t in, std::int64_t outputs,
                    bool accumulate);

}  // namespace attnscope::ops::cpu
