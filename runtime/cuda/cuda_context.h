// CUDA types of a Context, for the files compiled with the CUDA headers (ops/cuda, the graph
// runner, the tracer), and the checks every CUDA, cuBLAS and launch result goes through.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "runtime/context.h"
#include "runtime/cuda/device.h"

namespace attnscope::gpu {

struct DeviceState {
  int index = 0;
  cudaDeviceProp properties{};
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cublasLtHandle_t cublaslt = nullptr;  // for GEMMs with fused epilogues (bias)
  // Given to cuBLAS (and to cublasLt calls), so neither allocates while a graph is captured. Both
  // run on the one stream, so they never use it at the same time.
  void* cublas_workspace = nullptr;
  std::size_t cublas_workspace_bytes = 0;
  // cublasLt's algorithm for each GEMM problem the context has run, or nullopt when it has none
  // (ops/cuda/linear.cu). Asking the heuristic costs microseconds of host time per call, more
  // than launching a decode step's GEMM, so each problem asks once.
  std::map<std::string, std::optional<cublasLtMatmulAlgo_t>> gemm_algorithms;
  // The dynamic shared memory limit each kernel has been raised to (above the default 48 KiB):
  // the attribute stays set, so each kernel is raised once, not on every launch.
  std::map<const void*, std::size_t> kernel_shared_limits;

  DeviceState() = default;
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;
  ~DeviceState();
};

// Throw Error("where: cudaErrorX: description") unless the call succeeded.
void check_cuda(cudaError_t status, const char* where);
void check_cublas(cublasStatus_t status, const char* where);
// After a <<<...>>> launch: throws when the launch was refused (bad configuration, no image for
// this GPU). Errors inside the kernel surface at the next synchronisation.
void check_launch(const char* kernel);

// The context's device state; throws Error when ctx is not a CUDA context.
DeviceState& device_state(const Context& ctx);
inline cudaStream_t stream_of(const Context& ctx) { return device_state(ctx).stream; }
inline cublasHandle_t cublas_of(const Context& ctx) { return device_state(ctx).cublas; }
inline cublasLtHandle_t cublaslt_of(const Context& ctx) { return device_state(ctx).cublaslt; }

// Blocks for a 1-D launch over n items.
inline unsigned int blocks_for(std::int64_t n, int threads_per_block) {
  return static_cast<unsigned int>((n + threads_per_block - 1) / threads_per_block);
}

}  // namespace attnscope::gpu
