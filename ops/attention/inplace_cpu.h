// The `inplace` backend on the CPU: see inplace_cpu.cpp for its algorithm and cost model.
#pragma once

#include "ops/attention/attention.h"

namespace attnscope::ops::attention {

const Backend& inplace_cpu_backend();

}  // namespace attnscope::ops::attention
