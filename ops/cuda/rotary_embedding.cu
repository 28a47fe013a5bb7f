// ops::rotary_embedding_ on a GPU: the new query rows and the newly appended key rows rotated
// in place, one thread per (x_i, x_{i+D/2}) pair, 256 per block, one launch for Q and K:
//
//   x_i       <- x_i cos(a_i) - x_{i+D/2} sin(a_i)
//   x_{i+D/2} <- x_{i+D/2} cos(a_i) + x_i sin(a_i)        a_i = (start + t) inv_freq_i
//
// Thread indices 0 .. B Hq T D/2 - 1 take the pairs of q [B, Hq, T, D]; the next B Hkv T D/2
// take those of k_cache[b, h, start + t, :]. Consecutive threads take consecutive i, so the
// loads and stores of each half-row and of the table row (cos and sin [P, D/2], f32) are
// coalesced. Math in f32, one rounding to the storage dtype per element; each thread reads and
// writes only its own pair, so in place is safe.
// Cost: reads and writes (Hq + Hkv) B T D elements, reads T D table floats (from L2 after the
// first heads); ~6 FLOPs per pair.
#include "ops/cuda/device_math.cuh"
#include "ops/rotary_embedding.h"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::cuda {

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void rotary_embedding_kernel(T* q, T* k_cache, const float* cos, const float* sin,
                                        std::int64_t q_pairs, std::int64_t total_pairs,
                                        std::int64_t tokens, std::int64_t half,
                                        std::int64_t capacity, std::int64_t start) {
  const std::int64_t index = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (index >= total_pairs) return;
  const bool is_query = index < q_pairs;
  const std::int64_t pair = is_query ? index : index - q_pairs;
  const std::int64_t i = pair % half;
  const std::int64_t t = (pair / half) % tokens;
  const std::int64_t head = pair / (half * tokens);  // b * heads + h
  T* row = is_query ? q + (head * tokens + t) * 2 * half
                    : k_cache + (head * capacity + start + t) * 2 * half;
  const std::int64_t table_at = (start + t) * half + i;
  const float c = cos[table_at];
  const float s = sin[table_at];
  const float first = load_f32(row, i);
  const float second = load_f32(row, i + half);
  row[i] = from_f32<T>(first * c - second * s);
  row[i + half] = from_f32<T>(second * c + first * s);
}

}  // namespace

void rotary_embedding_(Context& ctx, Tensor& q, Tensor& k_cache, const RotaryTable& table,
                       std::int64_t start) {
  const std::int64_t tokens = q.dim(2);
  const std::int64_t half = q.dim(3) / 2;
  const std::int64_t q_pairs = q.numel() / 2;
  const std::int64_t total_pairs = q_pairs + k_cache.dim(0) * k_cache.dim(1) * tokens * half;
  if (total_pairs == 0) return;
  with_storage_type(q.dtype(), "rotary_embedding", [&](auto tag) {
    using T = decltype(tag);
    rotary_embedding_kernel<T>
        <<<gpu::blocks_for(total_pairs, kThreads), kThreads, 0, gpu::stream_of(ctx)>>>(
            static_cast<T*>(q.raw_data()), static_cast<T*>(k_cache.raw_data()),
            table.cos.data<float>(), table.sin.data<float>(), q_pairs, total_pairs, tokens, half,
            k_cache.dim(2), start);
    gpu::check_launch("rotary_embedding_kernel");
  });
}

}  // namespace attnscope::ops::cuda
