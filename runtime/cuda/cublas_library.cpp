// Loading cuBLAS and cublasLt (runtime/cuda/cublas_library.h).
#include "runtime/cuda/cublas_library.h"

#include <dlfcn.h>

#include <string>

#include "runtime/error.h"

namespace attnscope::gpu {

namespace {

// The major version this build's headers declare: the library must match them.
const std::string kMajor = std::to_string(CUBLAS_VER_MAJOR);

void* open_library(const std::string& name) {
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw Error("--device cuda", "cannot load " + name + ": " + (why ? why : "unknown error"));
  }
  return handle;
}

// `function` = the exported `name` of `library` (the handle of `library_name`).
template <typename Function>
void bind(Function& function, void* library, const std::string& library_name, const char* name) {
  function = reinterpret_cast<Function>(dlsym(library, name));
  check(function != nullptr, "--device cuda",
        "cannot load " + library_name + ": it has no function " + name);
}

CublasLibrary load() {
  const std::string blas_name = "libcublas.so." + kMajor;
  const std::string lt_name = "libcublasLt.so." + kMajor;
  void* lt = open_library(lt_name);
  void* blas = open_library(blas_name);
  CublasLibrary l{};
  // cublas_v2.h maps cublasCreate and three more to their _v2 symbols, which are the exports.
  bind(l.create, blas, blas_name, "cublasCreate_v2");
  bind(l.destroy, blas, blas_name, "cublasDestroy_v2");
  bind(l.set_stream, blas, blas_name, "cublasSetStream_v2");
  bind(l.set_workspace, blas, blas_name, "cublasSetWorkspace_v2");
  bind(l.set_math_mode, blas, blas_name, "cublasSetMathMode");
  bind(l.status_name, blas, blas_name, "cublasGetStatusName");
  bind(l.status_string, blas, blas_name, "cublasGetStatusString");
  bind(l.gemm_ex, blas, blas_name, "cublasGemmEx");
  bind(l.gemm_strided_batched_ex, blas, blas_name, "cublasGemmStridedBatchedEx");
  bind(l.lt_create, lt, lt_name, "cublasLtCreate");
  bind(l.lt_destroy, lt, lt_name, "cublasLtDestroy");
  bind(l.lt_matmul, lt, lt_name, "cublasLtMatmul");
  bind(l.lt_matmul_algo_get_heuristic, lt, lt_name, "cublasLtMatmulAlgoGetHeuristic");
  bind(l.lt_matmul_desc_create, lt, lt_name, "cublasLtMatmulDescCreate");
  bind(l.lt_matmul_desc_destroy, lt, lt_name, "cublasLtMatmulDescDestroy");
  bind(l.lt_matmul_desc_set_attribute, lt, lt_name, "cublasLtMatmulDescSetAttribute");
  bind(l.lt_matmul_preference_create, lt, lt_name, "cublasLtMatmulPreferenceCreate");
  bind(l.lt_matmul_preference_destroy, lt, lt_name, "cublasLtMatmulPreferenceDestroy");
  bind(l.lt_matmul_preference_set_attribute, lt, lt_name, "cublasLtMatmulPreferenceSetAttribute");
  bind(l.lt_matrix_layout_create, lt, lt_name, "cublasLtMatrixLayoutCreate");
  bind(l.lt_matrix_layout_destroy, lt, lt_name, "cublasLtMatrixLayoutDestroy");
  return l;  // the libraries stay open for the life of the process
}

}  // namespace

const CublasLibrary& cublas() {
  static const CublasLibrary library = load();  // a failed load throws and is retried next call
  return library;
}

}  // namespace attnscope::gpu
