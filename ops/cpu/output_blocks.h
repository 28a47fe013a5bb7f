// How the cpu linear kernels (ops/cpu/linear.cpp for f32 weights, linear_16bit.cpp for 16-bit
// ones, linear_q8_0.cpp for q8_0 blocks) share out their work: the decode/prefill threshold and
// the split of the output features into one contiguous block per thread.
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/context.h"

namespace attnscope::ops::cpu {

// Below this many rows (decode of a batch) each weight row is read once and used for every input
// row while in L1: memory-bound, like one row. From it on (prefill), a blocked GEMM, which is
// FLOP-bound and repacks the weights, pays off.
constexpr std::int64_t kGemmMinRows = 16;

// Splits `outputs` into one block per thread, each a multiple of 64 so that no two threads write
// one cache line; `task(first, width)` handles outputs [first, first + width). Must not throw.
template <typename Task>
void for_each_output_block(const Context& ctx, std::int64_t outputs, Task task) {
  const std::int64_t threads = ctx.threads();
  const std::int64_t block = ((outputs + threads - 1) / threads + 63) / 64 * 64;
#pragma omp parallel for num_threads(ctx.threads()) schedule(static)
  for (std::int64_t first = 0; first < outputs; first += block) {
    task(first, std::min(block, outputs - first));
  }
}

}  // namespace attnscope::ops::cpu
