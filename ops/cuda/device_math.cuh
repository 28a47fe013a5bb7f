// Device-side building blocks shared by the CUDA kernels: element loads and stores in any
// storage dtype (math is always f32), warp and block reductions, and the host-side switches from
// a runtime DType to a kernel template argument and to a cuBLAS data type.
//
// Storage vs compute: tensors hold f32, f16 or bf16; every kernel widens to f32 on load and
// rounds (to nearest even) on store, so f16/bf16 only cost precision at the storage boundary.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <library_types.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "runtime/dtype.h"
#include "runtime/error.h"

namespace attnscope::ops::cuda {

template <typename T>
__device__ __forceinline__ float load_f32(const T* p, std::int64_t i);
template <>
__device__ __forceinline__ float load_f32<float>(const float* p, std::int64_t i) {
  return p[i];
}
template <>
__device__ __forceinline__ float load_f32<__half>(const __half* p, std::int64_t i) {
  return __half2float(p[i]);
}
template <>
__device__ __forceinline__ float load_f32<__nv_bfloat16>(const __nv_bfloat16* p, std::int64_t i) {
  return __bfloat162float(p[i]);
}

template <typename T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_f32<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Sum / max over the 32 lanes of a warp; every lane gets the result.
__device__ __forceinline__ float warp_sum(float x) {
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}
__device__ __forceinline__ float warp_max(float x) {
  for (int offset = 16; offset > 0; offset /= 2) {
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  }
  return x;
}

// Sum / max over a whole block (blockDim.x a multiple of 32, at most 1024); every thread gets
// the result. `scratch` is 32 floats of shared memory; the call synchronises the block twice.
__device__ __forceinline__ float block_sum(float x, float* scratch) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  x = warp_sum(x);
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  const int warps = static_cast<int>(blockDim.x) / 32;
  x = lane < warps ? scratch[lane] : 0.0f;
  return warp_sum(x);
}
__device__ __forceinline__ float block_max(float x, float* scratch) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  x = warp_max(x);
  __syncthreads();
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  const int warps = static_cast<int>(blockDim.x) / 32;
  x = lane < warps ? scratch[lane] : -INFINITY;
  return warp_max(x);
}

// Calls f(T{}) with T the CUDA storage type of `dtype` (float, __half or __nv_bfloat16):
//   with_storage_type(x.dtype(), "layer_norm", [&](auto tag) { using T = decltype(tag); ... });
template <typename F>
void with_storage_type(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::F32:
      f(float{});
      return;
    case DType::F16:
      f(__half{});
      return;
    case DType::BF16:
      f(__nv_bfloat16{});
      return;
    case DType::I32:
    case DType::Q8_0:  // block-quantized: cpu only (runtime/q8_0.h)
      break;
  }
  throw Error(op, "expected f32, f16 or bf16 storage, got " + std::string(dtype_name(dtype)));
}

// The cuBLAS / cublasLt name of a storage dtype (CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF).
inline cudaDataType_t data_type_of(DType dtype, const char* op) {
  cudaDataType_t type = CUDA_R_32F;
  with_storage_type(dtype, op, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, __half>) type = CUDA_R_16F;
    if constexpr (std::is_same_v<T, __nv_bfloat16>) type = CUDA_R_16BF;
  });
  return type;
}

}  // namespace attnscope::ops::cuda
