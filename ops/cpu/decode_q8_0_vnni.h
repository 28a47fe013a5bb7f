// The batched decode step of a linear layer with q8_0 weights on AVX-512 VNNI's byte dot
// products (the avx512vnni level of runtime/cpu_features.h), the input rows in the vector lanes:
// ops/cpu/decode_q8_0_vnni.cpp holds the math and the cost model.
#pragma once

#include <cstdint>

#include "runtime/context.h"
#include "runtime/q8_0.h"

namespace attnscope::ops::cpu {

// y [rows, outputs] = x W^T + b, or y += x W^T + b with `accumulate`, for x [rows, in] f32,
// W [outputs, in] in q8_0 blocks (`in` a multiple of 32, unchecked) and b [outputs] f32 or null;
// x quantized as the decode kernels quantize it (linear_q8_0.h). The context's threads share the
// outputs. Call only when cpu_level() is at least CpuLevel::Avx512Vnni.
void decode_q8_0_vnni(const Context& ctx, const float* x, const BlockQ8_0* w, const float* b,
                      float* y, std::int64_t rows, std::int64_t in, std::int64_t outputs,
                      bool accumulate);

}  // namespace attnscope::ops::cpu
