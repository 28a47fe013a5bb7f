// ops::rotary_embedding_ on a GPU: the query and key heads of each row of qkv rotated in place,
// one thread per (x_i, x_{i+D/2}) pair, 256 per block, one launch:
//
//   x_i       <- x_i cos(a_i) - x_{i+D/2} sin(a_i)
//   x_{i+D/2} <- x_{i+D/2} cos(a_i) + x_i sin(a_i)        a_i = positions[n] inv_freq_i
//
// Thread index = (n rotated_heads + head) D/2 + i: consecutive threads take consecutive i, so the
// loads and stores of each half-head and of the table row (cos and sin [P, D/2], f32) are
// coalesced. Math in f32, one rounding to the storage dtype per element; each thread reads and
// writes only its own pair, so in place is safe. A row whose position lies outside the table is
// left as it is (the model checks positions on the host before uploading them).
// Cost: reads and writes (Hq + Hkv) N D elements, reads N D table floats (from L2 after the
// first heads); ~6 FLOPs per pair.
#include "ops/cuda/device_math.cuh"
#include "ops/rotary_embedding.h"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void rotary_embedding_kernel(T* qkv, const std::int32_t* positions, const float* cos,
                                        const float* sin, std::int64_t total_pairs,
                                        std::int64_t rotated_heads, std::int64_t half,
                                        std::int64_t width, std::int64_t table_positions) {
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= total_pairs) return;
  const std::int64_t i = index % half;
  const std::int64_t head = (index / half) % rotated_heads;
  const std::int64_t n = index / (half * rotated_heads);
  const std::int64_t position = positions[n];
  if (position < 0 || position >= table_positions) return;
  T* row = qkv + n * width + head * 2 * half;
  const float c = cos[position * half + i];
  const float s = sin[position * half + i];
  const float first = load_f32(row, i);
  const float second = load_f32(row, i + half);
  row[i] = from_f32<T>(first * c - second * s);
  row[i + half] = from_f32<T>(second * c + first * s);
}

}  // namespace

void rotary_embedding_(Context& ctx, Tensor& qkv, std::int64_t rotated_heads,
                       const Tensor& positions, const RotaryTable& table) {
  const std::int64_t half = table.cos.dim(1);
  const std::int64_t total_pairs = qkv.dim(0) * rotated_heads * half;
  if (total_pairs == 0) return;
  with_storage_type(qkv.dtype(), "rotary_embedding", [&](auto tag) {
    using T = decltype(tag);
    rotary_embedding_kernel<T>
        <<<gpu::blocks_for(total_pairs, kThreads), kThreads, 0, gpu::stream_of(ctx)>>>(
            static_cast<T*>(qkv.raw_data()), positions.data<std::int32_t>(),
            table.cos.data<float>(), table.sin.data<float>(), total_pairs, rotated_heads, half,
            qkv.dim(1), table.cos.dim(0));
    gpu::check_launch("rotary_embedding_kernel");
  });
}

}  // namespace attnscope::ops::cuda
