// `math` attention on a CUDA device: the generic, dtype-safe path of a library (PyTorch's SDPA
// MATH backend is the model), the same eleven steps as math_cpu.cpp, each one launch:
//
//   q32, k32, v32 = q, k, v converted to f32      3 conversion kernels (copies even from f32;
//                                                 of k and v only the kv_len valid rows)
//   mask   = causal mask rebuilt on every call    kernel writing Tq x Tk bytes
//   q32 *= sqrt(scale); k32 *= sqrt(scale)        2 elementwise kernels (the scale split)
//   scores = q32 @ k32^T                          f32 cuBLAS GEMM, no TF32   -> new [B, Hq, Tq, Tk]
//   masked = where(mask, scores, -inf)            select kernel              -> new [B, Hq, Tq, Tk]
//   probs  = safe_softmax(masked)                 row kernel; all -inf rows -> 0, not NaN
//   out32  = probs @ v32                          f32 cuBLAS GEMM            -> new [B, Hq, Tq, D]
//   out    = out32 converted to out's dtype       conversion kernel
//
// Everything between the conversions is f32 whatever the storage dtype, so f16/bf16 inputs pay
// only the final rounding of the output.
// Cost model (S = B Hq Tq Tk, Q = B Hq Tq D, K = B Hkv Tk D): 11 launches per call; temporaries
// 4 (2 Q + 2 K + 3 S) + Tq Tk bytes, all live at the peak (1665 MiB at B=8, H=16, T=1024, D=64
// in any dtype). Between the GEMMs it moves about 9 S f32 elements, plus the conversions and the
// mask, which the hand-written backends never build.
#include <cmath>
#include <cstdint>

#include "ops/attention/cost_models.h"
#include "ops/attention/cuda_steps.h"
#include "ops/attention/math_cuda.h"
#include "ops/cuda/device_math.cuh"
#include "profiler/scope.h"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::attention {

namespace {

using ops::cuda::from_f32;
using ops::cuda::load_f32;

constexpr int kThreads = 256;

__device__ __forceinline__ std::int64_t global_thread() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_threads() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

// out[i] = in[i] converted from From to To, over n elements.
template <typename From, typename To>
__global__ void convert_kernel(const From* in, To* out, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_threads()) {
    out[i] = from_f32<To>(load_f32(in, i));
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

unsigned int grid_for(std::int64_t n) { return gpu::grid_stride_blocks(n, kThreads); }

class MathCuda final : public Backend {
 public:
  std::string_view name() const override { return "math"; }
  std::string_view summary() const override {
    return "generic safe path: f32 upcast, mask rebuilt per call, select, NaN-safe softmax";
  }

  CostModel cost_model(const Context& /*ctx*/, const Call& call) const override {
    return math_cost(call);
  }

  void forward(Context& ctx, const Call& call) const override {
    profiler::Scope scope(ctx, "attention.math", "attention");
    gpu::validate_gpu_call(ctx, call, "attention math");
    const HeadLayout layout = layout_of(call);
    HeadLayout compact = layout;  // the f32 copies hold only the kv_len valid rows
    compact.capacity = layout.kv_len;
    Allocator& allocator = ctx.allocator();
    const cudaStream_t stream = attnscope::cuda::stream_of(ctx);

    Tensor q32 = Tensor::empty(call.q.shape(), DType::F32, allocator);
    {
      profiler::Scope step(ctx, "math.upcast_q", "kernel");
      convert(ctx, call.q, q32);
    }
    const Shape kv_shape = {layout.batch, layout.kv_heads, layout.kv_len, layout.head_dim};
    Tensor k32 = Tensor::empty(kv_shape, DType::F32, allocator);
    upcast_rows(ctx, "math.upcast_k", call.k, layout, k32);
    Tensor v32 = Tensor::empty(kv_shape, DType::F32, allocator);
    upcast_rows(ctx, "math.upcast_v", call.v, layout, v32);

    const std::int64_t mask_elements = layout.q_len * layout.kv_len;
    Buffer mask(allocator, static_cast<std::size_t>(mask_elements));
    auto* keep = static_cast<std::uint8_t*>(mask.data());
    {
      profiler::Scope step(ctx, "math.build_causal_mask", "kernel");
      if (mask_elements > 0) {
        build_causal_mask_kernel<<<grid_for(mask_elements), kThreads, 0, stream>>>(
            keep, layout.q_len, layout.kv_len);
        attnscope::cuda::check_launch("attention build_causal_mask_kernel");
      }
    }
    const float root_scale = std::sqrt(call.scale);
    {
      profiler::Scope step(ctx, "math.scale_q", "kernel");
      gpu::scale(ctx, q32, q32, root_scale);
    }
    {
      profiler::Scope step(ctx, "math.scale_k", "kernel");
      gpu::scale(ctx, k32, k32, root_scale);
    }

    const Shape score_shape = {layout.batch, layout.q_heads, layout.q_len, layout.kv_len};
    Tensor scores = Tensor::empty(score_shape, DType::F32, allocator);
    {
      profiler::Scope step(ctx, "math.qk_gemm", "kernel");
      gpu::qk_gemm(ctx, compact, q32, k32, scores);
    }
    Tensor masked = Tensor::empty(score_shape, DType::F32, allocator);
    {
      profiler::Scope step(ctx, "math.where", "kernel");
      const std::int64_t n = scores.numel();
      if (n > 0) {
        where_kernel<<<grid_for(n), kThreads, 0, stream>>>(keep, scores.data<float>(),
                                                           masked.data<float>(), n, mask_elements);
        attnscope::cuda::check_launch("attention where_kernel");
      }
    }
    Tensor probs = Tensor::empty(score_shape, DType::F32, allocator);
    {
      profiler::Scope step(ctx, "safe_softmax", "kernel");
      gpu::softmax(ctx, masked, probs, /*nan_safe=*/true);
    }
    Tensor out32 = Tensor::empty(call.q.shape(), DType::F32, allocator);
    {
      profiler::Scope step(ctx, "math.pv_gemm", "kernel");
      gpu::pv_gemm(ctx, compact, probs, v32, out32);
    }
    {
      profiler::Scope step(ctx, "math.downcast_out", "kernel");
      Tensor out = call.out;  // a handle on the caller's output, not a copy of its bytes
      convert(ctx, out32, out);
    }
  }

 private:
  // out = in converted elementwise; one side is f32, the other any storage dtype.
  static void convert(const Context& ctx, const Tensor& in, Tensor& out) {
    const std::int64_t n = in.numel();
    if (n == 0) return;
    const cudaStream_t stream = attnscope::cuda::stream_of(ctx);
    if (in.dtype() == DType::F32) {
      ops::cuda::with_storage_type(out.dtype(), "attention math", [&](auto tag) {
        using T = decltype(tag);
        convert_kernel<float, T><<<grid_for(n), kThreads, 0, stream>>>(
            in.data<float>(), static_cast<T*>(out.raw_data()), n);
      });
    } else {
      ops::cuda::with_storage_type(in.dtype(), "attention math", [&](auto tag) {
        using T = decltype(tag);
        convert_kernel<T, float><<<grid_for(n), kThreads, 0, stream>>>(
            static_cast<const T*>(in.raw_data()), out.data<float>(), n);
      });
    }
    attnscope::cuda::check_launch("attention convert_kernel");
  }

  // Converts the kv_len valid rows of every head of the cache `source` into the f32 `dest`.
  static void upcast_rows(const Context& ctx, const char* name, const Tensor& source,
                          const HeadLayout& layout, Tensor& dest) {
    profiler::Scope step(ctx, name, "kernel");
    const std::int64_t heads = layout.batch * layout.kv_heads;
    const std::int64_t row_elements = layout.kv_len * layout.head_dim;
    if (heads * row_elements == 0) return;
    ops::cuda::with_storage_type(source.dtype(), "attention math", [&](auto tag) {
      using T = decltype(tag);
      upcast_rows_kernel<T>
          <<<grid_for(heads * row_elements), kThreads, 0, attnscope::cuda::stream_of(ctx)>>>(
              static_cast<const T*>(source.raw_data()), dest.data<float>(), heads, row_elements,
              layout.capacity * layout.head_dim);
      attnscope::cuda::check_launch("attention upcast_rows_kernel");
    });
  }
};

}  // namespace

const Backend& math_cuda_backend() {
  static const MathCuda backend;
  return backend;
}

}  // namespace attnscope::ops::attention
