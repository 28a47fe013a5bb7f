// When a cpu op spreads its loop over the context's threads (`#pragma omp parallel for ...
// if (elements >= kMinParallelElements)`): starting and joining a team of threads costs
// microseconds, more than the work of a small op, so below the threshold the op runs on the
// calling thread. A decode step's rows are 576 to 8192 values wide, so its elementwise ops
// (norms, activations, rotary embedding, head copies) stay on one thread and a prefill's spread.
#pragma once

#include <cstdint>

namespace attnscope::ops::cpu {

constexpr std::int64_t kMinParallelElements = 1 << 15;

}  // namespace attnscope::ops::cpu
