// The activation functions of ops/activation.h on one f32 value, shared by the cpu loop and the
// cuda kernel so that both compute the same formula (the math of each is in ops/activation.h).
// Only C math functions that exist on the host and in CUDA device code are used.
#pragma once

#include <math.h>

#include "runtime/activation.h"

#if defined(__CUDACC__)
#define ATTNSCOPE_HOST_DEVICE __host__ __device__
#else
#define ATTNSCOPE_HOST_DEVICE
#endif

namespace attnscope::ops {

ATTNSCOPE_HOST_DEVICE inline float sigmoid_f32(float x) { return 1.0f / (1.0f + expf(-x)); }

// log(1 + e^x), and x itself beyond 20 where the two agree in f32 (torch's threshold).
ATTNSCOPE_HOST_DEVICE inline float softplus_f32(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

ATTNSCOPE_HOST_DEVICE inline float gelu_exact_f32(float x) {
  constexpr float kInverseSqrt2 = 0.70710678118654752f;
  return 0.5f * x * (1.0f + erff(x * kInverseSqrt2));
}

ATTNSCOPE_HOST_DEVICE inline float activate(Activation function, float x) {
  switch (function) {
    case Activation::GeluTanh: {
      constexpr float kSqrt2OverPi = 0.7978845608028654f;
      return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
    }
    case Activation::GeluExact:
      return gelu_exact_f32(x);
    case Activation::GeluClipped:
      return fminf(fmaxf(gelu_exact_f32(x), -10.0f), 10.0f);
    case Activation::QuickGelu:
      return x * sigmoid_f32(1.702f * x);
    case Activation::Laplace: {
      constexpr float kMu = 0.707107f;
      constexpr float kSigmaSqrt2 = 0.282095f * 1.41421356237309505f;
      return 0.5f * (1.0f + erff((x - kMu) / kSigmaSqrt2));
    }
    case Activation::Relu:
      return fmaxf(x, 0.0f);
    case Activation::Relu2: {
      const float positive = fmaxf(x, 0.0f);
      return positive * positive;
    }
    case Activation::Relu6:
      return fminf(fmaxf(x, 0.0f), 6.0f);
    case Activation::LeakyRelu:
      return x >= 0.0f ? x : 0.01f * x;
    case Activation::HardSwish:
      return x * fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) / 6.0f;
    case Activation::Silu:
      return x * sigmoid_f32(x);
    case Activation::Mish:
      return x * tanhf(softplus_f32(x));
    case Activation::SqrtSoftplus:
      return sqrtf(softplus_f32(x));
    case Activation::Sigmoid:
      return sigmoid_f32(x);
    case Activation::Tanh:
      return tanhf(x);
    case Activation::Identity:
      return x;
  }
  return x;
}

}  // namespace attnscope::ops
