// The `fused` backend on the CPU: see fused_cpu.cpp for its algorithm and cost model.
#pragma once

#include "ops/attention/attention.h"

namespace attnscope::ops::attention {

const Backend& fused_cpu_backend();

}  // namespace attnscope::ops::attention
