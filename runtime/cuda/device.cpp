#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "runtime/cuda/caching_allocator.h"
#include "runtime/cuda/cublas_library.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/error.h"

namespace attnscope::gpu {

namespace {

// cuBLAS's recommended workspace on Hopper is 32 MiB; smaller GPUs need 4 MiB.
constexpr std::size_t kCublasWorkspaceBytes = std::size_t{32} << 20;

std::string cuda_error_text(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + " (" + cudaGetErrorString(status) + ")";
}

}  // namespace

void check_cuda(cudaError_t status, const char* where) {
  if (status != cudaSuccess) throw DeviceError(where, cuda_error_text(status));
}

void check_cublas(cublasStatus_t status, const char* where) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw DeviceError(where, std::string(gpu::cublas().status_name(status)) + " (" +
                                 gpu::cublas().status_string(status) + ")");
  }
}

void check_launch(const char* kernel) { check_cuda(cudaGetLastError(), kernel); }

DeviceState& device_state(const Context& ctx) {
  DeviceState* state = ctx.cuda_state();
  check(state != nullptr, "cuda", "this op was given a cuda tensor but a cpu context");
  return *state;
}

DeviceState::~DeviceState() {
  // Destructors cannot throw; a failure here means the device is already gone.
  if (cublaslt) gpu::cublas().lt_destroy(cublaslt);
  if (cublas) gpu::cublas().destroy(cublas);
  if (cublas_workspace) cudaFree(cublas_workspace);
  if (stream) cudaStreamDestroy(stream);
}

std::string unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return "no usable CUDA device: " + cuda_error_text(status);
  }
  if (count == 0) return "no usable CUDA device: the driver reports none";
  return {};
}

std::shared_ptr<DeviceState> open_device(int index) {
  const std::string why = unavailable_reason();
  check(why.empty(), "--device cuda", why);
  auto state = std::make_shared<DeviceState>();
  state->index = index;
  const char* where = "--device cuda";
  check_cuda(cudaSetDevice(index), where);
  check_cuda(cudaGetDeviceProperties(&state->properties, index), where);
  check_cuda(cudaStreamCreateWithFlags(&state->stream, cudaStreamNonBlocking), where);
  check_cublas(gpu::cublas().create(&state->cublas), where);
  check_cublas(gpu::cublas().set_stream(state->cublas, state->stream), where);
  check_cublas(gpu::cublas().lt_create(&state->cublaslt), where);
  check_cuda(cudaMalloc(&state->cublas_workspace, kCublasWorkspaceBytes), where);
  state->cublas_workspace_bytes = kCublasWorkspaceBytes;
  check_cublas(gpu::cublas().set_workspace(state->cublas, state->cublas_workspace,
                                           state->cublas_workspace_bytes),
               where);
  // The default mode keeps at least the requested precision: f32 GEMMs stay f32 (TF32 needs
  // CUBLAS_TF32_TENSOR_OP_MATH or a FAST_TF32 compute type, never used here), so the GPU matches
  // the CPU in f32, while f16/bf16 GEMMs use tensor cores with f32 accumulation. Split-K partial
  // sums must not be added in a 16-bit output dtype either: results are rounded once.
  check_cublas(gpu::cublas().set_math_mode(
                   state->cublas,
                   static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                             CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
               where);
  return state;
}

std::string describe(const DeviceState& state) {
  const cudaDeviceProp& p = state.properties;
  const double gib = static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB", gib);
  return std::string(p.name) + ", sm_" + std::to_string(p.major) + std::to_string(p.minor) + ", " +
         std::to_string(p.multiProcessorCount) + " SMs, " + memory;
}

std::size_t total_memory(const DeviceState& state) { return state.properties.totalGlobalMem; }

std::unique_ptr<Allocator> make_allocator(std::shared_ptr<DeviceState> state) {
  return std::make_unique<CachingAllocator>(std::move(state));
}

void synchronize(const DeviceState& state) {
  check_cuda(cudaStreamSynchronize(state.stream), "cuda synchronize");
}

void copy_bytes(const DeviceState& state, void* dst, bool dst_on_device, const void* src,
                bool src_on_device, std::size_t bytes) {
  if (bytes == 0) return;
  const cudaMemcpyKind kind =
      dst_on_device ? (src_on_device ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
                    : (src_on_device ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  check_cuda(cudaMemcpyAsync(dst, src, bytes, kind, state.stream), "cuda copy");
  // Pageable host memory: the copy may return before the bytes arrive (device to host) or
  // before the source has been read (host to device), so wait whenever the host is involved.
  if (!dst_on_device || !src_on_device) synchronize(state);
}

void fill_zero(const DeviceState& state, void* dst, std::size_t bytes) {
  check_cuda(cudaMemsetAsync(dst, 0, bytes, state.stream), "cuda fill");
}

}  // namespace attnscope::gpu
