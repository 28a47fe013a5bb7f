// Splitting a linear layer's outputs between the Context's threads (the cpu linear kernels).
#pragma once

#include <algorithm>
#include <cstdint>

#include "runtime/context.h"

namespace attnscope::ops::cpu {

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
