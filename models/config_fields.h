// What the families' config.json readers (models/gpt2/config.cpp, models/llama/config.cpp)
// share: how a wrongly typed value and a double are written in a message, how an integer is read,
// the bounds check every integer field takes, and eos_token_id. Each reader keeps its own key
// lookups, because the families differ in which keys may be null or absent.
#pragma once

#include <cstdint>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

// `value` as an int64; Error "<label>: <key> must be an integer, found ..." or "... is too large".
inline std::int64_t as_integer(const nlohmann::json& value, const std::string& key,
                               const std::string& label) {
  check(value.is_number_integer(), label, key + " must be an integer, found " + describe(value));
  check(!value.is_number_unsigned() ||
            value.get<std::uint64_t>() <=
                static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
        label, key + " = " + value.dump() + " is too large");
  return value.get<std::int64_t>();
}

// eos_token_id: one integer or a list of them (transformers accepts both in every family), null
// for none, `defaults` when absent.
inline std::vector<std::int64_t> read_eos_token_ids(const nlohmann::json& root,
                                                    const std::vector<std::int64_t>& defaults,
                                                    const std::string& label) {
  const auto found = root.find("eos_token_id");
  if (found == root.end()) return defaults;
  if (found->is_null()) return {};
  if (!found->is_array()) return {as_integer(*found, "eos_token_id", label)};
  std::vector<std::int64_t> ids;
  for (const nlohmann::json& id : *found) ids.push_back(as_integer(id, "eos_token_id", label));
  return ids;
}

// Throws Error "<label>: <key> = <value> is outside [<low>, <high>]" unless low <= value <= high.
inline void check_range(std::int64_t value, std::int64_t low, std::int64_t high, const char* key,
                        const std::string& label) {
  check(low <= value && value <= high, label,
        std::string(key) + " = " + std::to_string(value) + " is outside [" + std::to_string(low) +
            ", " + std::to_string(high) + "]");
}

}  // namespace attnscope::config_fields
