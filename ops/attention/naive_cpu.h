// The `naive` backend (alias `eager`) on the CPU: see naive_cpu.cpp for its algorithm and cost
// model.
#pragma once

#include "ops/attention/attention.h"

namespace attnscope::ops::attention {

const Backend& naive_cpu_backend();

}  // namespace attnscope::ops::attention
