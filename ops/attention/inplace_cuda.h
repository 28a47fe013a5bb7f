// The `inplace` attention backend on a CUDA device (see ops/attention/inplace_cuda.cu).
#pragma once

#include "ops/attention/attention.h"

namespace attnscope::ops::attention {

const Backend& inplace_cuda_backend();

}  // namespace attnscope::ops::attention
