// Moving tensors between the host and the context's device.
//
// On the CPU every call here is a plain copy (or no copy at all); on a GPU they are
// cudaMemcpyAsync on the context's stream, and a copy that lands on the host waits for it, so
// its bytes can be read as soon as the call returns. Cost: nbytes over PCIe/NVLink (~25-50 GB/s
// host to device) or device memory (~4 TB/s on an H200 for device to device).
#pragma once

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope {

// A copy of `t` on ctx.device(); `t` itself when it is already there.
Tensor to_device(Context& ctx, const Tensor& t);
// A copy of `t` in host memory (ctx.host_allocator()); `t` itself when it is already there.
Tensor to_host(Context& ctx, const Tensor& t);
// Copies the elements of `src` into `dst` (same dtype and element count, any two devices).
void copy_into(Context& ctx, const Tensor& src, Tensor& dst);
// A zero-filled tensor on ctx.device().
Tensor zeros_on(Context& ctx, const Shape& shape, DType dtype);

}  // namespace attnscope
