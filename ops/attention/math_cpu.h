// The `math` backend on the CPU: see math_cpu.cpp for its algorithm and cost model.
#pragma once

#include "ops/attention/attention.h"

namespace attnscope::ops::attention {

const Backend& math_cpu_backend();

}  // namespace attnscope::ops::attention
