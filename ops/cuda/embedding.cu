// ops::embedding on a GPU: out[n, :] = token_table[token_ids[n], :] + position_table[positions[n],
// :], or the token row alone without a position table (position_table == nullptr).
//
// One block per row n (N blocks of 256 threads, one launch); the threads stride over the C
// columns, so each table row is read with coalesced loads. The ids come from device memory, so
// the host cannot check them without a synchronisation; each block checks its own: an id
// outside [0, V) or a position outside [0, P) makes the row NaN, and no table memory outside
// the tables is ever read. (The model checks ids on the host before uploading them.)
// Cost: reads 2 N C elements and 2 N ids, writes N C elements.
#include "ops/cuda/device_math.cuh"
#include "ops/embedding.h"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void embedding_kernel(const T* token_table, const T* position_table,
                                 const std::int32_t* token_ids, const std::int32_t* positions,
                                 T* out, std::int64_t vocab, std::int64_t n_positions,
                                 std::int64_t width) {
  const std::int64_t row = blockIdx.x;
  const std::int64_t id = token_ids[row];
  const std::int64_t pos = position_table == nullptr ? 0 : positions[row];
  T* dst = out + row * width;
  if (id < 0 || id >= vocab || (position_table != nullptr && (pos < 0 || pos >= n_positions))) {
    for (std::int64_t c = threadIdx.x; c < width; c += blockDim.x) dst[c] = from_f32<T>(NAN);
    return;
  }
  const T* token_row = token_table + id * width;
  for (std::int64_t c = threadIdx.x; c < width; c += blockDim.x) {
    const float position_value =
        position_table == nullptr ? 0.0f : load_f32(position_table + pos * width, c);
    dst[c] = from_f32<T>(load_f32(token_row, c) + position_value);
  }
}

}  // namespace

void embedding(Context& ctx, const Tensor& token_table, const Tensor& position_table,
               const Tensor& token_ids, const Tensor& positions, Tensor& out) {
  const std::int64_t rows = token_ids.dim(0);
  if (rows == 0) return;
  const bool learned = position_table.defined();
  with_storage_type(token_table.dtype(), "embedding", [&](auto tag) {
    using T = decltype(tag);
    embedding_kernel<T><<<static_cast<unsigned int>(rows), kThreads, 0, gpu::stream_of(ctx)>>>(
        static_cast<const T*>(token_table.raw_data()),
        learned ? static_cast<const T*>(position_table.raw_data()) : nullptr,
        token_ids.data<std::int32_t>(), positions.data<std::int32_t>(),
        static_cast<T*>(out.raw_data()), token_table.dim(0), learned ? position_table.dim(0) : 0,
        token_table.dim(1));
    gpu::check_launch("embedding_kernel");
  });
}

}  // namespace attnscope::ops::cuda
