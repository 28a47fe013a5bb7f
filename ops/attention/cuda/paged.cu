// The gathered paged path's copies on a GPU (paged.h), one launch each, one thread per element:
//   gather_sequence_kernel   sequence s's q rows into q_s [1, Hq, Tq, D], then its kv_len key and
//                            value rows out of the blocks into k_s, v_s [1, Hkv, kv_len, D]
//                            (the block of each row read from the device copy of the tables)
//   scatter_sequence_kernel  out_s [1, Hq, Tq, D] back into its rows of out [N, Hq, D]
// Consecutive threads take consecutive elements of a destination row, so the stores are
// coalesced and so are the loads within a row. Cost: reads and writes each copied element once.
#include "ops/attention/paged.h"
#include "ops/cuda/device_math.cuh"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::attention::cuda {

namespace {

constexpr int kThreads = 256;

struct SequenceCopy {
  std::int64_t first_row, q_len, kv_len;
  std::int64_t q_heads, kv_heads, head_dim, block_tokens;
  const std::int32_t* blocks;  // the sequence's block table, in device memory
};

template <typename T>
__global__ void gather_sequence_kernel(const T* q, const T* key_blocks, const T* value_blocks,
                                       T* q_s, T* k_s, T* v_s, SequenceCopy c) {
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t q_elements = c.q_heads * c.q_len * c.head_dim;
  const std::int64_t kv_elements = c.kv_heads * c.kv_len * c.head_dim;
  if (index < q_elements) {  // q_s[h][t][d] <- q[first_row + t][h][d]
    const std::int64_t d = index % c.head_dim;
    const std::int64_t t = (index / c.head_dim) % c.q_len;
    const std::int64_t h = index / (c.head_dim * c.q_len);
    q_s[index] = q[((c.first_row + t) * c.q_heads + h) * c.head_dim + d];
    return;
  }
  const std::int64_t i = index - q_elements;
  if (i >= 2 * kv_elements) return;
  const bool key = i < kv_elements;
  const std::int64_t e = key ? i : i - kv_elements;  // k_s or v_s [g][p][d]
  const std::int64_t d = e % c.head_dim;
  const std::int64_t p = (e / c.head_dim) % c.kv_len;
  const std::int64_t g = e / (c.head_dim * c.kv_len);
  const std::int64_t block = c.blocks[p / c.block_tokens];
  const std::int64_t from =
      ((block * c.kv_heads + g) * c.block_tokens + p % c.block_tokens) * c.head_dim + d;
  (key ? k_s : v_s)[e] = (key ? key_blocks : value_blocks)[from];
}

template <typename T>
__global__ void scatter_sequence_kernel(const T* out_s, T* out, SequenceCopy c) {
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= c.q_heads * c.q_len * c.head_dim) return;  // out[first_row + t][h][d]
  const std::int64_t d = index % c.head_dim;
  const std::int64_t h = (index / c.head_dim) % c.q_heads;
  const std::int64_t t = index / (c.head_dim * c.q_heads);
  out[index + c.first_row * c.q_heads * c.head_dim] = out_s[(h * c.q_len + t) * c.head_dim + d];
}

SequenceCopy sequence_copy(const PagedCall& call, std::int64_t s) {
  const RaggedBatch& batch = *call.batch;
  return {
      batch.first_row(s), batch.q_len(s),
      batch.kv_len(s),    call.q_heads(),
      call.kv_heads(),    call.head_dim(),
      batch.block_tokens, batch.device_block_tables.data<std::int32_t>() + s * batch.max_blocks};
}

}  // namespace

void gather_sequence(Context& ctx, const PagedCall& call, std::int64_t s, Tensor& q_s, Tensor& k_s,
                     Tensor& v_s) {
  const SequenceCopy c = sequence_copy(call, s);
  const std::int64_t total = q_s.numel() + k_s.numel() + v_s.numel();
  ops::cuda::with_storage_type(call.q.dtype(), "paged.gather", [&](auto tag) {
    using T = decltype(tag);
    gather_sequence_kernel<T>
        <<<gpu::blocks_for(total, kThreads), kThreads, 0, gpu::stream_of(ctx)>>>(
            static_cast<const T*>(call.q.raw_data()),
            static_cast<const T*>(call.key_blocks.raw_data()),
            static_cast<const T*>(call.value_blocks.raw_data()), static_cast<T*>(q_s.raw_data()),
            static_cast<T*>(k_s.raw_data()), static_cast<T*>(v_s.raw_data()), c);
    gpu::check_launch("gather_sequence_kernel");
  });
}

void scatter_sequence(Context& ctx, const PagedCall& call, std::int64_t s, const Tensor& out_s) {
  const SequenceCopy c = sequence_copy(call, s);
  ops::cuda::with_storage_type(call.q.dtype(), "paged.scatter", [&](auto tag) {
    using T = decltype(tag);
    scatter_sequence_kernel<T>
        <<<gpu::blocks_for(out_s.numel(), kThreads), kThreads, 0, gpu::stream_of(ctx)>>>(
            static_cast<const T*>(out_s.raw_data()), static_cast<T*>(call.out.raw_data()), c);
    gpu::check_launch("scatter_sequence_kernel");
  });
}

}  // namespace attnscope::ops::attention::cuda
