#include "ops/embedding.h"

#include <string>

#include "ops/check.h"
#include "profiler/scope.h"

namespace attnscope::ops {

// Below this many elements the op runs on the calling thread: starting and joining a team of
// threads costs microseconds, more than the work (a decode step's rows are 768 to 3072 wide).
constexpr std::int64_t kMinParallelElements = 1 << 15;

void embedding(Context& ctx, const Tensor& token_table, const Tensor& position_table,
               std::span<const std::int32_t> token_ids, std::span<const std::int64_t> positions,
               Tensor& out) {
  profiler::Scope scope(ctx, "embedding");
  require_cpu_f32(token_table, "embedding", "token_table");
  require_cpu_f32(position_table, "embedding", "position_table");
  require_cpu_f32(out, "embedding", "out");
  check(token_table.rank() == 2 && position_table.rank() == 2, "embedding", "tables must be 2-D");
  const std::int64_t vocab = token_table.dim(0);
  const std::int64_t n_positions = position_table.dim(0);
  const std::int64_t width = token_table.dim(1);
  const auto n = static_cast<std::int64_t>(token_ids.size());
  check(position_table.dim(1) == width, "embedding", "tables differ in width");
  check(positions.size() == token_ids.size(), "embedding", "ids and positions differ in length");
  require_shape(out, {n, width}, "embedding", "out");
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t id = token_ids[i];
    const std::int64_t pos = positions[i];
    check(0 <= id && id < vocab, "embedding",
          "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
              std::to_string(vocab) + ")");
    check(0 <= pos && pos < n_positions, "embedding",
          "position " + std::to_string(pos) + " is outside the context [0, " +
              std::to_string(n_positions) + ")");
  }
  const float* tokens = token_table.data<float>();
  const float* pos_rows = position_table.data<float>();
  float* y = out.data<float>();
#pragma omp parallel for num_threads(ctx.threads()) \
    schedule(static) if (n * width >= kMinParallelElements)
  for (std::int64_t i = 0; i < n; ++i) {
    const float* t = tokens + token_ids[i] * width;
    const float* p = pos_rows + positions[i] * width;
    float* row = y + i * width;
    for (std::int64_t c = 0; c < width; ++c) row[c] = t[c] + p[c];
  }
}

}  // namespace attnscope::ops
