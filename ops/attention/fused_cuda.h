// The `fused` attention backend on a CUDA device (see ops/attention/fused_cuda.cu).
#pragma once

#include "ops/attention/attention.h"

namespace attnscope::ops::attention {

const Backend& fused_cuda_backend();

}  // namespace attnscope::ops::attention
