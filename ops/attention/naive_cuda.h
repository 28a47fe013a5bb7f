// The `naive` attention backend on a CUDA device (see ops/attention/naive_cuda.cu).
#pragma once

#include "ops/attention/attention.h"

namespace attnscope::ops::attention {

const Backend& naive_cuda_backend();

}  // namespace attnscope::ops::attention
