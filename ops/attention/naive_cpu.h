// The `naive` (a.k.a. `eager`) backend on the CPU: see naive_cpu.cpp for its cost model.
#pragma once

#include "ops/attention/attention.h"

namespace attnscope::ops::attention {

const Backend& naive_cpu_backend();

}  // namespace attnscope::ops::attention
