// The reference JSON schema replies are tested against (tests/test_json_schema.cpp): a validator
// of a parsed document (nlohmann) for the keywords engine/json_grammar.h enforces, written from
// the JSON Schema specification (validation vocabulary), independent of the grammar: it reads
// values, the grammar reads bytes. Beyond validity, json_grammar.h promises that an object with
// `properties` is written with no other keys, in the schema's order: property_order_kept checks
// that.
#pragma once

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

namespace attnscope::testing {

using OrderedJson = nlohmann::ordered_json;

inline const OrderedJson& schema_target(const OrderedJson& root, const std::string& ref) {
  return root.at(OrderedJson::json_pointer(ref.substr(1)));
}

inline bool of_schema_type(const OrderedJson& v, const std::string& type) {
  if (type == "integer") {
    return v.is_number_integer() ||
           (v.is_number_float() && std::trunc(v.get<double>()) == v.get<double>());
  }
  return (type == "string" && v.is_string()) || (type == "number" && v.is_number()) ||
         (type == "boolean" && v.is_boolean()) || (type == "null" && v.is_null()) ||
         (type == "object" && v.is_object()) || (type == "array" && v.is_array());
}

// Whether `v` is valid under `schema` (with `root` for $ref), JSON Schema's semantics.
inline bool schema_valid(const OrderedJson& v, const OrderedJson& schema, const OrderedJson& root) {
  if (schema.is_boolean()) return schema.get<bool>();
  if (schema.contains("$ref")) {
    if (!schema_valid(v, schema_target(root, schema["$ref"]), root)) return false;
  }
  for (const char* keyword : {"anyOf", "oneOf"}) {
    if (!schema.contains(keyword)) continue;
    int valid = 0;
    for (const OrderedJson& option : schema[keyword])
      valid += schema_valid(v, option, root) ? 1 : 0;
    if (valid == 0 || (std::string(keyword) == "oneOf" && valid > 1)) return false;
  }
  if (schema.contains("const") && v != schema["const"]) return false;
  if (schema.contains("enum")) {
    const OrderedJson& values = schema["enum"];
    if (std::find(values.begin(), values.end(), v) == values.end()) return false;
  }
  if (schema.contains("type")) {
    const OrderedJson& type = schema["type"];
    const bool typed = type.is_string() ? of_schema_type(v, type)
                                        : std::any_of(type.begin(), type.end(), [&](const auto& t) {
                                            return of_schema_type(v, t);
                                          });
    if (!typed) return false;
  }
  if (v.is_object()) {
    const OrderedJson properties = schema.value("properties", OrderedJson::object());
    for (const OrderedJson& name : schema.value("required", OrderedJson::array())) {
      if (!v.contains(name.get<std::string>())) return false;
    }
    const OrderedJson extra = schema.value("additionalProperties", OrderedJson(true));
    for (const auto& [key, value] : v.items()) {
      const OrderedJson& under = properties.contains(key) ? properties[key] : extra;
      if (!schema_valid(value, under, root)) return false;
    }
  }
  if (v.is_array()) {
    if (schema.contains("minItems") && v.size() < schema["minItems"].get<std::size_t>())
      return false;
    if (schema.contains("maxItems") && v.size() > schema["maxItems"].get<std::size_t>())
      return false;
    const OrderedJson items = schema.value("items", OrderedJson(true));
    for (const OrderedJson& item : v) {
      if (!schema_valid(item, items, root)) return false;
    }
  }
  return true;
}

// Whether every object of `v` that `schema` gives properties has only those keys, in the
// schema's order (where anyOf or oneOf leaves the schema open, some option's order will do).
inline bool property_order_kept(const OrderedJson& v, const OrderedJson& schema,
                                const OrderedJson& root) {
  if (!schema.is_object()) return true;
  if (schema.contains("$ref"))
    return property_order_kept(v, schema_target(root, schema["$ref"]), root);
  for (const char* keyword : {"anyOf", "oneOf"}) {
    if (!schema.contains(keyword)) continue;
    return std::any_of(schema[keyword].begin(), schema[keyword].end(), [&](const auto& option) {
      return schema_valid(v, option, root) && property_order_kept(v, option, root);
    });
  }
  if (v.is_object() && schema.contains("properties") && !schema["properties"].empty()) {
    const OrderedJson& properties = schema["properties"];
    auto next = properties.begin();
    for (const auto& [key, value] : v.items()) {
      while (next != properties.end() && next.key() != key) ++next;
      if (next == properties.end()) return false;
      if (!property_order_kept(value, next.value(), root)) return false;
      ++next;
    }
  }
  if (v.is_array()) {
    const OrderedJson items = schema.value("items", OrderedJson(true));
    for (const OrderedJson& item : v) {
      if (!property_order_kept(item, items, root)) return false;
    }
  }
  return true;
}

}  // namespace attnscope::testing
