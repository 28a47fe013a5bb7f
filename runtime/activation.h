// The MLP activations a GPT-2 config.json may name (transformers' ACT2FN), as one enum that the
// config reader validates against and the activation op (ops/activation.h) computes.
//
// Several names are one function: gelu_new, gelu_pytorch_tanh, gelu_python_tanh, gelu_fast and
// gelu_accurate are all GELU's tanh approximation (written in different orders); gelu and
// gelu_python are the exact erf form; silu and swish are x sigmoid(x). The math of each is at the
// top of ops/activation.h.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace attnscope {

enum class Activation {
  GeluTanh,      // gelu_new, gelu_pytorch_tanh, gelu_python_tanh, gelu_fast, gelu_accurate
  GeluExact,     // gelu, gelu_python
  GeluClipped,   // gelu_10
  QuickGelu,     // quick_gelu
  Laplace,       // laplace
  Relu,          // relu
  Relu2,         // relu2
  Relu6,         // relu6
  LeakyRelu,     // leaky_relu
  HardSwish,     // hardswish
  Silu,          // silu, swish
  Mish,          // mish
  SqrtSoftplus,  // sqrtsoftplus
  Sigmoid,       // sigmoid
  Tanh,          // tanh
  Identity,      // linear
};

struct ActivationName {
  std::string_view name;
  Activation activation;
};

// Every parameter-free activation of transformers' ACT2FN (5.24), by the name config.json uses.
inline constexpr std::array<ActivationName, 22> kActivationNames = {{
    {"gelu_new", Activation::GeluTanh},
    {"gelu_pytorch_tanh", Activation::GeluTanh},
    {"gelu_python_tanh", Activation::GeluTanh},
    {"gelu_fast", Activation::GeluTanh},
    {"gelu_accurate", Activation::GeluTanh},
    {"gelu", Activation::GeluExact},
    {"gelu_python", Activation::GeluExact},
    {"gelu_10", Activation::GeluClipped},
    {"quick_gelu", Activation::QuickGelu},
    {"laplace", Activation::Laplace},
    {"relu", Activation::Relu},
    {"relu2", Activation::Relu2},
    {"relu6", Activation::Relu6},
    {"leaky_relu", Activation::LeakyRelu},
    {"hardswish", Activation::HardSwish},
    {"silu", Activation::Silu},
    {"swish", Activation::Silu},
    {"mish", Activation::Mish},
    {"sqrtsoftplus", Activation::SqrtSoftplus},
    {"sigmoid", Activation::Sigmoid},
    {"tanh", Activation::Tanh},
    {"linear", Activation::Identity},
}};

// The activation config.json's `name` stands for; nullopt for a name transformers does not know.
inline std::optional<Activation> find_activation(std::string_view name) {
  for (const ActivationName& entry : kActivationNames) {
    if (entry.name == name) return entry.activation;
  }
  return std::nullopt;
}

}  // namespace attnscope
