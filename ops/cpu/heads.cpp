#include "ops/heads.h"

#include <algorithm>
#include <string>

#include "ops/check.h"
#include "profiler/scope.h"

namespace attnscope::ops {

// Below this many elements the op runs on the calling thread: starting and joining a team of
// threads costs microseconds, more than the work (a decode step's rows are 768 to 3072 wide).
constexpr std::int64_t kMinParallelElements = 1 << 15;

void split_qkv(Context& ctx, const Tensor& qkv, Tensor& q_out, Tensor& k_cache, Tensor& v_cache,
               std::int64_t start) {
  profiler::Scope scope(ctx, "split_qkv");
  require_cpu_f32(qkv, "split_qkv", "qkv");
  require_cpu_f32(q_out, "split_qkv", "q_out");
  require_cpu_f32(k_cache, "split_qkv", "k_cache");
  require_cpu_f32(v_cache, "split_qkv", "v_cache");
  check(q_out.rank() == 4 && k_cache.rank() == 4, "split_qkv", "q_out and caches must be 4-D");
  const std::int64_t batch = q_out.dim(0);
  const std::int64_t heads = q_out.dim(1);
  const std::int64_t tokens = q_out.dim(2);
  const std::int64_t head_dim = q_out.dim(3);
  const std::int64_t capacity = k_cache.dim(2);
  const std::int64_t width = heads * head_dim;
  require_shape(qkv, {batch, tokens, 3 * width}, "split_qkv", "qkv");
  require_shape(k_cache, {batch, heads, capacity, head_dim}, "split_qkv", "k_cache");
  require_shape(v_cache, k_cache.shape(), "split_qkv", "v_cache");
  check(0 <= start && start + tokens <= capacity, "split_qkv",
        "appending " + std::to_string(tokens) + " tokens at " + std::to_string(start) +
            " overflows a cache of " + std::to_string(capacity));
  const float* src = qkv.data<float>();
  float* q = q_out.data<float>();
  float* k = k_cache.data<float>();
  float* v = v_cache.data<float>();
#pragma omp parallel for collapse(2) num_threads(ctx.threads()) \
    schedule(static) if (batch * tokens * 3 * width >= kMinParallelElements)
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t h = 0; h < heads; ++h) {
      for (std::int64_t t = 0; t < tokens; ++t) {
        const float* row = src + (b * tokens + t) * 3 * width + h * head_dim;
        const std::int64_t cache_row = ((b * heads + h) * capacity + start + t) * head_dim;
        std::copy_n(row, head_dim, q + ((b * heads + h) * tokens + t) * head_dim);
        std::copy_n(row + width, head_dim, k + cache_row);
        std::copy_n(row + 2 * width, head_dim, v + cache_row);
      }
    }
  }
}

void merge_heads(Context& ctx, const Tensor& x, Tensor& out) {
  profiler::Scope scope(ctx, "merge_heads");
  require_cpu_f32(x, "merge_heads", "x");
  require_cpu_f32(out, "merge_heads", "out");
  check(x.rank() == 4, "merge_heads", "x must be 4-D");
  const std::int64_t batch = x.dim(0);
  const std::int64_t heads = x.dim(1);
  const std::int64_t tokens = x.dim(2);
  const std::int64_t head_dim = x.dim(3);
  require_shape(out, {batch, tokens, heads * head_dim}, "merge_heads", "out");
  const float* src = x.data<float>();
  float* dst = out.data<float>();
#pragma omp parallel for collapse(2) num_threads(ctx.threads()) \
    schedule(static) if (x.numel() >= kMinParallelElements)
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t t = 0; t < tokens; ++t) {
      for (std::int64_t h = 0; h < heads; ++h) {
        std::copy_n(src + ((b * heads + h) * tokens + t) * head_dim, head_dim,
                    dst + ((b * tokens + t) * heads + h) * head_dim);
      }
    }
  }
}

}  // namespace attnscope::ops
