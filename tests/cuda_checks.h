// What the GPU suites (tests/test_cuda_*.cpp, label gpu) share: the loud skip every GPU test
// starts with, the poisoned output a kernel must overwrite, and the shape of an attention call
// (tests/test_cuda_attention.cpp, tests/test_cuda_flash.cpp).
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>

#include "runtime/context.h"
#include "runtime/cuda/device.h"
#include "runtime/tensor.h"
#include "runtime/transfer.h"

namespace attnscope::testing {

// True, after saying "SKIPPED: <why>", when no CUDA device is usable. Every GPU test starts with
// `if (gpu_missing()) return;`, so that a machine without a GPU passes the suite and says why.
inline bool gpu_missing() {
  const std::string why = gpu::unavailable_reason();
  if (!why.empty()) MESSAGE("SKIPPED: " << why);
  return !why.empty();
}

// A tensor of 0xFF bytes on the device of `gpu`: NaN in every float dtype (-1 in i32), so that an
// element a kernel never writes fails the comparison after it.
inline Tensor poisoned(Context& gpu, const Shape& shape, DType dtype) {
  Tensor host = Tensor::empty(shape, dtype, gpu.host_allocator());
  std::memset(host.raw_data(), 0xFF, host.nbytes());
  return to_device(gpu, host);
}

// One attention call's shape: q [batch, q_heads, q_len, head_dim] against a cache k, v
// [batch, kv_heads, capacity, head_dim] whose first kv_len rows are valid.
struct AttentionCase {
  std::int64_t batch, q_heads, kv_heads, q_len, kv_len, capacity, head_dim;
};

// All of a case in one line, for CAPTURE.
inline std::ostream& operator<<(std::ostream& out, const AttentionCase& c) {
  return out << "batch " << c.batch << ", heads " << c.q_heads << "/" << c.kv_heads << ", q_len "
             << c.q_len << ", kv_len " << c.kv_len << ", capacity " << c.capacity << ", head_dim "
             << c.head_dim;
}

}  // namespace attnscope::testing
