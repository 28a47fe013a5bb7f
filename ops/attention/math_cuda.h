// The `math` attention backend on a CUDA device (see ops/attention/math_cuda.cu).
#pragma once

#include "ops/attention/attention.h"

namespace attnscope::ops::attention {

const Backend& math_cuda_backend();

}  // namespace attnscope::ops::attention
