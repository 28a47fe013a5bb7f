#include "runtime/transfer.h"

#include <cstring>

#include "runtime/cuda/device.h"
#include "runtime/error.h"

namespace attnscope {

namespace {

// Every tensor on a CUDA device came from a CUDA context, which only a CUDA build can make, so
// the CPU-only build never reaches the gpu:: calls below.
[[maybe_unused]] gpu::DeviceState& require_cuda(Context& ctx) {
  check(ctx.cuda_state() != nullptr, "copy", "a cuda tensor needs a cuda context");
  return *ctx.cuda_state();
}

}  // namespace

void copy_into(Context& ctx, const Tensor& src, Tensor& dst) {
  check(src.defined() && dst.defined(), "copy", "undefined tensor");
  check(src.dtype() == dst.dtype() && src.numel() == dst.numel(), "copy",
        "cannot copy " + shape_string(src.shape()) + " " + std::string(dtype_name(src.dtype())) +
            " into " + shape_string(dst.shape()) + " " + std::string(dtype_name(dst.dtype())));
  const bool src_on_device = src.device() == Device::CUDA;
  const bool dst_on_device = dst.device() == Device::CUDA;
  if (!src_on_device && !dst_on_device) {
    std::memmove(dst.raw_data(), src.raw_data(), src.nbytes());
    return;
  }
  if constexpr (kCudaBuild) {
    gpu::copy_bytes(require_cuda(ctx), dst.raw_data(), dst_on_device, src.raw_data(), src_on_device,
                    src.nbytes());
  }
}

Tensor to_device(Context& ctx, const Tensor& t) {
  if (t.device() == ctx.device()) return t;
  Tensor copy = Tensor::empty(t.shape(), t.dtype(), ctx.allocator());
  copy_into(ctx, t, copy);
  return copy;
}

Tensor to_host(Context& ctx, const Tensor& t) {
  if (t.device() == Device::CPU) return t;
  Tensor copy = Tensor::empty(t.shape(), t.dtype(), ctx.host_allocator());
  copy_into(ctx, t, copy);
  return copy;
}

Tensor zeros_on(Context& ctx, const Shape& shape, DType dtype) {
  if (ctx.device() == Device::CPU) return Tensor::zeros(shape, dtype, ctx.allocator());
  Tensor t = Tensor::empty(shape, dtype, ctx.allocator());
  if constexpr (kCudaBuild) gpu::fill_zero(require_cuda(ctx), t.raw_data(), t.nbytes());
  return t;
}

}  // namespace attnscope
