// ops::embedding on the cpu (arguments, ids and positions checked by ops/embedding.cpp). The token
// row is widened to f32 (exactly) from the table's dtype, or dequantized from q8_0 blocks (a row
// of a q8_0 table is whole blocks), then the position row is added (when there is a position
// table).
#include "ops/embedding.h"

#include "ops/cpu/parallel_threshold.h"
#include "runtime/dtype.h"

namespace attnscope::ops::cpu {

void embedding(Context& ctx, const Tensor& token_table, const Tensor& position_table,
               std::span<const std::int32_t> token_ids, std::span<const std::int64_t> positions,
               Tensor& out) {
  const std::int64_t width = token_table.dim(1);
  const auto n = static_cast<std::int64_t>(token_ids.size());
  const auto* tokens = static_cast<const char*>(token_table.raw_data());
  const std::size_t token_row_bytes = storage_bytes(token_table.dtype(), width);
  const float* pos_rows = position_table.defined() ? position_table.data<float>() : nullptr;
  float* y = out.data<float>();
#pragma omp parallel for num_threads(ctx.threads()) \
    schedule(static) if (n * width >= kMinParallelElements)
  for (std::int64_t i = 0; i < n; ++i) {
    float* row = y + i * width;
    convert_elements(tokens + token_ids[i] * token_row_bytes, token_table.dtype(), row, DType::F32,
                     static_cast<std::size_t>(width));
    if (pos_rows == nullptr) continue;
    const float* p = pos_rows + positions[i] * width;
    for (std::int64_t c = 0; c < width; ++c) row[c] += p[c];
  }
}

}  // namespace attnscope::ops::cpu
