// ops::rms_norm on the cpu (arguments checked by ops/rms_norm.cpp).
#include "ops/rms_norm.h"

#include "ops/cpu/for_each_row.h"
#include "ops/cpu/parallel_threshold.h"
#include "ops/cpu/rms_norm_row.h"

namespace attnscope::ops::cpu {

void rms_norm(Context& ctx, const Tensor& x, const Tensor& weight, float eps, Tensor& out) {
  const float* w = weight.data<float>();
  for_each_row(ctx, x, out, kMinParallelElements,
               [&](const float* row, float* dst, std::int64_t width) {
                 rms_norm_row(row, w, eps, dst, width);
               });
}

}  // namespace attnscope::ops::cpu
