// The `flash` backend on the CPU: see flash_cpu.cpp for its algorithm and cost model.
#pragma once

#include "ops/attention/attention.h"

namespace attnscope::ops::attention {

const Backend& flash_cpu_backend();

}  // namespace attnscope::ops::attention
