// The `flash` attention backend on a CUDA device (see ops/attention/flash_cuda.cu).
#pragma once

#include "ops/attention/attention.h"

namespace attnscope::ops::attention {

const Backend& flash_cuda_backend();

}  // namespace attnscope::ops::attention
