// Which implementation an op runs, and the checks every op makes before choosing it.
//
// Each public op (ops/softmax.h, ...) opens its profiler scope, checks shapes the same way on every
// device, then runs `cpu::op` or `cuda::op` for the device its tensors live on:
//
//   const Device device = common_device("softmax", {{x, "x"}, {out, "out"}});
//   require_float(x, device, "softmax", "x");   // f32 on the cpu; f32, f16 or bf16 on cuda
//   ...shape checks...
//   if (device == Device::CUDA) {
//     if constexpr (kCudaBuild) cuda::softmax(ctx, x, out);  // never referenced without CUDA
//     return;
//   }
//   cpu::softmax(ctx, x, out);
//
// A CPU-only build cannot make a CUDA tensor (only a CUDA Context allocates device memory), so
// the empty branch it compiles is never taken.
#pragma once

#include <initializer_list>
#include <string>

#include "ops/check.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/tensor.h"

namespace attnscope::ops {

// One tensor argument of an op, with the name error messages give it.
struct NamedTensor {
  const Tensor& tensor;
  const char* name;
};

// The device every one of `args` lives on. Throws Error when one is undefined or when they are
// spread over two devices: an op never copies between devices behind the caller's back.
inline Device common_device(const char* op, std::initializer_list<NamedTensor> args) {
  const NamedTensor& first = *args.begin();
  for (const NamedTensor& arg : args) {
    check(arg.tensor.defined(), op, [&] { return std::string(arg.name) + " is undefined"; });
  }
  const Device device = first.tensor.device();
  for (const NamedTensor& arg : args) {
    check(arg.tensor.device() == device, op, [&] {
      return "all tensors of one call must be on one device: " + std::string(first.name) +
             " is on " + std::string(device_name(device)) + ", " + arg.name + " on " +
             std::string(device_name(arg.tensor.device()));
    });
  }
  return device;
}

// Throws unless `t` holds a floating-point dtype the ops take on `device` for activations: f32 on
// the cpu (the CPU kernels compute on f32 activations; only weights may be narrower, see
// require_weight); f32, f16 or bf16 on cuda (stored narrow, computed in f32).
inline void require_float(const Tensor& t, Device device, const char* op, const char* arg) {
  if (device == Device::CPU) {
    check(t.dtype() == DType::F32, op, [&] {
      return std::string(arg) +
             " must be f32 on the cpu (f16 and bf16 activations run on cuda), got " +
             std::string(dtype_name(t.dtype()));
    });
    return;
  }
  check(is_float_dtype(t.dtype()), op, [&] {
    return std::string(arg) + " must be f32, f16 or bf16 on cuda, got " +
           std::string(dtype_name(t.dtype()));
  });
}

// Throws unless `t` has dtype `dtype`.
inline void require_dtype(const Tensor& t, DType dtype, const char* op, const char* arg) {
  check(t.dtype() == dtype, op, [&] {
    return std::string(arg) + " must be " + std::string(dtype_name(dtype)) + ", got " +
           std::string(dtype_name(t.dtype()));
  });
}

// Throws unless the matrix `weight` has a dtype that ops::linear and ops::embedding read beside
// activations of dtype `activation` on `device`. On the cpu the activations are f32 and a weight
// may be stored narrower, in any of cpu_weight_dtypes (widened to f32 as it is read), so that
// memory-bound decode reads fewer bytes (q8_0: 8-bit blocks, runtime/q8_0.h); on cuda weights and
// activations share one dtype, and q8_0 is refused (it runs on the cpu only).
// A new cpu weight format is one more entry here and one more kernel in ops/cpu/.
inline constexpr DType cpu_weight_dtypes[] = {DType::F32, DType::BF16, DType::F16, DType::Q8_0};

inline void require_weight(const Tensor& weight, Device device, DType activation, const char* op,
                           const char* arg) {
  if (device == Device::CUDA) {
    check(weight.dtype() != DType::Q8_0, op, [&] {
      return std::string(arg) + " is q8_0, which runs on the cpu only (cuda takes f32, f16, bf16)";
    });
    require_dtype(weight, activation, op, arg);
    return;
  }
  bool known = false;
  for (DType dtype : cpu_weight_dtypes) known |= weight.dtype() == dtype;
  check(known, op, [&] {
    std::string message = std::string(arg) + " must be one of";
    for (DType dtype : cpu_weight_dtypes) {
      message += ' ';
      message += dtype_name(dtype);
    }
    message += " on the cpu, got ";
    message += dtype_name(weight.dtype());
    return message;
  });
}

}  // namespace attnscope::ops
