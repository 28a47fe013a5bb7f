// The GPU steps shared by the eager CUDA attention backends (see cuda_steps.h for the math).
//
// Each function is one launch on stream_of(ctx): a cuBLAS strided-batched GEMM or one kernel.
// Costs, with S = B Hq Tq Tk score elements of `e` bytes each:
//   qk_gemm / pv_gemm: 2 S D FLOPs each; read q (or probs) and the kv_len valid K (V) rows,
//                      write S (or B Hq Tq D) elements.
//   scale, copy:       read S, write S.
//   causal_fill:       write the masked elements only (about S / 2 in prefill, none in decode).
//   softmax:           three sweeps of each row (max, sum, normalise): read 3 S, write S; a row
//                      of Tk elements is small enough to stay in L1/L2 between the sweeps.
// Kernels: elementwise ones are grid-stride loops over int64 indices; row ones give one block to
// a row (grid-stride over rows), reduce with device_math.cuh's block_max / block_sum, and compute
// in f32 whatever the storage dtype.
#include <algorithm>
#include <climits>
#include <string>

#include "ops/attention/cuda_steps.h"
#include "ops/cuda/device_math.cuh"
#include "runtime/cuda/cuda_context.h"
#include "runtime/error.h"

namespace attnscope::ops::attention::gpu {

using attnscope::cuda::check_cublas;
using attnscope::cuda::check_launch;
using attnscope::cuda::cublas_of;
using attnscope::cuda::stream_of;
using ops::cuda::block_max;
using ops::cuda::block_sum;
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

template <typename T>
__global__ void copy_kernel(const T* in, T* out, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_threads()) out[i] = in[i];
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

// One block per row (grid-stride over rows): m = max_j x_j, sum = sum_j exp(x_j - m),
// y_j = exp(x_j - m) / sum. Entries equal to -inf give 0. A row of nothing but -inf has m = -inf:
// NaN everywhere (x - m = -inf + inf), or zeros with kNanSafe. Every thread of the block takes
// the same branches (m and sum are block-wide), so the barriers in the reductions are uniform.
template <typename T, bool kNanSafe>
__global__ void softmax_kernel(const T* in, T* out, std::int64_t rows, std::int64_t width) {
  __shared__ float scratch[32];
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = in + row * width;
    T* y = out + row * width;
    float row_max = -INFINITY;
    for (std::int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      row_max = fmaxf(row_max, load_f32(x, j));
    }
    row_max = block_max(row_max, scratch);
    if (kNanSafe && row_max == -INFINITY) {
      for (std::int64_t j = threadIdx.x; j < width; j += blockDim.x) y[j] = from_f32<T>(0.0f);
      continue;
    }
    float sum = 0.0f;
    for (std::int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      sum += expf(load_f32(x, j) - row_max);
    }
    sum = block_sum(sum, scratch);
    const float inv_sum = 1.0f / sum;
    for (std::int64_t j = threadIdx.x; j < width; j += blockDim.x) {
      y[j] = from_f32<T>(expf(load_f32(x, j) - row_max) * inv_sum);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------------------------

cudaDataType_t cuda_type_of(DType dtype, const char* op) {
  switch (dtype) {
    case DType::F32:
      return CUDA_R_32F;
    case DType::F16:
      return CUDA_R_16F;
    case DType::BF16:
      return CUDA_R_16BF;
    case DType::I32:
      break;
  }
  throw Error(op, "expected f32, f16 or bf16 storage, got " + std::string(dtype_name(dtype)));
}

// cuBLAS takes matrix sizes and leading dimensions as int.
int gemm_int(std::int64_t value, const char* op) {
  check(value <= INT_MAX, op,
        "matrix dimension " + std::to_string(value) + " exceeds cuBLAS's int range");
  return static_cast<int>(value);
}

void require_same_dtype(const Tensor& a, const Tensor& b, const Tensor& c, const char* op) {
  check(a.dtype() == b.dtype() && b.dtype() == c.dtype(), op, "operands must share one dtype");
}

}  // namespace

int row_block_threads(std::int64_t width) {
  const std::int64_t warps = (width + 31) / 32;
  return static_cast<int>(32 * std::min<std::int64_t>(std::max<std::int64_t>(warps, 1), 8));
}

unsigned int grid_stride_blocks(std::int64_t n, int threads) {
  const std::int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned int>(std::clamp<std::int64_t>(blocks, 1, kMaxBlocks));
}

void validate_gpu_call(const Context& ctx, const Call& call, const char* op) {
  validate_call(call);
  check(call.q.device() == Device::CUDA, op, "this backend runs on a cuda device");
  attnscope::cuda::device_state(ctx);  // throws unless ctx is a CUDA context
  cuda_type_of(call.q.dtype(), op);    // throws unless f32, f16 or bf16
}

// Row-major per block of one kv head: scores [M, N] = Q [M, D] K [N, D]^T with M = group Tq,
// N = kv_len. cuBLAS is column-major, where a row-major [R, C] matrix reads as its transpose
// [C, R]; so it computes scores^T [N, M] = op(K) Q^T with op = transpose of the stored K^T.
void qk_gemm(const Context& ctx, const HeadLayout& l, const Tensor& q, const Tensor& k,
             Tensor& scores) {
  const char* op = "attention qk_gemm";
  require_same_dtype(q, k, scores, op);
  const std::int64_t rows = l.q_heads / l.kv_heads * l.q_len;  // queries of one kv head
  if (rows == 0 || l.kv_len == 0) return;
  const cudaDataType_t type = cuda_type_of(q.dtype(), op);
  const float one = 1.0f, zero = 0.0f;
  check_cublas(
      cublasGemmStridedBatchedEx(
          cublas_of(ctx), CUBLAS_OP_T, CUBLAS_OP_N, gemm_int(l.kv_len, op), gemm_int(rows, op),
          gemm_int(l.head_dim, op), &one, k.raw_data(), type, gemm_int(l.head_dim, op),
          l.capacity * l.head_dim, q.raw_data(), type, gemm_int(l.head_dim, op), rows * l.head_dim,
          &zero, scores.raw_data(), type, gemm_int(l.kv_len, op), rows * l.kv_len,
          gemm_int(l.batch * l.kv_heads, op), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      op);
}

// Row-major per block: out [M, D] = P [M, N] V [N, D]; column-major: out^T [D, M] = V^T P^T,
// where V^T and P^T are exactly how cuBLAS reads the stored V and P.
void pv_gemm(const Context& ctx, const HeadLayout& l, const Tensor& probs, const Tensor& v,
             Tensor& out) {
  const char* op = "attention pv_gemm";
  require_same_dtype(probs, v, out, op);
  const std::int64_t rows = l.q_heads / l.kv_heads * l.q_len;
  if (rows == 0 || l.head_dim == 0) return;
  const cudaDataType_t type = cuda_type_of(probs.dtype(), op);
  const float one = 1.0f, zero = 0.0f;
  check_cublas(
      cublasGemmStridedBatchedEx(
          cublas_of(ctx), CUBLAS_OP_N, CUBLAS_OP_N, gemm_int(l.head_dim, op), gemm_int(rows, op),
          gemm_int(l.kv_len, op), &one, v.raw_data(), type, gemm_int(l.head_dim, op),
          l.capacity * l.head_dim, probs.raw_data(), type, gemm_int(l.kv_len, op), rows * l.kv_len,
          &zero, out.raw_data(), type, gemm_int(l.head_dim, op), rows * l.head_dim,
          gemm_int(l.batch * l.kv_heads, op), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      op);
}

void scale(const Context& ctx, const Tensor& in, Tensor& out, float factor) {
  check(in.dtype() == out.dtype() && in.numel() == out.numel(), "attention scale",
        "in and out must match");
  const std::int64_t n = in.numel();
  if (n == 0) return;
  with_storage_type(in.dtype(), "attention scale", [&](auto tag) {
    using T = decltype(tag);
    scale_kernel<T>
        <<<grid_stride_blocks(n, kElementwiseThreads), kElementwiseThreads, 0, stream_of(ctx)>>>(
            static_cast<const T*>(in.raw_data()), static_cast<T*>(out.raw_data()), n, factor);
    check_launch("attention scale_kernel");
  });
}

void copy(const Context& ctx, const Tensor& in, Tensor& out) {
  check(in.dtype() == out.dtype() && in.numel() == out.numel(), "attention copy",
        "in and out must match");
  const std::int64_t n = in.numel();
  if (n == 0) return;
  with_storage_type(in.dtype(), "attention copy", [&](auto tag) {
    using T = decltype(tag);
    copy_kernel<T>
        <<<grid_stride_blocks(n, kElementwiseThreads), kElementwiseThreads, 0, stream_of(ctx)>>>(
            static_cast<const T*>(in.raw_data()), static_cast<T*>(out.raw_data()), n);
    check_launch("attention copy_kernel");
  });
}

void causal_fill(const Context& ctx, const HeadLayout& l, Tensor& scores, float value) {
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

void softmax(const Context& ctx, const Tensor& in, Tensor& out, bool nan_safe) {
  check(in.dtype() == out.dtype() && in.shape() == out.shape() && in.rank() >= 1,
        "attention softmax", "in and out must match");
  const std::int64_t width = in.dim(-1);
  const std::int64_t rows = width == 0 ? 0 : in.numel() / width;
  if (rows == 0) return;
  const int threads = row_block_threads(width);
  const unsigned int blocks = grid_stride_blocks(rows, 1);  // one block per row
  with_storage_type(in.dtype(), "attention softmax", [&](auto tag) {
    using T = decltype(tag);
    const auto* x = static_cast<const T*>(in.raw_data());
    auto* y = static_cast<T*>(out.raw_data());
    if (nan_safe) {
      softmax_kernel<T, true><<<blocks, threads, 0, stream_of(ctx)>>>(x, y, rows, width);
    } else {
      softmax_kernel<T, false><<<blocks, threads, 0, stream_of(ctx)>>>(x, y, rows, width);
    }
    check_launch("attention softmax_kernel");
  });
}

}  // namespace attnscope::ops::attention::gpu
