// The eager attention steps on a GPU (ops/attention/steps.h states them; arguments checked by
// ops/attention/steps.cpp, which calls these bodies, declared in cuda/steps.h). Each function is
// one launch on the context's stream: a cuBLAS strided-batched GEMM or one kernel, never a
// synchronisation.
//
// Costs, with S = B Hq Tq Tk score elements of e bytes each:
//   qk_gemm / pv_gemm:  2 S D FLOPs each; read q (or probs) and the kv_len valid K (V) rows,
//                       write S (or B Hq Tq D) elements.
//   scale:              read S, write S (in place or into a new tensor).
//   copy:               read S, write S, as one device-to-device memcpy.
//   causal_fill:        write the masked elements only (about S / 2 in prefill, none in decode).
//   scale_mask_softmax: three sweeps of the visible part of each row (max, sum, normalise) and
//                       one write of the row; a row stays in L1/L2 between the sweeps.
//   upcast_cache_rows:  read B Hkv Tk D elements, write as many floats.
//   build_causal_mask:  write Tq Tk bytes.  where: read S floats and the mask, write S floats.
// Kernels: elementwise ones are grid-stride loops over int64 indices; row ones give one block to
// a row (grid-stride over rows), reduce with device_math.cuh's block_max / block_sum, and compute
// in f32 whatever the storage dtype (f32, f16 or bf16).
//
// Grouped-query attention in one cuBLAS call: the query heads of one kv head are consecutive in
// q ([B, Hq, Tq, D] with Hq = Hkv * group), so for each (batch, kv head) they form one
// [group * Tq, D] row-major matrix, and their scores one [group * Tq, Tk] matrix. A single
// strided-batched GEMM with batch B * Hkv covers the call; row r of a block is query r % Tq.
// K and V rows of one kv head are `capacity` rows apart, so the GEMMs read the KV cache in place
// (only its kv_len valid rows) as well as compact copies of it.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "ops/attention/cuda/steps.h"
#include "ops/check.h"
#include "ops/cuda/device_math.cuh"
#include "runtime/cuda/cublas_library.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/error.h"

namespace attnscope::ops::attention::cuda {

using gpu::check_cublas;
using gpu::check_launch;
using gpu::cublas_of;
using gpu::stream_of;
using ops::cuda::block_max;
using ops::cuda::block_sum;
using ops::cuda::data_type_of;
using ops::cuda::from_f32;
using ops::cuda::load_f32;
using ops::cuda::with_storage_type;

namespace {

constexpr int kElementwiseThreads = 256;
// Grid-stride kernels never launch more blocks than this; each thread then loops.
constexpr std::int64_t kMaxBlocks = std::int64_t{1} << 20;

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------

__device__ __forceinline__ std::int64_t global_thread() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_threads() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

// out[i] = in[i] * factor (in and out may alias: each element is read, then written, by one
// thread).
template <typename T>
__global__ void scale_kernel(const T* in, T* out, std::int64_t n, float factor) {
  for (std::int64_t i = global_thread(); i < n; i += grid_threads()) {
    out[i] = from_f32<T>(load_f32(in, i) * factor);
  }
}

// One block per row of `kv_len` scores (grid-stride over rows): row r belongs to query
// r % q_len, which sees keys 0..kv_len - q_len + r % q_len; the keys after that get `value`.
template <typename T>
__global__ void causal_fill_kernel(T* scores, std::int64_t rows, std::int64_t q_len,
                                   std::int64_t kv_len, float value) {
  const T masked = from_f32<T>(value);
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t visible = kv_len - q_len + row % q_len + 1;
    T* s = scores + row * kv_len;
    for (std::int64_t j = visible + threadIdx.x; j < kv_len; j += blockDim.x) s[j] = masked;
  }
}

// One block per row of `kv_len` scores (grid-stride over the rows). Row r belongs to query
// r % q_len. m and sum are block-wide, so every thread takes the same path through the
// barriers inside block_max / block_sum.
template <typename T>
__global__ void scale_mask_softmax_kernel(T* scores, std::int64_t rows, std::int64_t q_len,
                                          std::int64_t kv_len, float factor) {
  __shared__ float scratch[32];
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    T* s = scores + row * kv_len;
    const std::int64_t visible = kv_len - q_len + row % q_len + 1;  // keys 0..position, >= 1
    float row_max = -INFINITY;
    for (std::int64_t j = threadIdx.x; j < visible; j += blockDim.x) {
      row_max = fmaxf(row_max, load_f32(s, j) * factor);
    }
    row_max = block_max(row_max, scratch);
    float sum = 0.0f;
    for (std::int64_t j = threadIdx.x; j < visible; j += blockDim.x) {
      sum += expf(load_f32(s, j) * factor - row_max);
    }
    sum = block_sum(sum, scratch);
    const float inv_sum = 1.0f / sum;
    // Each element is read and then written by the same thread, so the in-place update is safe.
    for (std::int64_t j = threadIdx.x; j < kv_len; j += blockDim.x) {
      const float p = j < visible ? expf(load_f32(s, j) * factor - row_max) * inv_sum : 0.0f;
      s[j] = from_f32<T>(p);
    }
  }
}

// The first `row_elements` (= kv_len D) elements of each of `heads` cache heads, which lie
// `head_stride` (= capacity D) apart in `cache`, converted to f32 into the compact `out`.
template <typename T>
__global__ void upcast_rows_kernel(const T* cache, float* out, std::int64_t heads,
                                   std::int64_t row_elements, std::int64_t head_stride) {
  const std::int64_t n = heads * row_elements;
  for (std::int64_t i = global_thread(); i < n; i += grid_threads()) {
    const std::int64_t head = i / row_elements;
    out[i] = load_f32(cache, head * head_stride + (i - head * row_elements));
  }
}

// keep[i, j] = 1 when key j is visible to query i (j <= kv_len - q_len + i), else 0.
__global__ void build_causal_mask_kernel(std::uint8_t* keep, std::int64_t q_len,
                                         std::int64_t kv_len) {
  const std::int64_t n = q_len * kv_len;
  for (std::int64_t i = global_thread(); i < n; i += grid_threads()) {
    const std::int64_t query = i / kv_len;
    const std::int64_t key = i - query * kv_len;
    keep[i] = key <= kv_len - q_len + query ? 1 : 0;
  }
}

// masked[i] = keep[i % block] ? scores[i] : -inf, where block = Tq Tk (the mask of one head).
__global__ void where_kernel(const std::uint8_t* keep, const float* scores, float* masked,
                             std::int64_t n, std::int64_t block) {
  for (std::int64_t i = global_thread(); i < n; i += grid_threads()) {
    masked[i] = keep[i % block] != 0 ? scores[i] : -INFINITY;
  }
}

// ---------------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------------

// Threads per block for a kernel that gives one block to each row of `width` elements: a warp
// for short rows, up to 256 threads for long ones.
int row_block_threads(std::int64_t width) {
  const std::int64_t warps = (width + 31) / 32;
  return static_cast<int>(32 * std::min<std::int64_t>(std::max<std::int64_t>(warps, 1), 8));
}

// Blocks for a grid-stride loop over n elements with `threads` per block (at least 1, capped
// so that the grid stays within CUDA's limits; the loop covers the rest).
unsigned int grid_stride_blocks(std::int64_t n, int threads) {
  const std::int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned int>(std::clamp<std::int64_t>(blocks, 1, kMaxBlocks));
}

// cuBLAS takes matrix sizes and leading dimensions as int.
int gemm_int(std::int64_t value, const char* op) {
  check(value <= INT_MAX, op, [&] {
    return "matrix dimension " + std::to_string(value) + " exceeds cuBLAS's int range";
  });
  return static_cast<int>(value);
}

// A column-major GEMM's sizes: C [m, n] = op(A) [m, k] B [k, n].
struct GemmSize {
  std::int64_t m, n, k;
};
// One operand of a strided-batched GEMM: where matrix 0 starts, its leading dimension, and how
// far apart consecutive matrices of the batch lie (in elements).
struct GemmOperand {
  const void* data;
  std::int64_t leading_dim;
  std::int64_t batch_stride;
};
struct GemmOutput {
  void* data;
  std::int64_t leading_dim;
  std::int64_t batch_stride;
};

// C_i = op(A_i) B_i for i < batch: one cuBLAS strided-batched GEMM, all operands of `dtype`,
// f32 accumulation (tensor cores for f16/bf16), B never transposed.
void batched_gemm(Context& ctx, const char* op, cublasOperation_t a_op, GemmSize size,
                  GemmOperand a, GemmOperand b, GemmOutput c, std::int64_t batch, DType dtype) {
  const cudaDataType_t type = data_type_of(dtype, op);
  const float one = 1.0f, zero = 0.0f;
  check_cublas(gpu::cublas().gemm_strided_batched_ex(
                   cublas_of(ctx), a_op, CUBLAS_OP_N, gemm_int(size.m, op), gemm_int(size.n, op),
                   gemm_int(size.k, op), &one, a.data, type, gemm_int(a.leading_dim, op),
                   a.batch_stride, b.data, type, gemm_int(b.leading_dim, op), b.batch_stride, &zero,
                   c.data, type, gemm_int(c.leading_dim, op), c.batch_stride, gemm_int(batch, op),
                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               op);
}

// Blocks for an elementwise kernel over n elements.
unsigned int elementwise_blocks(std::int64_t n) {
  return grid_stride_blocks(n, kElementwiseThreads);
}

}  // namespace

// Row-major per block of one kv head: scores [M, N] = Q [M, D] K [N, D]^T with M = group Tq,
// N = kv_len. cuBLAS is column-major, where a row-major [R, C] matrix reads as its transpose
// [C, R]; so it computes scores^T [N, M] = op(K) Q^T with op = transpose of the stored K^T.
void qk_gemm(Context& ctx, const HeadLayout& l, const Tensor& q, const Tensor& k, Tensor& scores) {
  const std::int64_t rows = l.q_heads / l.kv_heads * l.q_len;  // queries of one kv head
  if (rows == 0 || l.kv_len == 0) return;
  batched_gemm(ctx, "attention qk_gemm", CUBLAS_OP_T, {l.kv_len, rows, l.head_dim},
               {k.raw_data(), l.head_dim, l.capacity * l.head_dim},
               {q.raw_data(), l.head_dim, rows * l.head_dim},
               {scores.raw_data(), l.kv_len, rows * l.kv_len}, l.batch * l.kv_heads, q.dtype());
}

// Row-major per block: out [M, D] = P [M, N] V [N, D]; column-major: out^T [D, M] = V^T P^T,
// where V^T and P^T are exactly how cuBLAS reads the stored V and P.
void pv_gemm(Context& ctx, const HeadLayout& l, const Tensor& probs, const Tensor& v, Tensor& out) {
  const std::int64_t rows = l.q_heads / l.kv_heads * l.q_len;
  if (rows == 0 || l.head_dim == 0) return;
  batched_gemm(ctx, "attention pv_gemm", CUBLAS_OP_N, {l.head_dim, rows, l.kv_len},
               {v.raw_data(), l.head_dim, l.capacity * l.head_dim},
               {probs.raw_data(), l.kv_len, rows * l.kv_len},
               {out.raw_data(), l.head_dim, rows * l.head_dim}, l.batch * l.kv_heads,
               probs.dtype());
}

void scale(Context& ctx, const Tensor& in, Tensor& out, float factor) {
  const std::int64_t n = in.numel();
  if (n == 0) return;
  with_storage_type(in.dtype(), "attention scale", [&](auto tag) {
    using T = decltype(tag);
    scale_kernel<T><<<elementwise_blocks(n), kElementwiseThreads, 0, stream_of(ctx)>>>(
        static_cast<const T*>(in.raw_data()), static_cast<T*>(out.raw_data()), n, factor);
    check_launch("attention scale_kernel");
  });
}

// A real copy, as an eager framework's clone of a contiguous tensor: one device-to-device
// memcpy on the stream (PyTorch's traces show it as "Memcpy DtoD").
void copy(Context& ctx, const Tensor& in, Tensor& out) {
  if (in.nbytes() == 0) return;
  gpu::check_cuda(cudaMemcpyAsync(out.raw_data(), in.raw_data(), in.nbytes(),
                                  cudaMemcpyDeviceToDevice, stream_of(ctx)),
                  "attention copy");
}

void causal_fill(Context& ctx, const HeadLayout& l, Tensor& scores, float value) {
  const std::int64_t rows = l.heads() * l.q_len;
  if (rows == 0 || l.kv_len == 0) return;
  const int threads = row_block_threads(l.kv_len);
  const unsigned int blocks = grid_stride_blocks(rows, 1);  // one block per row
  with_storage_type(scores.dtype(), "attention causal_fill", [&](auto tag) {
    using T = decltype(tag);
    causal_fill_kernel<T><<<blocks, threads, 0, stream_of(ctx)>>>(
        static_cast<T*>(scores.raw_data()), rows, l.q_len, l.kv_len, value);
    check_launch("attention causal_fill_kernel");
  });
}

void scale_mask_softmax(Context& ctx, const HeadLayout& l, Tensor& scores, float factor) {
  const std::int64_t rows = l.heads() * l.q_len;
  if (rows == 0) return;
  const int threads = row_block_threads(l.kv_len);
  const unsigned int blocks = grid_stride_blocks(rows, 1);  // one block per row
  with_storage_type(scores.dtype(), "attention fused", [&](auto tag) {
    using T = decltype(tag);
    scale_mask_softmax_kernel<T><<<blocks, threads, 0, stream_of(ctx)>>>(
        static_cast<T*>(scores.raw_data()), rows, l.q_len, l.kv_len, factor);
    check_launch("attention scale_mask_softmax_kernel");
  });
}

void upcast_cache_rows(Context& ctx, const HeadLayout& l, const Tensor& cache, Tensor& out) {
  const std::int64_t heads = l.batch * l.kv_heads;
  const std::int64_t row_elements = l.kv_len * l.head_dim;
  if (heads * row_elements == 0) return;
  with_storage_type(cache.dtype(), "attention upcast_cache_rows", [&](auto tag) {
    using T = decltype(tag);
    upcast_rows_kernel<T>
        <<<elementwise_blocks(heads * row_elements), kElementwiseThreads, 0, stream_of(ctx)>>>(
            static_cast<const T*>(cache.raw_data()), out.data<float>(), heads, row_elements,
            l.capacity * l.head_dim);
    check_launch("attention upcast_rows_kernel");
  });
}

void build_causal_mask(Context& ctx, const HeadLayout& l, Buffer& keep) {
  const std::int64_t n = l.q_len * l.kv_len;
  if (n == 0) return;
  build_causal_mask_kernel<<<elementwise_blocks(n), kElementwiseThreads, 0, stream_of(ctx)>>>(
      static_cast<std::uint8_t*>(keep.data()), l.q_len, l.kv_len);
  check_launch("attention build_causal_mask_kernel");
}

void where(Context& ctx, const Buffer& keep, const Tensor& scores, Tensor& masked) {
  const std::int64_t n = scores.numel();
  if (n == 0) return;
  where_kernel<<<elementwise_blocks(n), kElementwiseThreads, 0, stream_of(ctx)>>>(
      static_cast<const std::uint8_t*>(keep.data()), scores.data<float>(), masked.data<float>(), n,
      scores.dim(2) * scores.dim(3));
  check_launch("attention where_kernel");
}

}  // namespace attnscope::ops::attention::cuda
