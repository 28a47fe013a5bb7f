// What the families' config.json readers (models/gpt2/config.cpp, models/llama/config.cpp)
// share: how a wrongly typed value and a double are written in a message, and the bounds check
// every integer field takes. Each reader keeps its own key lookups, because the families differ
// in which keys may be null or absent.
#pragma once

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "runtime/error.h"

namespace attnscope::config_fields {

// How a wrongly typed value is named in a message: "12.5", "a string", "null".
inline std::string describe(const nlohmann::json& value) {
  if (value.is_number() || value.is_boolean() || value.is_null()) return value.dump();
  if (value.is_string()) return "a string";
  if (value.is_array()) return "an array";
  return "an object";
}

// `value` as printf's %g writes it ("1e-05").
inline std::string format_double(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// Throws Error "<label>: <key> = <value> is outside [<low>, <high>]" unless low <= value <= high.
inline void check_range(std::int64_t value, std::int64_t low, std::int64_t high, const char* key,
                        const std::string& label) {
  check(low <= value && value <= high, label,
        std::string(key) + " = " + std::to_string(value) + " is outside [" + std::to_string(low) +
            ", " + std::to_string(high) + "]");
}

}  // namespace attnscope::config_fields
