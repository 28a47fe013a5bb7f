// ops::linear on a GPU: out[N, M] = x[N, K] W[M, K]^T + b[M], one cublasLt matmul
// (ops::linear_residual: out += x W^T + b, the same matmul with beta = 1).
//
// Row-major tensors, column-major cuBLAS. cuBLAS reads every matrix column-major, and a
// row-major [R, C] matrix is, byte for byte, the column-major C x R matrix (its transpose). So:
//   out [N, M] row-major = D, column-major M x N, leading dimension M
//   W   [M, K] row-major = column-major K x M (ld K) = W^T;  op(A) = transpose -> M x K = W
//   x   [N, K] row-major = column-major K x N (ld K) = x^T;  op(B) = none      -> K x N
//   D (M x N) = W (M x K) x^T (K x N) = (x W^T)^T, which read row-major is exactly out [N, M].
// The bias [M] has one entry per row of D: what CUBLASLT_EPILOGUE_BIAS broadcasts over D's
// columns. No transposed copy is ever made.
//
// Precision: CUBLAS_COMPUTE_32F with f32 scale. f32 inputs stay true f32 (TF32 would need
// CUBLAS_COMPUTE_32F_FAST_TF32); f16/bf16 inputs run on tensor cores with exact products and f32
// accumulation; D is rounded once to out's dtype (split-K sums are kept in f32: the heuristic
// is offered no reduction scheme in the output dtype). out may be f32 from f16/bf16 inputs (the LM
// head's logits): cublasLt takes C/D of f32 with A/B of f16/bf16 under COMPUTE_32F.
// Bias: the epilogue's bias has D's dtype by default (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE), so it
// is fused when bias and out share a dtype. Otherwise (a bf16 bias with f32 out), or when the
// heuristic offers no epilogue kernel for a shape, a plain GEMM is followed by our own bias
// kernel (one more launch and one more read and write of out); when cublasLt has no algorithm at
// all (operands at odd addresses), the plain GEMM is cublasGemmEx, which takes any alignment.
// Alignment: a tensor view may start anywhere, so the heuristic is told each pointer's actual
// alignment and only picks kernels whose vector loads it allows.
// Cost: 2 N M K FLOPs; reads M K + N K (+ M) elements and writes N M; one launch (plus cuBLAS's
// own split-K reduction kernels for some shapes). Host side: descriptors per call; the
// heuristic's algorithm is asked once per problem and kept in the context (gemm_algorithms).
#include <cublasLt.h>

#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "ops/cuda/device_math.cuh"
#include "ops/linear.h"
#include "profiler/scope.h"
#include "runtime/cuda/cublas_library.h"
#include "runtime/cuda/cuda_context.h"

namespace attnscope::ops::cuda {

namespace {

using gpu::check_cublas;

constexpr int kThreads = 256;

// cublasLt descriptors, destroyed on every path out of a call (including errors).
using MatmulDesc =
    std::unique_ptr<cublasLtMatmulDescOpaque_t, decltype(&cublasLtMatmulDescDestroy)>;
using Layout =
    std::unique_ptr<cublasLtMatrixLayoutOpaque_t, decltype(&cublasLtMatrixLayoutDestroy)>;
using Preference =
    std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, decltype(&cublasLtMatmulPreferenceDestroy)>;

// A column-major rows x cols matrix with leading dimension `ld`, of `dtype`.
Layout make_layout(DType dtype, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  cublasLtMatrixLayout_t layout = nullptr;
  check_cublas(gpu::cublas().lt_matrix_layout_create(&layout, data_type_of(dtype, "linear"),
                                                     static_cast<std::uint64_t>(rows),
                                                     static_cast<std::uint64_t>(cols), ld),
               "linear: cublasLtMatrixLayoutCreate");
  return Layout(layout, gpu::cublas().lt_matrix_layout_destroy);
}

// The largest power of two up to 256 that divides the address.
std::uint32_t alignment_of(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

template <typename T>
void set_attribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute,
                   const T& value) {
  check_cublas(gpu::cublas().lt_matmul_desc_set_attribute(desc, attribute, &value, sizeof(value)),
               "linear: cublasLtMatmulDescSetAttribute");
}

template <typename T>
void set_preference(cublasLtMatmulPreference_t preference,
                    cublasLtMatmulPreferenceAttributes_t attribute, const T& value) {
  check_cublas(gpu::cublas().lt_matmul_preference_set_attribute(preference, attribute, &value,
                                                                sizeof(value)),
               "linear: cublasLtMatmulPreferenceSetAttribute");
}

// cublasLt's best algorithm for the problem (descriptors and the operands' alignments), or
// nullopt when it has none.
std::optional<cublasLtMatmulAlgo_t> ask_heuristic(Context& ctx, cublasLtMatmulDesc_t desc,
                                                  cublasLtMatrixLayout_t a,
                                                  cublasLtMatrixLayout_t b,
                                                  cublasLtMatrixLayout_t d, const Tensor& weight,
                                                  const Tensor& x, const Tensor& out) {
  const gpu::DeviceState& state = gpu::device_state(ctx);
  cublasLtMatmulPreference_t raw_preference = nullptr;
  check_cublas(gpu::cublas().lt_matmul_preference_create(&raw_preference),
               "linear: cublasLtMatmulPreferenceCreate");
  const Preference preference(raw_preference, gpu::cublas().lt_matmul_preference_destroy);
  set_preference(preference.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                 state.cublas_workspace_bytes);
  // Split-K partial sums are added in f32 (or not split at all), never in a 16-bit output dtype:
  // D is rounded once.
  set_preference(preference.get(), CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                 static_cast<std::uint32_t>(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE));
  set_preference(preference.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                 alignment_of(weight.raw_data()));
  set_preference(preference.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                 alignment_of(x.raw_data()));
  set_preference(preference.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                 alignment_of(out.raw_data()));
  set_preference(preference.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                 alignment_of(out.raw_data()));

  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t status = gpu::cublas().lt_matmul_algo_get_heuristic(
      gpu::cublaslt_of(ctx), desc, a, b, d, d, preference.get(), 1, &heuristic, &found);
  // No algorithm, or one whose own state is not SUCCESS (cublasLt.h asks callers to read it):
  // the caller falls back to cublasGemmEx.
  if (status == CUBLAS_STATUS_NOT_SUPPORTED ||
      (status == CUBLAS_STATUS_SUCCESS &&
       (found == 0 || heuristic.state != CUBLAS_STATUS_SUCCESS))) {
    return std::nullopt;
  }
  check_cublas(status, "linear: cublasLtMatmulAlgoGetHeuristic");
  return heuristic.algo;
}

// Runs out = x W^T (+ bias, in the epilogue, when `bias` is given), or with `accumulate`
// out += ... (beta = 1: out is also the C operand, in place, which cublasLt allows when C and D
// share pointer and layout). Returns false, having launched nothing, when cublasLt has no
// algorithm for this combination.
bool matmul(Context& ctx, const Tensor& x, const Tensor& weight, const Tensor* bias, Tensor& out,
            bool accumulate) {
  const std::int64_t rows = x.dim(0);          // N
  const std::int64_t in = x.dim(1);            // K
  const std::int64_t outputs = weight.dim(0);  // M
  gpu::DeviceState& state = gpu::device_state(ctx);

  cublasLtMatmulDesc_t raw_desc = nullptr;
  check_cublas(gpu::cublas().lt_matmul_desc_create(&raw_desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
               "linear: cublasLtMatmulDescCreate");
  const MatmulDesc desc(raw_desc, gpu::cublas().lt_matmul_desc_destroy);
  set_attribute(desc.get(), CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  set_attribute(desc.get(), CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  if (bias != nullptr) {
    set_attribute(desc.get(), CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
    const void* bias_data = bias->raw_data();
    set_attribute(desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias_data);
  }

  const Layout a = make_layout(weight.dtype(), in, outputs, in);      // W^T, K x M
  const Layout b = make_layout(x.dtype(), in, rows, in);              // x^T, K x N
  const Layout d = make_layout(out.dtype(), outputs, rows, outputs);  // out^T, M x N

  // The problem: shapes, dtypes, epilogue and the alignments the algorithm may rely on.
  const std::string problem = std::to_string(rows) + "x" + std::to_string(in) + "x" +
                              std::to_string(outputs) + ":" + std::string(dtype_name(x.dtype())) +
                              "," + std::string(dtype_name(out.dtype())) + "," +
                              (bias ? std::string(dtype_name(bias->dtype())) : "none") + "@" +
                              std::to_string(alignment_of(weight.raw_data())) + "," +
                              std::to_string(alignment_of(x.raw_data())) + "," +
                              std::to_string(alignment_of(out.raw_data())) + "," +
                              // the heuristic reads the bias pointer's alignment too
                              (bias ? std::to_string(alignment_of(bias->raw_data())) : "-");
  auto known = state.gemm_algorithms.find(problem);
  if (known == state.gemm_algorithms.end()) {
    known = state.gemm_algorithms
                .emplace(problem,
                         ask_heuristic(ctx, desc.get(), a.get(), b.get(), d.get(), weight, x, out))
                .first;
  }
  if (!known->second) return false;

  // beta = 0: C is not read; it is given out's layout and pointer, as cublasLt requires one.
  const float alpha = 1.0f;
  const float beta = accumulate ? 1.0f : 0.0f;
  check_cublas(
      gpu::cublas().lt_matmul(gpu::cublaslt_of(ctx), desc.get(), &alpha, weight.raw_data(), a.get(),
                              x.raw_data(), b.get(), &beta, out.raw_data(), d.get(), out.raw_data(),
                              d.get(), &*known->second, state.cublas_workspace,
                              state.cublas_workspace_bytes, gpu::stream_of(ctx)),
      "linear: cublasLtMatmul");
  return true;
}

// The same product through cublasGemmEx, for operands cublasLt has no algorithm for (views that
// start at odd addresses): the classic API takes any alignment. Same column-major mapping as
// matmul(): D (M x N) = op_T(W^T) (M x K) x^T (K x N).
void gemm_ex(Context& ctx, const Tensor& x, const Tensor& weight, Tensor& out, bool accumulate) {
  const char* op = "linear: cublasGemmEx";
  check(x.dim(0) <= INT_MAX && x.dim(1) <= INT_MAX && weight.dim(0) <= INT_MAX, "linear",
        "matrix dimensions exceed cuBLAS's int range");
  const int rows = static_cast<int>(x.dim(0));
  const int in = static_cast<int>(x.dim(1));
  const int outputs = static_cast<int>(weight.dim(0));
  const float alpha = 1.0f;
  const float beta = accumulate ? 1.0f : 0.0f;
  check_cublas(
      gpu::cublas().gemm_ex(gpu::cublas_of(ctx), CUBLAS_OP_T, CUBLAS_OP_N, outputs, rows, in,
                            &alpha, weight.raw_data(), data_type_of(weight.dtype(), "linear"), in,
                            x.raw_data(), data_type_of(x.dtype(), "linear"), in, &beta,
                            out.raw_data(), data_type_of(out.dtype(), "linear"), outputs,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      op);
}

// out[r, m] += bias[m], in f32, for the cases the epilogue does not serve.
template <typename TOut, typename TBias>
__global__ void add_bias_kernel(TOut* out, const TBias* bias, std::int64_t outputs,
                                std::int64_t total) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < total) out[i] = from_f32<TOut>(load_f32(out, i) + load_f32(bias, i % outputs));
}

void add_bias(Context& ctx, const Tensor& bias, Tensor& out) {
  const std::int64_t total = out.numel();
  with_storage_type(out.dtype(), "linear", [&](auto out_tag) {
    with_storage_type(bias.dtype(), "linear", [&](auto bias_tag) {
      using TOut = decltype(out_tag);
      using TBias = decltype(bias_tag);
      add_bias_kernel<TOut, TBias>
          <<<gpu::blocks_for(total, kThreads), kThreads, 0, gpu::stream_of(ctx)>>>(
              static_cast<TOut*>(out.raw_data()), static_cast<const TBias*>(bias.raw_data()),
              bias.numel(), total);
      gpu::check_launch("add_bias_kernel");
    });
  });
}

}  // namespace

void linear(Context& ctx, const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& out,
            bool accumulate) {
  if (out.numel() == 0) return;
  check(x.dim(1) > 0, "linear", "x has no columns (K = 0)");
  const bool fused = bias.defined() && bias.dtype() == out.dtype() &&
                     matmul(ctx, x, weight, &bias, out, accumulate);
  if (fused) return;
  {
    profiler::KernelStep step(ctx, "linear.gemm");
    if (!matmul(ctx, x, weight, nullptr, out, accumulate)) gemm_ex(ctx, x, weight, out, accumulate);
  }
  if (bias.defined()) {
    profiler::KernelStep step(ctx, "linear.bias");
    add_bias(ctx, bias, out);
  }
}

}  // namespace attnscope::ops::cuda
