// ops::rotary_embedding_ on the cpu (arguments checked by ops/rotary_embedding.cpp): each new
// query row and each newly appended key row rotated in place, in f32.
#include "ops/rotary_embedding.h"

namespace attnscope::ops::cpu {

namespace {

// Below this many elements the op runs on the calling thread: starting and joining a team of
// threads costs microseconds, more than the work (a decode step rotates (Hq + Hkv) D values).
constexpr std::int64_t kMinParallelElements = 1 << 15;

// Rotates rows first_row .. first_row + T - 1 of every head of x [B, H, rows_per_head, D];
// row first_row + t sits at position start + t.
void rotate_rows(Context& ctx, float* x, std::int64_t heads_total, std::int64_t rows_per_head,
                 std::int64_t first_row, std::int64_t tokens, std::int64_t head_dim,
                 const float* cos, const float* sin, std::int64_t start) {
  const std::int64_t half = head_dim / 2;
#pragma omp parallel for collapse(2) num_threads(ctx.threads()) \
    schedule(static) if (heads_total * tokens * head_dim >= kMinParallelElements)
  for (std::int64_t head = 0; head < heads_total; ++head) {
    for (std::int64_t t = 0; t < tokens; ++t) {
      float* row = x + (head * rows_per_head + first_row + t) * head_dim;
      const float* c = cos + (start + t) * half;
      const float* s = sin + (start + t) * half;
      for (std::int64_t i = 0; i < half; ++i) {
        const float first = row[i];
        const float second = row[i + half];
        row[i] = first * c[i] - second * s[i];
        row[i + half] = second * c[i] + first * s[i];
      }
    }
  }
}

}  // namespace

void rotary_embedding_(Context& ctx, Tensor& q, Tensor& k_cache, const RotaryTable& table,
                       std::int64_t start) {
  const std::int64_t tokens = q.dim(2);
  const std::int64_t head_dim = q.dim(3);
  const float* cos = table.cos.data<float>();
  const float* sin = table.sin.data<float>();
  rotate_rows(ctx, q.data<float>(), q.dim(0) * q.dim(1), tokens, 0, tokens, head_dim, cos, sin,
              start);
  rotate_rows(ctx, k_cache.data<float>(), k_cache.dim(0) * k_cache.dim(1), k_cache.dim(2), start,
              tokens, head_dim, cos, sin, start);
}

}  // namespace attnscope::ops::cpu
