// The reference JSON schema replies are tested against (tests/test_json_schema.cpp): a validator
// of a parsed document (nlohmann) for the keywords engine/json_grammar.h enforces, written from
// the JSON Schema specification (validation vocabulary; formats from RFC 3339 and RFC 4122 as
// regular expressions; patterns through std::regex), independent of the grammar: it reads
// values, the grammar reads bytes.
// Beyond validity, json_grammar.h promises that an object with `properties` is written with no
// other keys, in the schema's order: property_order_kept checks that.
#pragma once

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
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

// A string's length as JSON Schema counts it: code points (UTF-8 bytes that start one).
inline std::size_t code_points(const std::string& text) {
  return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// RFC 3339 and RFC 4122 as the grammar enforces them (a date's day within its month, February
// 29th in any year).
inline bool of_format(const std::string& text, const std::string& format) {
  static const std::regex kDate(R"((\d{4})-(\d{2})-(\d{2}))");
  static const std::regex kTime(
      R"(([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d))");
  static const std::regex kUuid(
      R"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})");
  const auto date = [](const std::string& d) {
    std::smatch m;
    if (!std::regex_match(d, m, kDate)) return false;
    const int month = std::stoi(m[2]), day = std::stoi(m[3]);
    static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return month >= 1 && month <= 12 && day >= 1 && day <= kDays[month - 1];
  };
  if (format == "date") return date(text);
  if (format == "time") return std::regex_match(text, kTime);
  if (format == "date-time") {
    return text.size() > 11 && (text[10] == 'T' || text[10] == 't') && date(text.substr(0, 10)) &&
           std::regex_match(text.substr(11), kTime);
  }
  if (format == "uuid") return std::regex_match(text, kUuid);
  return true;  // an annotation
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
  if (schema.contains("allOf")) {
    for (const OrderedJson& part : schema["allOf"]) {
      if (!schema_valid(v, part, root)) return false;
    }
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
  if (v.is_string()) {
    const std::string text = v.get<std::string>();
    if (schema.contains("minLength") &&
        code_points(text) < schema["minLength"].get<std::size_t>()) {
      return false;
    }
    if (schema.contains("maxLength") &&
        code_points(text) > schema["maxLength"].get<std::size_t>()) {
      return false;
    }
    if (schema.contains("format") && !of_format(text, schema["format"])) return false;
    // ECMA-262 as std::regex reads it, on the UTF-8 bytes (the tests quantify no non-ASCII
    // character, where bytes and characters would differ); matched anywhere, as JSON Schema has.
    if (schema.contains("pattern") &&
        !std::regex_search(
            text, std::regex(schema["pattern"].get<std::string>(), std::regex::ECMAScript))) {
      return false;
    }
  }
  if (v.is_number()) {
    const double x = v.get<double>();
    const auto exclusive = [&](const char* name) {
      return schema.contains(name) && schema[name].is_boolean() && schema[name].get<bool>();
    };
    if (schema.contains("minimum") &&
        (exclusive("exclusiveMinimum") ? x <= schema["minimum"].get<double>()
                                       : x < schema["minimum"].get<double>())) {
      return false;
    }
    if (schema.contains("maximum") &&
        (exclusive("exclusiveMaximum") ? x >= schema["maximum"].get<double>()
                                       : x > schema["maximum"].get<double>())) {
      return false;
    }
    if (schema.contains("exclusiveMinimum") && schema["exclusiveMinimum"].is_number() &&
        x <= schema["exclusiveMinimum"].get<double>()) {
      return false;
    }
    if (schema.contains("exclusiveMaximum") && schema["exclusiveMaximum"].is_number() &&
        x >= schema["exclusiveMaximum"].get<double>()) {
      return false;
    }
  }
  if (v.is_array()) {
    if (schema.contains("minItems") && v.size() < schema["minItems"].get<std::size_t>())
      return false;
    if (schema.contains("maxItems") && v.size() > schema["maxItems"].get<std::size_t>())
      return false;
    // prefixItems[i] holds item i; items holds those after them (all, without prefixItems).
    const OrderedJson prefix = schema.value("prefixItems", OrderedJson::array());
    const OrderedJson items = schema.value("items", OrderedJson(true));
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!schema_valid(v[i], i < prefix.size() ? prefix[i] : items, root)) return false;
    }
  }
  return true;
}

// Whether every object of `v` that `schema` gives properties has only those keys, in the
// schema's order (where anyOf or oneOf leaves the schema open, some option's order will do).
inline bool property_order_kept(const OrderedJson& v, const OrderedJson& schema,
                                const OrderedJson& root) {
  if (!schema.is_object()) return true;
  if (schema.contains("$ref")) {
    return property_order_kept(v, schema_target(root, schema["$ref"]), root);
  }
  if (schema.contains("allOf")) return property_order_kept(v, schema["allOf"][0], root);
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
    const OrderedJson prefix = schema.value("prefixItems", OrderedJson::array());
    const OrderedJson items = schema.value("items", OrderedJson(true));
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!property_order_kept(v[i], i < prefix.size() ? prefix[i] : items, root)) return false;
    }
  }
  return true;
}

}  // namespace attnscope::testing
