// Argument checks shared by the ops: every op validates the tensors it is given and throws
// attnscope::Error naming the op and the mismatch, before touching any memory.
#pragma once

#include <string>

#include "runtime/error.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

// Throws unless `t` has exactly `shape`.
inline void require_shape(const Tensor& t, const Shape& shape, const char* op, const char* arg) {
  check(t.shape() == shape, op, [&] {
    return std::string(arg) + ": expected shape " + shape_string(shape) + ", got " +
           shape_string(t.shape());
  });
}

}  // namespace attnscope::ops
