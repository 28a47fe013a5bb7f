// JSON schemas compiled into byte grammars (json_grammar.h).
#include "engine/json_grammar.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/number_grammar.h"
#include "engine/pattern_grammar.h"
#include "runtime/error.h"

namespace attnscope::engine {
namespace {

using Schema = nlohmann::ordered_json;  // ordered: properties are written in the schema's order
using Rule = Grammar::Rule;
using Symbol = Grammar::Symbol;

const std::set<std::string, std::less<>> kAnnotations = {
    "title",    "description", "default",  "examples",  "$schema", "$id",
    "$comment", "deprecated",  "readOnly", "writeOnly", "$defs",   "definitions"};
// clang-format off
const std::set<std::string, std::less<>> kEnforced = {
    "type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref",
    "properties", "required", "additionalProperties",
    "items", "prefixItems", "minItems", "maxItems",
    "minLength", "maxLength", "format", "pattern",
    "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"};
// clang-format on
// Integer bounds are within 1e17, so that 10 times any power of ten up to them fits a long long.
constexpr int kIntegerBoundPower = 17;
const std::set<std::string, std::less<>> kNumberBounds = {"minimum", "exclusiveMinimum", "maximum",
                                                          "exclusiveMaximum"};

// Whether `v` is of `type` (a name, a list of names, or null: any).
bool of_type(const Schema& v, const Schema& type) {
  if (type.is_array()) {
    return std::any_of(type.begin(), type.end(), [&](const Schema& t) { return of_type(v, t); });
  }
  if (!type.is_string()) return true;
  const std::string name = type.get<std::string>();
  if (name == "integer") {
    return v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                     std::trunc(v.get<double>()) == v.get<double>());
  }
  return (name == "string" && v.is_string()) || (name == "number" && v.is_number()) ||
         (name == "boolean" && v.is_boolean()) || (name == "null" && v.is_null()) ||
         (name == "object" && v.is_object()) || (name == "array" && v.is_array());
}

[[noreturn]] void refuse(const std::string& what) { throw Error("json_schema", what); }

class SchemaCompiler {
 public:
  explicit SchemaCompiler(const Schema& root) : root_(root) {
    start_ = grammar_.add_rule();  // the first rule: the start
    build_lexical_rules();
  }

  Grammar compile() {
    const Schema& root = resolved(root_);
    const Schema type = root.is_object() ? root.value("type", Schema()) : Schema();
    if (type != "object" && type != "array") {
      refuse(
          "the schema's root must be an object (\"type\": \"object\", as in structured "
          "outputs) or an array: a reply ends with its closing bracket");
    }
    grammar_.add_alternative(start_, {ref(gap_), ref(value(root_, "#"))});
    if (std::string defect = grammar_.defect(); !defect.empty()) {
      refuse("the schema admits no reply (" + defect +
             ": a $ref to itself before any text, or a value that must contain itself)");
    }
    return std::move(grammar_);
  }

 private:
  static Symbol ref(Rule rule) { return Grammar::rule_symbol(rule); }
  static Symbols lit(std::string_view text) { return Grammar::literal(text); }

  // Refuses a schema whose grammar has grown past kMaxGrammarSymbols (checked as each value
  // starts and as an object's properties are joined, between which it grows by a bounded step).
  void check_size(const std::string& where) const {
    if (grammar_.size() > kMaxGrammarSymbols) {
      refuse(where + ": the schema is too large to enforce (its grammar passes " +
             std::to_string(kMaxGrammarSymbols) + " symbols; counted strings and arrays, " +
             "and optional properties, cost the most)");
    }
  }

  // The schema a $ref chain at `schema` ends at (for the root check).
  const Schema& resolved(const Schema& schema) const {
    const Schema* at = &schema;
    for (int hops = 0; at->is_object() && at->contains("$ref") && hops < 64; ++hops) {
      at = &target(*at);
    }
    return *at;
  }

  const Schema& target(const Schema& schema) const {
    const Schema& where = schema["$ref"];
    if (!where.is_string()) refuse("$ref must be a string");
    const std::string text = where.get<std::string>();
    if (text.empty() || text[0] != '#') {
      refuse("$ref \"" + text + "\" is not served (only references within the schema: #...)");
    }
    try {
      return root_.at(Schema::json_pointer(text.substr(1)));
    } catch (const nlohmann::json::exception&) {
      refuse("$ref \"" + text + "\" names nothing in the schema");
    }
  }

  // JSON's pieces, shared by every schema node.
  void build_lexical_rules() {
    // gap ::= "" | " " | ("\n" | "\r\n") indent, indent at most kMaxIndent spaces or tabs.
    Rule indent = grammar_.add_rule({{}});
    for (int i = 0; i < kMaxIndent; ++i) {
      indent = grammar_.add_rule({{}, {Grammar::any_of(" \t"), ref(indent)}});
    }
    gap_ = grammar_.add_rule({{}, lit(" "), lit("\n") + ref(indent), lit("\r\n") + ref(indent)});

    const Symbol hex = Grammar::any_of("0123456789abcdefABCDEF");
    const Symbol tail = Grammar::byte_range(0x80, 0xBF);
    // \uXXXX outside the surrogates, or a high surrogate followed by \u and a low one.
    const Rule code_unit = grammar_.add_rule(
        {{Grammar::any_of("0123456789abcABCefEF"), hex, hex, hex},
         {Grammar::any_of("dD"), Grammar::byte_range('0', '7'), hex, hex},
         Symbols{Grammar::any_of("dD"), Grammar::any_of("89abAB"), hex, hex} + lit("\\u") +
             Symbols{Grammar::any_of("dD"), Grammar::any_of("cdefCDEF"), hex, hex}});
    const Rule escape =
        grammar_.add_rule({{Grammar::any_of("\"\\/bfnrt")}, lit("u") + ref(code_unit)});
    // A character: printable ASCII but '"' and '\', an escape, or well-formed UTF-8 (Unicode's
    // table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF).
    Symbol ascii = Grammar::byte_range(0x20, 0x7F);
    ascii.bytes.reset('"');
    ascii.bytes.reset('\\');
    const Rule character = grammar_.add_rule({
        {ascii},
        lit("\\") + ref(escape),
        {Grammar::byte_range(0xC2, 0xDF), tail},
        {Grammar::byte(0xE0), Grammar::byte_range(0xA0, 0xBF), tail},
        {Grammar::any_of("\xE1\xE2\xE3\xE4\xE5\xE6\xE7\xE8\xE9\xEA\xEB\xEC\xEE\xEF"), tail, tail},
        {Grammar::byte(0xED), Grammar::byte_range(0x80, 0x9F), tail},
        {Grammar::byte(0xF0), Grammar::byte_range(0x90, 0xBF), tail, tail},
        {Grammar::byte_range(0xF1, 0xF3), tail, tail, tail},
        {Grammar::byte(0xF4), Grammar::byte_range(0x80, 0x8F), tail, tail},
    });
    character_ = character;
    const Rule characters = grammar_.add_repetition(ref(character));
    string_ = grammar_.add_rule({lit("\"") + ref(characters) + lit("\"")});

    // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
    const Symbol digit = Grammar::byte_range('0', '9');
    digits_ = grammar_.add_repetition(digit);
    const Rule digits = digits_;
    const Rule whole = grammar_.add_rule({lit("0"), {Grammar::byte_range('1', '9'), ref(digits)}});
    const Rule sign = grammar_.add_rule({{}, lit("-")});
    const Rule fraction = grammar_.add_rule({{}, {Grammar::byte('.'), digit, ref(digits)}});
    const Rule exponent = grammar_.add_rule(
        {{},
         {Grammar::any_of("eE"), ref(grammar_.add_rule({{}, {Grammar::any_of("+-")}})), digit,
          ref(digits)}});
    integer_ = grammar_.add_rule({{ref(sign), ref(whole)}});
    number_ = grammar_.add_rule({{ref(sign), ref(whole), ref(fraction), ref(exponent)}});
    boolean_ = grammar_.add_rule({lit("true"), lit("false")});
    null_ = grammar_.add_rule({lit("null")});
  }

  // "{" gap ("}" | member gap ("," gap member gap)* "}"), member = key gap ":" gap value.
  Rule free_keyed_object(Rule value_rule) {
    const Symbols member =
        Symbols{ref(string_), ref(gap_)} + lit(":") + ref(gap_) + ref(value_rule);
    const Rule rest = grammar_.add_rule();
    grammar_.add_alternative(rest, lit("}"));
    grammar_.add_alternative(rest, lit(",") + ref(gap_) + member + ref(gap_) + ref(rest));
    return grammar_.add_rule(
        {lit("{") + ref(gap_) + lit("}"), lit("{") + ref(gap_) + member + ref(gap_) + ref(rest)});
  }

  // "[" gap ("]" | item gap ("," gap item gap)* "]") with between `least` and `most` items
  // (most < 0: no bound).
  Rule counted_array(Rule item, long least, long most) {
    // after[i]: the rest after i >= 1 items.
    const long bound = most >= 0 ? most : least;
    std::vector<Rule> after(static_cast<std::size_t>(std::max(bound, 1L)) + 1);
    for (Rule& rule : after) rule = grammar_.add_rule();
    for (long i = 1; i < static_cast<long>(after.size()); ++i) {
      if (i >= least) grammar_.add_alternative(after[i], lit("]"));
      const bool more = most < 0 || i < most;
      if (!more) continue;
      const Rule next = most < 0 && i >= least ? after[i] : after[i + 1];
      grammar_.add_alternative(after[i], lit(",") + ref(gap_) + ref(item) + ref(gap_) + ref(next));
    }
    const Rule array = grammar_.add_rule();
    if (least == 0) grammar_.add_alternative(array, lit("[") + ref(gap_) + lit("]"));
    if (most != 0) {
      grammar_.add_alternative(array, lit("[") + ref(gap_) + ref(item) + ref(gap_) + ref(after[1]));
    }
    return array;
  }

  // Any JSON value with at most kMaxDepth - open more containers open inside it.
  Rule free_value(int open) {
    if (free_values_[open]) return *free_values_[open];
    std::vector<Symbols> alternatives = {
        {ref(string_)}, {ref(number_)}, {ref(boolean_)}, {ref(null_)}};
    if (open < kMaxDepth) {
      const Rule inner = free_value(open + 1);
      alternatives.push_back({ref(free_keyed_object(inner))});
      alternatives.push_back({ref(counted_array(inner, 0, -1))});
    }
    free_values_[open] = grammar_.add_rule(alternatives);
    return *free_values_[open];
  }

  // A value valid under `schema` (found at `where`, for messages).
  Rule value(const Schema& schema, const std::string& where) {
    if (++nesting_ > kMaxSchemaNesting) {
      refuse(where + ": the schema nests deeper than " + std::to_string(kMaxSchemaNesting));
    }
    check_size(where);
    const Rule rule = value_nested(schema, where);
    --nesting_;
    return rule;
  }

  Rule value_nested(const Schema& schema, const std::string& where) {
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) refuse(where + ": false admits no value");
      return free_value(0);
    }
    if (!schema.is_object()) refuse(where + ": a schema must be an object or a boolean");
    bool enforces = false;
    for (const auto& [keyword, unused] : schema.items()) {
      if (kEnforced.contains(keyword)) {
        enforces = true;
      } else if (!kAnnotations.contains(keyword)) {
        refuse(where + ": keyword \"" + keyword + "\" is not supported");
      }
    }
    if (!enforces) return free_value(0);
    const auto beside = [&](const char* keyword) {
      for (const auto& [other, unused] : schema.items()) {
        if (other != keyword && kEnforced.contains(other)) {
          refuse(where + ": " + keyword + " beside \"" + other + "\" is not supported");
        }
      }
    };
    if (schema.contains("$ref")) {
      beside("$ref");
      return reference(schema, where);
    }
    if (schema.contains("allOf")) {
      beside("allOf");
      const Schema& all = schema["allOf"];
      if (!all.is_array() || all.size() != 1) {
        refuse(where +
               ": allOf is supported with one schema only (as pydantic writes a "
               "reference with a description)");
      }
      return value(all[0], where + "/allOf/0");
    }
    for (const char* keyword : {"anyOf", "oneOf"}) {
      if (!schema.contains(keyword)) continue;
      beside(keyword);
      const Schema& options = schema[keyword];
      if (!options.is_array() || options.empty()) {
        refuse(where + ": " + keyword + " must be a non-empty array");
      }
      std::vector<Symbols> alternatives;
      for (std::size_t i = 0; i < options.size(); ++i) {
        const std::string at = where + "/" + keyword + "/" + std::to_string(i);
        alternatives.push_back({ref(value(options[i], at))});
      }
      return grammar_.add_rule(alternatives);
    }
    if (schema.contains("const") || schema.contains("enum")) {
      // The values listed, less those of another type than `type` names.
      const Schema values =
          schema.contains("const") ? Schema::array({schema["const"]}) : schema["enum"];
      if (!values.is_array() || values.empty()) refuse(where + ": enum must be a non-empty array");
      std::vector<Symbols> alternatives;
      for (const Schema& v : values) {
        if (of_type(v, schema.value("type", Schema()))) alternatives.push_back(lit(v.dump()));
      }
      if (alternatives.empty()) refuse(where + ": no value listed is of the type named");
      return grammar_.add_rule(alternatives);
    }
    return typed(schema, where);
  }

  Rule reference(const Schema& schema, const std::string& where) {
    const std::string text = schema["$ref"].is_string() ? schema["$ref"].get<std::string>() : "";
    if (const auto known = references_.find(text); known != references_.end()) return known->second;
    // Named before its value is compiled, so that the value can refer to it.
    const Rule rule = grammar_.add_rule();
    references_.emplace(text, rule);
    grammar_.add_alternative(rule, {ref(value(target(schema), where + "/$ref " + text))});
    return rule;
  }

  Rule typed(const Schema& schema, const std::string& where) {
    std::vector<std::string> types;
    const Schema type = schema.value("type", Schema());
    if (type.is_string()) {
      types.push_back(type.get<std::string>());
    } else if (type.is_array() && !type.empty()) {
      for (const Schema& t : type) {
        if (!t.is_string()) refuse(where + ": type must name types");
        types.push_back(t.get<std::string>());
      }
    } else if (!type.is_null()) {
      refuse(where + ": type must be a type's name or a non-empty list of them");
    } else if (schema.contains("properties") || schema.contains("required") ||
               schema.contains("additionalProperties")) {
      types.push_back("object");
    } else if (schema.contains("items") || schema.contains("prefixItems") ||
               schema.contains("minItems") || schema.contains("maxItems")) {
      types.push_back("array");
    } else if (schema.contains("minLength") || schema.contains("maxLength") ||
               schema.contains("format") || schema.contains("pattern")) {
      types.push_back("string");
    } else {  // only bounds of numbers remain
      refuse(where + ": minimum and maximum need a \"type\": \"integer\" or \"number\"");
    }
    std::vector<Symbols> alternatives;
    for (const std::string& name : types) {
      if (name == "object") {
        alternatives.push_back({ref(object(schema, where))});
      } else if (name == "array") {
        alternatives.push_back({ref(array(schema, where))});
      } else if (name == "string") {
        alternatives.push_back({ref(string(schema, where))});
      } else if (name == "number") {
        alternatives.push_back({ref(has_number_bounds(schema) ? number(schema, where) : number_)});
      } else if (name == "integer") {
        alternatives.push_back(
            {ref(has_number_bounds(schema) ? integer(schema, where) : integer_)});
      } else if (name == "boolean") {
        alternatives.push_back({ref(boolean_)});
      } else if (name == "null") {
        alternatives.push_back({ref(null_)});
      } else {
        refuse(where + ": unknown type \"" + name + "\"");
      }
    }
    return grammar_.add_rule(alternatives);
  }

  Rule object(const Schema& schema, const std::string& where) {
    const Schema properties = schema.value("properties", Schema::object());
    if (!properties.is_object()) refuse(where + ": properties must be an object");
    std::set<std::string> required;
    for (const Schema& name : schema.value("required", Schema::array())) {
      if (!name.is_string()) refuse(where + ": required must list property names");
      if (!properties.contains(name.get<std::string>())) {
        refuse(where + ": required names \"" + name.get<std::string>() +
               "\", which properties does not list");
      }
      required.insert(name.get<std::string>());
    }
    const Schema extra = schema.value("additionalProperties", Schema(true));
    if (properties.empty()) {
      if (extra.is_boolean() && !extra.get<bool>())
        return grammar_.add_rule({lit("{") + ref(gap_) + lit("}")});
      return free_keyed_object(extra.is_boolean() ? free_value(1)
                                                  : value(extra, where + "/additionalProperties"));
    }
    // member[k]: "key" gap ":" gap value, the k-th property (a rule, as rest refers to it from
    // up to k places).
    std::vector<Symbols> member;
    std::vector<bool> needed;
    for (const auto& [name, property] : properties.items()) {
      const Rule v = value(property, where + "/properties/" + name);
      member.push_back({ref(grammar_.add_rule(
          {lit(Schema(name).dump()) + ref(gap_) + lit(":") + ref(gap_) + ref(v)}))});
      needed.push_back(required.contains(name));
    }
    // rest[k][w]: what follows once the properties before k are written or skipped (w: some
    // was written, so a ',' comes before the next). Any property may be next up to the first
    // required one; the object may close once no required one is left.
    const std::size_t n = member.size();
    std::vector<std::array<Rule, 2>> rest(n + 1);
    for (auto& pair : rest) pair = {grammar_.add_rule(), grammar_.add_rule()};
    for (std::size_t k = 0; k <= n; ++k) {
      check_size(where);
      for (int written = 0; written < 2; ++written) {
        for (std::size_t next = k; next < n; ++next) {
          const Symbols comma = written ? lit(",") + ref(gap_) : Symbols{};
          grammar_.add_alternative(rest[k][written],
                                   comma + member[next] + ref(gap_) + ref(rest[next + 1][1]));
          if (needed[next]) break;
        }
        const bool all_optional = std::none_of(needed.begin() + static_cast<std::ptrdiff_t>(k),
                                               needed.end(), [](bool b) { return b; });
        if (all_optional) grammar_.add_alternative(rest[k][written], lit("}"));
      }
    }
    return grammar_.add_rule({lit("{") + ref(gap_) + ref(rest[0][0])});
  }

  // A string under minLength and maxLength (in characters: code points), format (date, time,
  // date-time, uuid; any other format is an annotation, as JSON Schema's default vocabulary has
  // it) or pattern (pattern_grammar.h), one of the three.
  Rule string(const Schema& schema, const std::string& where) {
    const long least = count(schema, "minLength", 0, where);
    const long most = count(schema, "maxLength", -1, where);
    if (most >= 0 && most < least) refuse(where + ": maxLength is below minLength");
    const Schema format = schema.value("format", Schema());
    if (!format.is_null() && !format.is_string()) refuse(where + ": format must be a string");
    const std::optional<Symbols> shape =
        format.is_string() ? formatted(format.get<std::string>()) : std::nullopt;
    const Schema pattern = schema.value("pattern", Schema());
    if (!pattern.is_null() && !pattern.is_string()) refuse(where + ": pattern must be a string");
    const bool counted = least > 0 || most >= 0;
    if (int(counted) + int(shape.has_value()) + int(pattern.is_string()) > 1) {
      refuse(where + ": only one of minLength/maxLength, a format and a pattern is supported");
    }
    if (shape) return grammar_.add_rule({lit("\"") + *shape + lit("\"")});
    if (pattern.is_string()) {
      const Rule contents = add_pattern_rules(grammar_, pattern.get<std::string>());
      return grammar_.add_rule({lit("\"") + ref(contents) + lit("\"")});
    }
    if (least == 0 && most < 0) return string_;
    if (const auto known = counted_strings_.find({least, most}); known != counted_strings_.end()) {
      return known->second;
    }
    // after[k]: the rest once k characters are written.
    const long bound = most >= 0 ? most : least;
    std::vector<Rule> after(static_cast<std::size_t>(bound) + 1);
    for (Rule& rule : after) rule = grammar_.add_rule();
    for (long k = 0; k <= bound; ++k) {
      if (k >= least) grammar_.add_alternative(after[k], lit("\""));
      if (most >= 0 && k == most) continue;
      const Rule next = most < 0 && k == bound ? after[k] : after[k + 1];
      grammar_.add_alternative(after[k], {ref(character_), ref(next)});
    }
    return counted_strings_[{least, most}] = grammar_.add_rule({lit("\"") + ref(after[0])});
  }

  // The text between the quotes of a string of `format`, nullopt for a format not enforced.
  // date: RFC 3339's full-date, the day within its month (February 29th in any year); time: its
  // full-time (hours 00-23, a leap second 60, a fraction, Z or an offset); date-time: both,
  // joined by T; uuid: RFC 4122's 8-4-4-4-12 hexadecimal digits.
  std::optional<Symbols> formatted(const std::string& format) {
    const Symbol digit = Grammar::byte_range('0', '9');
    const Symbol hex = Grammar::any_of("0123456789abcdefABCDEF");
    const auto two = [&](int low, int high) {
      return ref(grammar_.add_rule(fixed_width_range(two_digits(low), two_digits(high))));
    };
    const Symbols date =
        Symbols{digit, digit, digit, digit} + lit("-") +
        ref(grammar_.add_rule(
            {lit("01-") + two(1, 31), lit("02-") + two(1, 29), lit("03-") + two(1, 31),
             lit("04-") + two(1, 30), lit("05-") + two(1, 31), lit("06-") + two(1, 30),
             lit("07-") + two(1, 31), lit("08-") + two(1, 31), lit("09-") + two(1, 30),
             lit("10-") + two(1, 31), lit("11-") + two(1, 30), lit("12-") + two(1, 31)}));
    const Symbol hour = two(0, 23);
    const Symbol minute = two(0, 59);
    const Rule fraction = grammar_.add_rule({{}, {Grammar::byte('.'), digit, ref(digits_)}});
    const Rule offset = grammar_.add_rule(
        {{Grammar::any_of("Zz")}, Symbols{Grammar::any_of("+-"), hour} + lit(":") + minute});
    const Symbols time =
        Symbols{hour} + lit(":") + minute + lit(":") + two(0, 60) + ref(fraction) + ref(offset);
    if (format == "date") return date;
    if (format == "time") return time;
    if (format == "date-time") return date + Grammar::any_of("Tt") + time;
    if (format == "uuid") {
      Symbols uuid;
      for (const int group : {8, 4, 4, 4, 12}) {
        if (!uuid.empty()) uuid.push_back(Grammar::byte('-'));
        uuid.insert(uuid.end(), static_cast<std::size_t>(group), hex);
      }
      return uuid;
    }
    return std::nullopt;
  }

  static std::string two_digits(int n) {
    return {static_cast<char>('0' + n / 10), static_cast<char>('0' + n % 10)};
  }

  static bool has_number_bounds(const Schema& schema) {
    return std::any_of(kNumberBounds.begin(), kNumberBounds.end(),
                       [&](const std::string& k) { return schema.contains(k); });
  }

  // The bounds of one side: minimum and exclusiveMinimum (lower) or maximum and
  // exclusiveMaximum, each value with whether it is exclusive (draft 4 writes "exclusiveMinimum":
  // true beside minimum). Each value must be a number within +-10^`power` (10^`power` itself
  // allowed where `up_to_largest`).
  static std::vector<std::pair<Schema, bool>> bounds(const Schema& schema, bool lower, int power,
                                                     bool up_to_largest, const std::string& where) {
    const char* keyword = lower ? "minimum" : "maximum";
    const char* exclusive = lower ? "exclusiveMinimum" : "exclusiveMaximum";
    std::vector<std::pair<Schema, bool>> out;
    for (const char* name : {keyword, exclusive}) {
      const Schema v = schema.value(name, Schema());
      if (v.is_null() || v.is_boolean()) continue;
      const double limit = std::pow(10.0, power);
      const double size = v.is_number() ? std::fabs(v.get<double>()) : limit;
      if (!(size < limit || (up_to_largest && size == limit))) {
        refuse(where + ": " + name + " must be a number " +
               (up_to_largest ? "within 1e" : "strictly within 1e") + std::to_string(power));
      }
      out.emplace_back(v, name == exclusive || schema.value(exclusive, Schema()) == Schema(true));
    }
    return out;
  }

  // An integer under minimum, maximum and their exclusive forms (number_grammar.h).
  Rule integer(const Schema& schema, const std::string& where) {
    std::optional<long long> low, high;
    for (const bool lower : {true, false}) {
      std::optional<long long>& found = lower ? low : high;
      for (const auto& [v, exclusive] : bounds(schema, lower, kIntegerBoundPower, true, where)) {
        const double x = v.get<double>();
        long long whole = static_cast<long long>(lower ? std::ceil(x) : std::floor(x));
        if (v.is_number_integer()) whole = v.get<long long>();
        if (exclusive && static_cast<double>(whole) == x) whole += lower ? 1 : -1;
        found = !found ? whole : lower ? std::max(*found, whole) : std::min(*found, whole);
      }
    }
    if (low && high && *low > *high) refuse(where + ": no integer lies between its bounds");
    return add_integer_range(grammar_, low, high);
  }

  // A number under the same keywords, written as number_grammar.h's plain decimals of at most
  // kNumberDigits significant digits.
  Rule number(const Schema& schema, const std::string& where) {
    std::optional<NumberBound> low, high;
    for (const bool lower : {true, false}) {
      std::optional<NumberBound>& found = lower ? low : high;
      for (const auto& [v, exclusive] : bounds(schema, lower, kNumberDigits, false, where)) {
        const NumberBound bound{v.get<double>(), exclusive};
        if (exclusive && significant_digits(bound.value) > kNumberDigits) {
          refuse(where + ": an exclusive bound of a number needs at most 15 significant digits " +
                 "(a number written next to it could read as the bound itself)");
        }
        const bool tighter = !found ||
                             (lower ? bound.value > found->value : bound.value < found->value) ||
                             (bound.value == found->value && exclusive);
        if (tighter) found = bound;
      }
    }
    const std::optional<Rule> rule = add_number_range(grammar_, low, high);
    if (!rule) {
      refuse(where + ": no number of at most 15 significant digits lies between its bounds");
    }
    return *rule;
  }

  // A count keyword's value (minItems, maxLength, ...): `fallback` when absent.
  static long count(const Schema& schema, const char* keyword, long fallback,
                    const std::string& where) {
    const Schema v = schema.value(keyword, Schema());
    if (v.is_null()) return fallback;
    if (!v.is_number_unsigned() || v.get<unsigned long>() > kMaxCountedItems) {
      refuse(where + ": " + keyword + " must be a whole number up to " +
             std::to_string(kMaxCountedItems));
    }
    return static_cast<long>(v.get<unsigned long>());
  }

  Rule array(const Schema& schema, const std::string& where) {
    const long least = count(schema, "minItems", 0, where);
    const long most = count(schema, "maxItems", -1, where);
    if (most >= 0 && most < least) refuse(where + ": maxItems is below minItems");
    if (schema.contains("prefixItems")) return tuple(schema, where, least, most);
    const Schema items = schema.value("items", Schema(true));
    if (items.is_array()) refuse(where + ": items as a list (tuples) is not supported");
    const Rule item =
        items.is_boolean() && items.get<bool>() ? free_value(1) : value(items, where + "/items");
    return counted_array(item, least, most);
  }

  // A tuple, as pydantic writes one: "[" gap v0 gap "," gap v1 ... gap "]", item i under
  // prefixItems[i], and no more (which any `items` allows); minItems and maxItems must let the
  // tuple's length be.
  Rule tuple(const Schema& schema, const std::string& where, long least, long most) {
    const Schema& prefix = schema["prefixItems"];
    if (!prefix.is_array() || prefix.empty()) {
      refuse(where + ": prefixItems must be a non-empty array");
    }
    const auto length = static_cast<long>(prefix.size());
    if (least > length || (most >= 0 && most < length)) {
      refuse(where + ": prefixItems is written as a tuple of its own length, which minItems or " +
             "maxItems forbids");
    }
    Symbols symbols = lit("[") + ref(gap_);
    for (long i = 0; i < length; ++i) {
      if (i > 0) symbols = symbols + lit(",") + ref(gap_);
      const std::size_t at = static_cast<std::size_t>(i);
      symbols =
          symbols + ref(value(prefix[at], where + "/prefixItems/" + std::to_string(i))) + ref(gap_);
    }
    return grammar_.add_rule({symbols + lit("]")});
  }

  const Schema& root_;
  Grammar grammar_;
  Rule start_ = 0;
  Rule gap_ = 0, string_ = 0, number_ = 0, integer_ = 0, boolean_ = 0, null_ = 0;
  Rule character_ = 0;  // one character of a string (a code point: a byte, an escape, UTF-8)
  Rule digits_ = 0;     // [0-9]*
  std::vector<std::optional<Rule>> free_values_ =  // [open]: any value inside `open` containers
      std::vector<std::optional<Rule>>(kMaxDepth + 1);
  std::map<std::string, Rule> references_;
  std::map<std::pair<long, long>, Rule> counted_strings_;  // [least, most]: made once
  int nesting_ = 0;  // schemas being compiled inside one another
};

}  // namespace

Grammar json_schema_grammar(std::string_view schema) {
  // JSON deeper than any schema that compiles (each schema level is an object inside another's
  // properties or items: two JSON levels) is refused as it is read, before a deep value is
  // built (a million levels would overflow the stack of the recursive code that handles it).
  constexpr int kMaxJsonDepth = 4 * kMaxSchemaNesting;
  const auto shallow = [](int depth, Schema::parse_event_t, Schema&) {
    if (depth > kMaxJsonDepth) {
      refuse("the schema nests deeper than " + std::to_string(kMaxJsonDepth) + " JSON levels");
    }
    return true;
  };
  Schema parsed;
  try {
    parsed = Schema::parse(schema, shallow);
  } catch (const nlohmann::json::exception& e) {
    refuse(std::string("not JSON: ") + e.what());
  }
  return SchemaCompiler(parsed).compile();
}

}  // namespace attnscope::engine
