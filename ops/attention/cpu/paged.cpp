// The gathered paged path's copies on the cpu (paged.h): one sequence's q rows and its key and
// value rows out of the blocks into compact f32 tensors (ops/cpu/element_rows.h reads a cache of
// another element type), and its output back into its rows.
#include "ops/attention/paged.h"

#include <algorithm>

#include "ops/cpu/element_rows.h"
#include "ops/cpu/parallel_threshold.h"

namespace attnscope::ops::attention::cpu {

void gather_sequence(Context& ctx, const PagedCall& call, std::int64_t s, Tensor& q_s, Tensor& k_s,
                     Tensor& v_s) {
  const RaggedBatch& batch = *call.batch;
  const std::int64_t q_heads = call.q_heads(), kv_heads = call.kv_heads(), d = call.head_dim();
  const std::int64_t first_row = batch.first_row(s), q_len = batch.q_len(s);
  const std::int64_t kv_len = batch.kv_len(s), block_tokens = batch.block_tokens;
  const std::span<const std::int32_t> blocks = batch.blocks(s);
  // q rows [first_row + t][h] -> q_s[0][h][t]
  for (std::int64_t h = 0; h < q_heads; ++h) {
    for (std::int64_t t = 0; t < q_len; ++t) {
      std::copy_n(call.q.data<float>() + ((first_row + t) * q_heads + h) * d, d,
                  q_s.data<float>() + (h * q_len + t) * d);
    }
  }
  // position p of kv head g -> row p of k_s[0][g]: one block's rows at a time
  const Tensor* from[2] = {&call.key_blocks, &call.value_blocks};
  const DType cache = call.key_blocks.dtype();  // f32, f16, bf16 or q8_0 (read as f32)
  Tensor* to[2] = {&k_s, &v_s};
  const std::int64_t block_count = (kv_len + block_tokens - 1) / block_tokens;
#pragma omp parallel for collapse(3) num_threads(ctx.threads()) \
    schedule(static) if (2 * kv_heads * kv_len * d >= ops::cpu::kMinParallelElements)
  for (int which = 0; which < 2; ++which) {
    for (std::int64_t g = 0; g < kv_heads; ++g) {
      for (std::int64_t b = 0; b < block_count; ++b) {
        const std::int64_t rows = std::min(block_tokens, kv_len - b * block_tokens);
        const std::int64_t block = blocks[static_cast<std::size_t>(b)] * kv_heads + g;
        ops::cpu::rows_to_f32(static_cast<const char*>(from[which]->raw_data()) +
                                  storage_bytes(cache, block * block_tokens * d),
                              cache, rows * d,
                              to[which]->data<float>() + (g * kv_len + b * block_tokens) * d);
      }
    }
  }
}

void scatter_sequence(Context& /*ctx*/, const PagedCall& call, std::int64_t s,
                      const Tensor& out_s) {
  const RaggedBatch& batch = *call.batch;
  const std::int64_t q_heads = call.q_heads(), d = call.head_dim();
  const std::int64_t first_row = batch.first_row(s), q_len = batch.q_len(s);
  for (std::int64_t h = 0; h < q_heads; ++h) {
    for (std::int64_t t = 0; t < q_len; ++t) {
      std::copy_n(out_s.data<float>() + (h * q_len + t) * d, d,
                  call.out.data<float>() + ((first_row + t) * q_heads + h) * d);
    }
  }
}

}  // namespace attnscope::ops::attention::cpu
