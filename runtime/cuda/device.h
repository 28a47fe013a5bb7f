// The CUDA side of a Context, behind a plain C++ interface: code compiled without the CUDA
// headers can hold one, and builds without CUDA never call into it (see kCudaBuild).
//
// A DeviceState is one GPU opened for attnscope: its properties, one stream every op of the
// Context launches on (so work is ordered without host synchronisation), and cuBLAS and cublasLt
// handles bound to that stream with a fixed workspace (so cuBLAS never allocates inside a
// captured CUDA graph). Copies that touch the host go through pageable memory and wait for the
// stream (copy_bytes). runtime/cuda/cuda_context.h exposes the CUDA types to .cu files.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "runtime/allocator.h"

namespace attnscope::gpu {

struct DeviceState;

// Opens CUDA device `index`. Throws Error("--device cuda", why) when it cannot be used (no
// driver, no device, out of memory), naming the CUDA error.
std::shared_ptr<DeviceState> open_device(int index);

// Empty when device 0 can be used, else one line saying why not (GPU tests skip with it).
std::string unavailable_reason();

// "NVIDIA H200, sm_90, 132 SMs, 139.8 GiB"
std::string describe(const DeviceState& state);

// The device's global memory in bytes.
std::size_t total_memory(const DeviceState& state);

// A caching allocator of device memory on `state`'s device (runtime/cuda/caching_allocator.h).
std::unique_ptr<Allocator> make_allocator(std::shared_ptr<DeviceState> state);

// Waits for everything queued on the stream; throws Error with the first asynchronous failure.
void synchronize(const DeviceState& state);

// Copies `bytes` between any two of host and device memory, ordered on the stream. Copies that
// land on the host wait for the stream, so the bytes are there when the call returns.
void copy_bytes(const DeviceState& state, void* dst, bool dst_on_device, const void* src,
                bool src_on_device, std::size_t bytes);

// Sets `bytes` device bytes to zero, ordered on the stream.
void fill_zero(const DeviceState& state, void* dst, std::size_t bytes);

}  // namespace attnscope::gpu
