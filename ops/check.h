// Argument checks shared by the ops: every op validates the tensors it is given and throws
// attnscope::Error naming the op and the mismatch, before touching any memory.
#pragma once

#include <string>

#include "runtime/error.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

// Throws unless `t` is a defined f32 CPU tensor.
inline void require_cpu_f32(const Tensor& t, const char* op, const char* arg) {
  check(t.defined(), op, std::string(arg) + " is undefined");
  check(t.device() == Device::CPU, op, std::string(arg) + " must be on the cpu");
  check(t.dtype() == DType::F32, op,
        std::string(arg) + " must be f32, got " + std::string(dtype_name(t.dtype())));
}

// Throws unless `t` has exactly `shape`.
inline void require_shape(const Tensor& t, const Shape& shape, const char* op, const char* arg) {
  check(t.shape() == shape, op,
        std::string(arg) + ": expected shape " + shape_string(shape) + ", got " +
            shape_string(t.shape()));
}

}  // namespace attnscope::ops
