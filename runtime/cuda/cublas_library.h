// cuBLAS and cublasLt, opened with dlopen when the first CUDA context is made, not linked.
//
// Linked, the two libraries cost every run of attnscope about 210 MB of resident memory at
// start-up (the dynamic loader relocates libcublasLt and its constructors register its kernels),
// `tokenize` and every CPU run included. Opened here on the first `--device cuda`, a CPU run
// never maps them. Each function attnscope calls is looked up once by its exported name; the
// rest of the CUDA code calls it through cublas() as it would call the library itself.
//
// Cost: one dlopen and about 20 dlsym calls, once per process.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

namespace attnscope::gpu {

// cublas_api.h overloads these two in C++ (wrappers taking a cudaDataType compute type); the
// exported C functions, the ones looked up, take a cublasComputeType_t.
using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                  int, const void*, const void*, cudaDataType, int, const void*,
                                  cudaDataType, int, const void*, void*, cudaDataType, int,
                                  cublasComputeType_t, cublasGemmAlgo_t);
using GemmStridedBatchedEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t,
                                                cublasOperation_t, int, int, int, const void*,
                                                const void*, cudaDataType, int, long long,
                                                const void*, cudaDataType, int, long long,
                                                const void*, void*, cudaDataType, int, long long,
                                                int, cublasComputeType_t, cublasGemmAlgo_t);
// Both name a declared overload (unevaluated: no link to the library).
static_assert(sizeof(static_cast<GemmEx>(&cublasGemmEx)) > 0);
static_assert(sizeof(static_cast<GemmStridedBatchedEx>(&cublasGemmStridedBatchedEx)) > 0);

struct CublasLibrary {
  decltype(&cublasCreate) create;
  decltype(&cublasDestroy) destroy;
  decltype(&cublasSetStream) set_stream;
  decltype(&cublasSetWorkspace) set_workspace;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasGetStatusName) status_name;
  decltype(&cublasGetStatusString) status_string;
  GemmEx gemm_ex;
  GemmStridedBatchedEx gemm_strided_batched_ex;
  decltype(&cublasLtCreate) lt_create;
  decltype(&cublasLtDestroy) lt_destroy;
  decltype(&cublasLtMatmul) lt_matmul;
  decltype(&cublasLtMatmulAlgoGetHeuristic) lt_matmul_algo_get_heuristic;
  decltype(&cublasLtMatmulDescCreate) lt_matmul_desc_create;
  decltype(&cublasLtMatmulDescDestroy) lt_matmul_desc_destroy;
  decltype(&cublasLtMatmulDescSetAttribute) lt_matmul_desc_set_attribute;
  decltype(&cublasLtMatmulPreferenceCreate) lt_matmul_preference_create;
  decltype(&cublasLtMatmulPreferenceDestroy) lt_matmul_preference_destroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) lt_matmul_preference_set_attribute;
  decltype(&cublasLtMatrixLayoutCreate) lt_matrix_layout_create;
  decltype(&cublasLtMatrixLayoutDestroy) lt_matrix_layout_destroy;
};

// The functions, loading libcublas.so.13 and libcublasLt.so.13 on the first call (thread-safe).
// Throws Error("--device cuda", "cannot load LIBRARY: WHY") when a library or a function is
// missing.
const CublasLibrary& cublas();

}  // namespace attnscope::gpu
