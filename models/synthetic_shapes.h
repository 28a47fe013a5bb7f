// What the families' synthetic models (models/gpt2/synthetic.cpp, models/llama/synthetic.cpp)
// share: a table of named shapes, listed by name and looked up by name. Each family keeps its own
// shape struct (any struct with a `const char* name`), because the shapes are what differ.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/error.h"

namespace attnscope {

// The names of `shapes`, in their order.
template <typename Shape, std::size_t N>
std::vector<std::string> synthetic_shape_names(const Shape (&shapes)[N]) {
  std::vector<std::string> names;
  for (const Shape& s : shapes) names.emplace_back(s.name);
  return names;
}

// The shape of `shapes` that `name` names. Throws Error "--model: unknown <what> 'NAME' (valid:
// a, b, c)" when none does (`what`: "synthetic model", "synthetic Llama model").
template <typename Shape, std::size_t N>
const Shape& find_synthetic_shape(const Shape (&shapes)[N], const std::string& name,
                                  std::string_view what) {
  for (const Shape& s : shapes) {
    if (name == s.name) return s;
  }
  std::string valid;
  for (const Shape& s : shapes) valid += (valid.empty() ? "" : ", ") + std::string(s.name);
  throw Error("--model", "unknown " + std::string(what) + " '" + name + "' (valid: " + valid + ")");
}

}  // namespace attnscope
