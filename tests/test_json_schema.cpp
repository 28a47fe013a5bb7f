// JSON schemas (engine/json_grammar.h, structured outputs) against an independent validator
// (tests/json_schema_reference.h): replies drawn at random through each schema's grammar, byte
// by byte among the bytes it takes, parse, are valid under the schema, keep its property order
// and JSON mode's whitespace; a table of texts is taken exactly when the reference accepts it;
// schemas asking what is not enforced, or admitting nothing, are refused with a reason; and an
// engine under a schema writes only valid replies.
#include <doctest/doctest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"
#include "engine/grammar_recognizer.h"
#include "engine/json_grammar.h"
#include "hf_fixtures.h"
#include "json_mode_reference.h"
#include "json_schema_reference.h"
#include "models/gpt2/model.h"
#include "runtime/error.h"

using namespace attnscope;
using engine::GrammarRecognizer;
using testing::OrderedJson;

namespace {

const std::vector<std::string> kSchemas = {
    // Required and optional properties of every type, a nullable one, an enum, a const, counted
    // items.
    R"({"type": "object", "properties": {
        "name": {"type": "string"}, "age": {"type": "integer"},
        "email": {"type": ["string", "null"]},
        "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 3},
        "role": {"const": "admin"}, "score": {"type": "number", "description": "0 to 1"}},
      "required": ["name", "age"], "additionalProperties": false})",
    // Only optional properties, one of them free.
    R"({"type": "object", "properties": {"x": {"type": "boolean"}, "y": {"type": "null"}, "z": {}}})",
    // anyOf over $defs.
    R"({"type": "object", "$defs": {"point": {"type": "object",
        "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
        "required": ["x", "y"], "additionalProperties": false}},
      "properties": {"shape": {"anyOf": [{"$ref": "#/$defs/point"},
        {"type": "array", "items": {"$ref": "#/$defs/point"}, "maxItems": 2},
        {"type": "string"}]}},
      "required": ["shape"]})",
    // Recursion through the root.
    R"({"type": "object", "properties": {"value": {"type": "integer"},
        "children": {"type": "array", "items": {"$ref": "#"}, "maxItems": 2}},
      "required": ["value", "children"], "additionalProperties": false})",
    // Free keys, their values under a schema.
    R"({"type": "object", "additionalProperties": {"type": "integer"}})",
    // An array at the root: calls as serve forces them (tool_choice "required").
    R"({"type": "array", "minItems": 1, "items": {"anyOf": [
        {"type": "object", "properties": {"name": {"const": "f"}, "parameters": {"type": "object",
          "properties": {"q": {"type": "string"}}, "required": ["q"]}},
         "required": ["name", "parameters"], "additionalProperties": false},
        {"type": "object", "properties": {"name": {"const": "g"},
          "parameters": {"$ref": "#/$defs/empty"}},
         "required": ["name", "parameters"], "additionalProperties": false}]},
      "$defs": {"empty": {"type": "object", "additionalProperties": false}}})",
    // Formats, string lengths, integer bounds and allOf of one schema, as pydantic writes them.
    R"({"type": "object", "properties": {
        "id": {"type": "string", "format": "uuid"},
        "when": {"type": "string", "format": "date-time"},
        "day": {"format": "date"}, "at": {"type": "string", "format": "time"},
        "email": {"type": "string", "format": "email"},
        "code": {"type": "string", "minLength": 2, "maxLength": 4},
        "note": {"type": "string", "maxLength": 3},
        "age": {"type": "integer", "minimum": 0, "maximum": 130},
        "delta": {"type": "integer", "exclusiveMinimum": -20, "exclusiveMaximum": 7},
        "big": {"type": "integer", "minimum": 1000}, "low": {"type": "integer", "maximum": -3},
        "pair": {"type": "array", "prefixItems": [{"type": "integer"},
          {"type": "string", "maxLength": 3}], "minItems": 2, "maxItems": 2},
        "owner": {"allOf": [{"$ref": "#/$defs/person"}], "description": "pydantic v1's way"}},
      "required": ["id", "when", "age", "delta", "owner"],
      "$defs": {"person": {"type": "object",
        "properties": {"name": {"type": "string", "minLength": 1}}, "required": ["name"]}}})",
    // Patterns: anchored and not, classes, counts, groups, alternatives, escapes of JSON's own.
    R"({"type": "object", "properties": {
        "code": {"type": "string", "pattern": "^[A-Z]{3}-\\d{2,4}$"},
        "phone": {"pattern": "^(?:\\+?1[-. ]?)?\\(?\\d{3}\\)?[-. ]?\\d{3}[-. ]?\\d{4}$"},
        "email": {"type": "string", "pattern": "^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$"},
        "colour": {"type": "string", "pattern": "colou?r"},
        "word": {"type": "string", "pattern": "^[^\\s@\"]+$"},
        "words": {"type": "string", "pattern": "^\\w+(\\s\\w+)*$"},
        "mix": {"type": "string", "pattern": "^(a|b|cd)*e?$"},
        "cafe": {"type": "string", "pattern": "^caf\u00e9 .$"},
        "quoted": {"type": "string", "pattern": "^\"q\" \\\\ [\\t\\n]$"}},
      "required": ["code", "phone", "email", "colour", "word", "words", "mix", "cafe", "quoted"]})",
    // Number bounds, as pydantic writes confloat or Field(ge=..., lt=...).
    R"({"type": "object", "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "kelvin": {"type": "number", "exclusiveMinimum": -273.15},
        "ratio": {"type": ["number", "null"], "minimum": -0.25, "exclusiveMaximum": 0.5},
        "debt": {"type": "number", "maximum": -1000.5}},
      "required": ["score"]})",
    // An enum of every kind of value.
    R"({"type": "object", "properties": {"v": {"enum": [1, "two", null, [3], {"k": true}]}},
      "required": ["v"]})",
};

// A reply drawn through `grammar`: each byte at random among those it takes (a string's closing
// quote more often) while the reply is shorter than `budget`, then the shortest way to its end.
// "<stuck>" when no byte is taken before the reply is whole.
std::string random_reply(const engine::Grammar& grammar, std::mt19937& random, std::size_t budget) {
  GrammarRecognizer recognizer(grammar);
  std::string reply;
  while (!recognizer.finished() && reply.size() < budget) {
    std::vector<unsigned char> taken;
    for (int byte = 0; byte < 256; ++byte) {
      GrammarRecognizer next = recognizer;
      if (next.accept(static_cast<unsigned char>(byte))) {
        taken.push_back(static_cast<unsigned char>(byte));
      }
    }
    if (taken.empty()) return reply + "<stuck>";
    unsigned char byte = taken[random() % taken.size()];
    // Strings end after about 8 bytes, so that a reply has room for many properties.
    if (std::find(taken.begin(), taken.end(), '"') != taken.end() && random() % 8 == 0) byte = '"';
    REQUIRE(recognizer.accept(byte));
    reply += static_cast<char>(byte);
  }
  const testing::Completion rest = testing::shortest_completion(recognizer, 200000);
  return reply + (rest.found == testing::Completion::Found::text ? rest.text : "<stuck>");
}

// The grammar of {"v": V} with V of `type` under `keywords` (JSON members, comma-separated).
engine::Grammar one_value(const std::string& type, const std::string& keywords) {
  return engine::json_schema_grammar(R"({"type": "object", "properties": {"v": {"type": ")" + type +
                                     "\", " + keywords + R"(}}, "required": ["v"]})");
}

bool takes(const engine::Grammar& grammar, std::string_view text) {
  GrammarRecognizer recognizer(grammar);
  return recognizer.accept(text) && recognizer.finished();
}

// What the grammar must take: a JSON text valid under the schema, its properties in order, with
// JSON mode's gaps.
bool reference_takes(const OrderedJson& schema, const std::string& text) {
  if (!testing::reference_json(text) || !testing::gaps_allowed(text)) return false;
  const OrderedJson value = OrderedJson::parse(*testing::json_in_range(text));
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  return (text[first] == '{' || text[first] == '[') &&
         text.find_last_not_of(" \t\r\n") == text.size() - 1 &&
         testing::schema_valid(value, schema, schema) &&
         testing::property_order_kept(value, schema, schema);
}

}  // namespace

TEST_CASE("json schema: random replies through the grammar are valid under the schema") {
  std::mt19937 random(23);
  for (const std::string& text : kSchemas) {
    CAPTURE(text);
    const OrderedJson schema = OrderedJson::parse(text);
    const engine::Grammar grammar = engine::json_schema_grammar(text);
    std::map<std::string, int> keys_seen;  // how often each key was written
    for (int i = 0; i < 40; ++i) {
      const std::string reply = random_reply(grammar, random, 20 + random() % 200);
      CAPTURE(reply);
      REQUIRE(reference_takes(schema, reply));
      const OrderedJson parsed = OrderedJson::parse(*testing::json_in_range(reply));
      if (parsed.is_object()) {
        for (const auto& [key, value] : parsed.items()) ++keys_seen[key];
      }
    }
    // Optional properties are sometimes written and sometimes not.
    if (schema.contains("properties")) {
      for (const auto& property : schema["properties"].items()) {
        const std::string name = property.key();  // not a structured binding: clang 14's CAPTURE
        CAPTURE(name);
        CHECK(keys_seen[name] > 0);
        const OrderedJson required_names = schema.value("required", OrderedJson::array());
        const bool required =
            std::find(required_names.begin(), required_names.end(), name) != required_names.end();
        if (!required) CHECK(keys_seen[name] < 40);
      }
    }
  }
}

TEST_CASE("json schema: the grammar takes a text exactly when the reference does") {
  const std::string person = kSchemas[0];
  const OrderedJson schema = OrderedJson::parse(person);
  const engine::Grammar grammar = engine::json_schema_grammar(person);
  struct Case {
    std::string text;
    bool valid;
  };
  const std::vector<Case> cases = {
      {R"({"name": "Ann", "age": 30})", true},
      {"{\n  \"name\": \"Ann\",\n  \"age\": -4,\n  \"email\": null,\n  \"tags\": [\"a\", \"c\"],\n"
       "  \"role\": \"admin\",\n  \"score\": 0.5e-3\n}",
       true},
      {R"({"name":"\u00e9","age":0,"email":"a@b","score":1})", true},
      {R"({"age": 30, "name": "Ann"})", false},              // out of the schema's order
      {R"({"name": "Ann"})", false},                         // age is required
      {R"({"name": "Ann", "age": 3.5})", false},             // not an integer
      {R"({"name": "Ann", "age": 30, "extra": 1})", false},  // additionalProperties false
      {R"({"name": "Ann", "age": 30, "tags": []})", false},  // minItems 1
      {R"({"name": "Ann", "age": 30, "tags": ["a", "b", "c", "a"]})", false},  // maxItems 3
      {R"({"name": "Ann", "age": 30, "tags": ["d"]})", false},                 // not in the enum
      {R"({"name": "Ann", "age": 30, "role": "user"})", false},                // not the const
      {R"({"name": "Ann", "age": 30, "email": 5})", false},
      {R"({"name": "Ann", "age": 30,})", false},
      {R"({"name": 7, "age": 30})", false},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    CHECK(takes(grammar, c.text) == c.valid);
    CHECK(reference_takes(schema, c.text) == c.valid);  // the table agrees with the reference
  }
  // Every prefix of a valid text is taken, and the same place is the same state.
  GrammarRecognizer a(grammar), b(grammar);
  REQUIRE(a.accept(R"({"name": "x)"));
  REQUIRE(b.accept(R"({"name": "a much longer name \" with \u00e9scapes)"));
  CHECK(a == b);
  CHECK(a.hash() == b.hash());
  GrammarRecognizer c(grammar);
  REQUIRE(c.accept(R"({"name": "x", "age": 1, "email": "x)"));
  CHECK_FALSE(a == c);  // a string, but another property's
}

TEST_CASE("json schema: integer bounds take exactly the integers between them") {
  constexpr long kNone = 1'000'000'000;  // no bound on that side
  struct Bounds {
    std::string keywords;
    long least, most;  // the integers that must be taken
  };
  std::vector<Bounds> bounds = {
      {R"("minimum": 0, "maximum": 130)", 0, 130},
      {R"("minimum": -57, "maximum": 1043)", -57, 1043},
      {R"("exclusiveMinimum": -20, "exclusiveMaximum": 7)", -19, 6},
      {R"("minimum": 99)", 99, kNone},
      {R"("maximum": -3)", -kNone, -3},
      {R"("minimum": 2.5, "maximum": 9.99)", 3, 9},
      {R"("minimum": 10, "maximum": 10)", 10, 10},
      {R"("minimum": -1000, "maximum": -999)", -1000, -999},
      {R"("minimum": 5, "exclusiveMinimum": true, "maximum": 8, "exclusiveMaximum": true)", 6, 7},
      {R"("minimum": 0)", 0, kNone}};
  // And random ones, so that every pattern of digits where two bounds part meets the grammar.
  std::mt19937 random(29);
  for (int i = 0; i < 24; ++i) {
    long least = std::uniform_int_distribution<long>(-1400, 1400)(random);
    long most = std::uniform_int_distribution<long>(-1400, 1400)(random);
    if (least > most) std::swap(least, most);
    bounds.push_back(
        {R"("minimum": )" + std::to_string(least) + R"(, "maximum": )" + std::to_string(most),
         least, most});
  }
  for (const Bounds& b : bounds) {
    CAPTURE(b.keywords);
    const engine::Grammar grammar = one_value("integer", b.keywords);
    for (long n = -1500; n <= 1500; ++n) {
      CAPTURE(n);
      CHECK(takes(grammar, "{\"v\": " + std::to_string(n) + "}") == (b.least <= n && n <= b.most));
    }
    for (const long far : {-123456789L, 123456789L}) {
      CAPTURE(far);
      CHECK(takes(grammar, "{\"v\": " + std::to_string(far) + "}") ==
            (b.least <= far && far <= b.most));
    }
    CHECK_FALSE(takes(grammar, R"({"v": 007})"));
    CHECK_FALSE(takes(grammar, R"({"v": 5.0})"));
  }
  // A bound of 17 digits: each digit count's range is a few alternatives, not 2^17 (which would
  // pass the grammar's size bound and be refused).
  const engine::Grammar wide = one_value("integer", R"("minimum": 10000000000000000)");
  CHECK(wide.size() < 10'000);
  CHECK(takes(wide, R"({"v": 10000000000000000})"));
  CHECK(takes(wide, R"({"v": 99999999999999999})"));
  CHECK(takes(wide, R"({"v": 123456789012345678901})"));
  CHECK_FALSE(takes(wide, R"({"v": 9999999999999999})"));
}

// n / 1000 as a decimal text with `places` fraction digits (0: none), and shortest without them
// when places < 0.
std::string thousandths(long n, int places) {
  const std::string sign = n < 0 ? "-" : "";
  const long size = std::labs(n);
  std::string fraction = std::to_string(1000 + size % 1000).substr(1);
  if (places < 0) {
    while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
  } else {
    fraction = (fraction + "0000").substr(0, static_cast<std::size_t>(places));
  }
  return sign + std::to_string(size / 1000) + (fraction.empty() ? "" : "." + fraction);
}

TEST_CASE("json schema: number bounds take exactly the plain decimals between them") {
  constexpr long kNone = 1'000'000'000;  // no bound on that side (in thousandths)
  struct Bounds {
    std::string keywords;
    long least, most;              // in thousandths
    bool above_least, below_most;  // exclusive
  };
  std::vector<Bounds> bounds = {
      {R"("minimum": 0, "maximum": 1)", 0, 1000, false, false},
      {R"("minimum": 0.25, "exclusiveMaximum": 0.375)", 250, 375, false, true},
      {R"("exclusiveMinimum": -1.5, "maximum": 2)", -1500, 2000, true, false},
      {R"("exclusiveMinimum": 0)", 0, kNone, true, false},
      {R"("maximum": -0.005)", -kNone, -5, false, false},
      {R"("exclusiveMaximum": 0)", -kNone, 0, false, true},
      {R"("minimum": -2.999, "maximum": -2.001)", -2999, -2001, false, false},
      {R"("minimum": 1.5, "maximum": 1.5)", 1500, 1500, false, false},
      {R"("minimum": 0.1, "exclusiveMinimum": 0.1, "maximum": 0.9, "exclusiveMaximum": 1)", 100,
       900, true, false},  // the tighter of each pair
      {R"("minimum": 1, "exclusiveMinimum": true, "maximum": 2, "exclusiveMaximum": true)", 1000,
       2000, true, true},  // draft 4
      {R"("minimum": 12, "maximum": 2345.5)", 12000, 2345500, false, false}};
  // And random ones, so that every way two bounds' digits part meets the grammar.
  std::mt19937 random(31);
  for (int i = 0; i < 16; ++i) {
    long least = std::uniform_int_distribution<long>(-2600, 2600)(random);
    long most = std::uniform_int_distribution<long>(-2600, 2600)(random);
    if (least > most) std::swap(least, most);
    const bool above = random() % 2 == 0, below = random() % 2 == 0;
    if (least == most && (above || below)) continue;
    bounds.push_back({std::string(above ? R"("exclusiveMinimum": )" : R"("minimum": )") +
                          thousandths(least, -1) +
                          (below ? R"(, "exclusiveMaximum": )" : R"(, "maximum": )") +
                          thousandths(most, -1),
                      least, most, above, below});
  }
  for (const Bounds& b : bounds) {
    CAPTURE(b.keywords);
    const engine::Grammar grammar = one_value("number", b.keywords);
    for (long n = -3000; n <= 3000; ++n) {
      const bool inside =
          (b.above_least ? n > b.least : n >= b.least) && (b.below_most ? n < b.most : n <= b.most);
      for (const int places : {-1, 1, 3, 4}) {
        if (places == 1 && n % 100 != 0) continue;  // 1 place writes tenths only
        const std::string text = thousandths(n, places);
        CAPTURE(text);
        CHECK(takes(grammar, "{\"v\": " + text + "}") == inside);
      }
    }
    CHECK_FALSE(takes(grammar, R"({"v": 1e0})"));  // no exponents
    CHECK_FALSE(takes(grammar, R"({"v": 0.5E+0})"));
    CHECK_FALSE(takes(grammar, R"({"v": -0})"));  // no negative zero
    CHECK_FALSE(takes(grammar, R"({"v": -0.0})"));
    CHECK_FALSE(takes(grammar, R"({"v": 01.5})"));
    CHECK_FALSE(takes(grammar, R"({"v": .5})"));
    CHECK_FALSE(takes(grammar, R"({"v": 1.})"));
  }
  // At most 15 significant digits, wherever the decimal point is.
  const engine::Grammar grammar = engine::json_schema_grammar(
      R"({"type": "object", "properties": {"v": {"type": "number", "minimum": -1e14,
          "exclusiveMaximum": 1}}, "required": ["v"]})");
  for (const auto& entry : std::vector<std::pair<std::string, bool>>{
           {"0.999999999999999", true},       // 15 digits, below 1 as a double too
           {"0.9999999999999999", false},     // 16
           {"0.000000000000001", true},       // 1 significant digit
           {"0.0000000000000001", false},     // more than 15 fraction digits
           {"-12345.6789012345", true},       // 15
           {"-12345.67890123456", false},     // 16
           {"-99999999999999.9", true},       // 15 digits, whole part 14
           {"-100000000000000", true},        // the bound
           {"-100000000000000.1", false},     // below it
           {"-100000000000000.0", false}}) {  // 16 digits
    const std::string& text = entry.first;    // not a structured binding: clang 14's CAPTURE
    CAPTURE(text);
    CHECK(takes(grammar, "{\"v\": " + text + "}") == entry.second);
  }
}

TEST_CASE("json schema: formats, string lengths and tuples take exactly what the reference does") {
  const std::string text = kSchemas[6];
  const OrderedJson schema = OrderedJson::parse(text);
  const engine::Grammar grammar = engine::json_schema_grammar(text);
  const std::string base =
      R"({"id": "123e4567-e89b-12d3-a456-426614174000", "when": "2024-02-29T23:59:60.5+05:30", )";
  const std::string tail = R"("age": 3, "delta": 0, "owner": {"name": "x"}})";
  struct Case {
    std::string fields;
    bool valid;
  };
  for (const Case& c : std::vector<Case>{
           {"", true},
           {R"("day": "2023-12-31", )", true},
           {R"("day": "2024-02-30", )", false},
           {R"("day": "2024-04-31", )", false},
           {R"("day": "2024-13-01", )", false},
           {R"("day": "24-01-01", )", false},
           {R"("at": "00:00:00Z", )", true},
           {R"("at": "24:00:00Z", )", false},
           {R"("at": "12:60:00Z", )", false},
           {R"("at": "12:00:00", )", false},
           {R"("email": "not an email", )", true},  // format email is an annotation
           {R"("code": "ab", )", true},
           {R"("code": "é€", )", true},
           {"\"code\": \"\xc3\xa9\xe2\x82\xac"
            "ab\", ",
            true},  // 4 characters, 7 bytes
           {R"("code": "a", )", false},
           {R"("code": "abcde", )", false},
           {R"("note": "", )", true},
           {R"("note": "abcd", )", false},
       }) {
    const std::string whole = base + c.fields + tail;
    CAPTURE(whole);
    CHECK(takes(grammar, whole) == c.valid);
    CHECK(reference_takes(schema, whole) == c.valid);
  }
  // A tuple (prefixItems) comes after "delta" in the schema's order.
  for (const Case& c : std::vector<Case>{{R"("pair": [1, "ab"], )", true},
                                         {R"("pair": [1], )", false},
                                         {R"("pair": ["a", 1], )", false},
                                         {R"("pair": [1, "ab", 2], )", false},
                                         {R"("pair": [1, "abcd"], )", false}}) {
    const std::string whole =
        base + R"("age": 3, "delta": 0, )" + c.fields + R"("owner": {"name": "x"}})";
    CAPTURE(whole);
    CHECK(takes(grammar, whole) == c.valid);
    CHECK(reference_takes(schema, whole) == c.valid);
  }
  for (const char* bad_id :
       {"123e4567-e89b-12d3-a456-42661417400", "123e4567e89b12d3a456426614174000",
        "123e4567-e89b-12d3-a456-42661417400g"}) {
    std::string whole = base + tail;
    whole.replace(whole.find("123e4567"), 36, bad_id);
    CAPTURE(whole);
    CHECK_FALSE(takes(grammar, whole));
  }
}

TEST_CASE("json schema: a pattern takes the strings std::regex finds it in") {
  struct Case {
    std::string pattern;  // as a JSON string's text
    std::string value;    // a JSON string's text
    bool valid;
  };
  for (const Case& c : std::vector<Case>{
           {R"(^[A-Z]{3}-\\d{2,4}$)", R"(ABC-12)", true},
           {R"(^[A-Z]{3}-\\d{2,4}$)", R"(ABC-1234)", true},
           {R"(^[A-Z]{3}-\\d{2,4}$)", R"(XYZ-9990)", true},
           {R"(^[A-Z]{3}-\\d{2,4}$)", R"(ABC-1)", false},
           {R"(^[A-Z]{3}-\\d{2,4}$)", R"(ABC-12345)", false},
           {R"(^[A-Z]{3}-\\d{2,4}$)", R"(abc-12)", false},
           {R"(colou?r)", R"(my color!)", true},
           {R"(colou?r)", R"(colr)", false},
           {R"(^(a|b|cd)*e?$)", R"(abcdbe)", true},
           {R"(^(a|b|cd)*e?$)", R"(ace)", false},
           {R"(^x{2}$|^y+$)", R"(yyy)", true},
           {R"(^x{2}$|^y+$)", R"(xxx)", false},
           {R"(^[^a-c]$)", R"(d)", true},
           {R"(^[^a-c]$)", R"(b)", false},
           {R"(^\\\\d$)", R"(\\d)", true},  // an escaped backslash, then d
           {R"(^\"$)", R"(\")", true},      // a quote, written escaped
           {R"(^[\t]$)", R"(\t)", true},    // a tab, written escaped
           {R"(^[\t]$)", R"(t)", false},
       }) {
    CAPTURE(c.pattern);
    CAPTURE(c.value);
    const std::string schema_text = R"({"type": "object", "properties": {"s": {"type": "string",
        "pattern": ")" + c.pattern + R"("}}, "required": ["s"]})";
    const OrderedJson schema = OrderedJson::parse(schema_text);
    const engine::Grammar grammar = engine::json_schema_grammar(schema_text);
    const std::string text = R"({"s": ")" + c.value + R"("})";
    CHECK(takes(grammar, text) == c.valid);
    CHECK(reference_takes(schema, text) == c.valid);
  }
}

TEST_CASE("json schema: what is not enforced, or admits no reply, is refused with a reason") {
  struct Refusal {
    std::string schema;
    std::string says;
  };
  const std::vector<Refusal> refusals = {
      {"{", "not JSON"},
      {R"({"type": "string"})", "the schema's root must be an object"},
      {R"({"anyOf": [{"type": "object"}]})", "the schema's root must be an object"},
      {R"({"properties": {"a": {}}})", "the schema's root must be an object"},
      {R"({"type": "object", "properties": {"a": {"type": "string", "not": {}}}})",
       "keyword \"not\" is not supported"},
      {R"({"type": "object", "properties": {"a": {"type": "integer", "multipleOf": 5}}})",
       "keyword \"multipleOf\" is not supported"},
      {R"({"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}})", "names nothing"},
      {R"({"type": "object", "properties": {"a": {"$ref": "https://x/y.json"}}})",
       "only references within the schema"},
      {R"({"type": "object", "properties": {"a": {"enum": []}}})",
       "enum must be a non-empty array"},
      {R"({"type": "object", "properties": {"a": {"type": "string", "enum": [1, 2]}}})",
       "no value listed is of the type named"},
      {R"({"type": "object", "properties": {"a": {"type": "strange"}}})", "unknown type"},
      {R"({"type": "object", "properties": {"a": 5}})", "a schema must be an object or a boolean"},
      {R"({"type": "object", "properties": {"a": false}})", "false admits no value"},
      {R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})",
       "required names \"b\", which properties does not list"},
      {R"({"type": "object", "properties": {"a": {"type": "array", "minItems": 3, "maxItems": 2}}})",
       "maxItems is below minItems"},
      {R"({"type": "object", "properties": {"a": {"type": "array", "maxItems": 5000}}})",
       "maxItems must be a whole number up to 1024"},
      {R"({"type": "object", "properties": {"a": {"type": "array", "items": [{}]}}})",
       "items as a list"},
      {R"({"type": "object", "properties": {"a": {"anyOf": [{}], "type": "string"}}})",
       "anyOf beside \"type\" is not supported"},
      {[] {
         std::string deep = R"({"type": "object", "properties": {"a": )";
         for (int i = 0; i < 70; ++i) deep += R"({"type": "array", "items": )";
         return deep + "{}" + std::string(70, '}') + "}}";
       }(),
       "the schema nests deeper than 64"},
      {[] {  // 1024 strings of different counted lengths: ~2.7 million symbols
         std::string wide = R"({"type": "object", "properties": {)";
         for (int i = 1; i <= 1024; ++i) {
           wide += (i > 1 ? ", " : "") + ("\"p" + std::to_string(i)) +
                   R"(": {"type": "string", "maxLength": )" + std::to_string(i) + "}";
         }
         return wide + "}}";
       }(),
       "the schema is too large to enforce"},
      {R"({"type": "object", "properties": {"a": {"minimum": 1}}})",
       "minimum and maximum need a \"type\": \"integer\" or \"number\""},
      {R"({"type": "object", "properties": {"a": {"type": "number", "maximum": 1e15}}})",
       "maximum must be a number strictly within 1e15"},
      {R"({"type": "object", "properties": {"a": {"type": "number",
          "exclusiveMaximum": 0.30000000000000004}}})",
       "an exclusive bound of a number needs at most 15 significant digits"},
      {R"({"type": "object", "properties": {"a": {"type": "number", "minimum": 0.1234567890123456,
          "maximum": 0.1234567890123457}}})",
       "no number of at most 15 significant digits lies between its bounds"},
      {R"({"type": "object", "properties": {"a": {"type": "number", "minimum": 2.5,
          "exclusiveMaximum": 2.5}}})",
       "no number of at most 15 significant digits lies between its bounds"},
      {R"({"type": "object", "properties": {"a": {"type": "integer", "minimum": 3,
          "exclusiveMaximum": 3}}})",
       "no integer lies between its bounds"},
      {R"({"type": "object", "properties": {"a": {"type": "integer", "minimum": 1e20}}})",
       "minimum must be a number within 1e17"},
      {R"({"type": "object", "properties": {"a": {"type": "string", "minLength": 3,
          "maxLength": 2}}})",
       "maxLength is below minLength"},
      {R"({"type": "object", "properties": {"a": {"type": "string", "format": "date",
          "maxLength": 20}}})",
       "only one of minLength/maxLength, a format and a pattern"},
      {R"({"type": "object", "properties": {"a": {"allOf": [{}, {}]}}})",
       "allOf is supported with one schema only"},
      {R"({"type": "object", "properties": {"a": {"prefixItems": [{}], "minItems": 2}}})",
       "a tuple of its own length"},
      {R"({"type": "object", "properties": {"a": {"pattern": "(?=a)b"}}})",
       "a lookaround or named group"},
      {R"({"type": "object", "properties": {"a": {"pattern": "\\bword"}}})", "a word boundary"},
      {R"({"type": "object", "properties": {"a": {"pattern": "(a)\\1"}}})", "the escape \\1"},
      {R"({"type": "object", "properties": {"a": {"pattern": "[\u00e9]"}}})",
       "a non-ASCII character in a class"},
      {R"({"type": "object", "properties": {"a": {"pattern": "a{2,1}"}}})", "m below n"},
      {R"({"type": "object", "properties": {"a": {"pattern": "*a"}}})", "with nothing before it"},
      {R"({"type": "object", "properties": {"a": {"pattern": "(a"}}})", "an unclosed '('"},
      {R"x({"type": "object", "properties": {"a": {"pattern": "a)"}}})x", "an unmatched ')'"},
      {R"({"type": "object", "properties": {"a": {"pattern": "a$b"}}})", "'$' before the end"},
      {R"({"type": "object", "properties": {"a": {"pattern": "[]"}}})",
       "a class no character matches"},
      {R"({"type": "object", "properties": {"a": {"pattern": "^a", "maxLength": 3}}})",
       "only one of minLength/maxLength, a format and a pattern"},
      // A property that refers to itself before any byte: it could never be written.
      {R"({"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}})",
       "can begin with itself"},
      // An object that requires an object like itself, for ever: no text ends it.
      {R"({"type": "object", "properties": {"next": {"$ref": "#"}}, "required": ["next"]})",
       "matches no text"},
  };
  for (const Refusal& r : refusals) {
    CAPTURE(r.schema);
    try {
      (void)engine::json_schema_grammar(r.schema);
      FAIL("compiled");
    } catch (const Error& e) {
      const std::string what = e.what();
      CAPTURE(what);
      CHECK(what.starts_with("json_schema: "));
      CHECK(what.find(r.says) != std::string::npos);
    }
  }
  // Many properties alike share their counted strings' rules, and 300 optional properties (each
  // may follow any before it) stay within the bound, each compiled in well under a second.
  std::string alike = R"({"type": "object", "properties": {)", optional = alike;
  for (int i = 0; i < 3000; ++i) {
    alike += (i > 0 ? ", " : "") + ("\"p" + std::to_string(i)) +
             R"(": {"type": "string", "maxLength": 1024})";
  }
  for (int i = 0; i < 300; ++i) {
    optional += (i > 0 ? ", " : "") + ("\"p" + std::to_string(i)) + R"(": {"type": "integer"})";
  }
  std::string names;
  for (int i = 0; i < 3000; ++i) names += (i > 0 ? ", " : "") + ("\"p" + std::to_string(i)) + "\"";
  CHECK(engine::json_schema_grammar(alike + "}, \"required\": [" + names + "]}").size() < 100'000);
  CHECK(engine::json_schema_grammar(optional + "}}").size() < engine::kMaxGrammarSymbols);
  // Annotations are read past, and JSON mode's schema compiles.
  CHECK_NOTHROW((void)engine::json_schema_grammar(
      R"({"title": "t", "description": "d", "$schema": "x", "type": "object",
          "properties": {"a": {"type": "string", "default": "q", "examples": ["e"]}}})"));
  CHECK_NOTHROW((void)engine::json_schema_grammar(engine::kJsonObjectSchema));
}

TEST_CASE("engine: a request under a JSON schema writes only replies valid under it") {
  Context ctx(2);
  gpt2::Model model = gpt2::Model::open(testing::hf_fixture_dir("tiny-a"), ctx);
  // Token t reads as a piece of JSON (or of text), whatever it is; 511 is the model's eos. Every
  // byte a key needs is a piece: a token mask cannot look past a token that leads nowhere.
  static const std::vector<std::string> kPieces = {
      "{",    "}",    "[",   "]",      "\"", ":",   ",",        " ",    "a",   "1", "k",
      "true", "null", "\\n", "\"k\":", "x}", "{\"", "\xc3\xa9", "\n  ", "0.5", "-", "s"};
  engine::TokenVocabulary vocabulary{
      [](std::int32_t id) { return kPieces[static_cast<std::size_t>(id) % kPieces.size()]; }, {}};
  engine::Engine engine(model, ctx, engine::EngineOptions{}, vocabulary);
  const std::string text = R"({"type": "object", "properties": {"a": {"type": "integer"},
      "k": {"type": "array", "items": {"type": ["boolean", "null"]}, "maxItems": 3},
      "s": {"type": "string"}},
    "required": ["a", "k"], "additionalProperties": false})";
  const OrderedJson schema = OrderedJson::parse(text);
  std::map<engine::RequestId, std::string> replies;
  std::map<engine::RequestId, engine::FinishReason> reasons;
  for (std::uint64_t seed = 1; seed <= 16; ++seed) {
    engine::Request request;
    request.prompt = {1, 2, 3};
    request.max_tokens = 48;
    request.sampling.temperature = 1.5f;
    request.sampling.seed = seed;
    request.json_schema = text;
    replies[engine.submit(request)];
  }
  engine::Request bad;
  bad.prompt = {1, 2, 3};
  bad.json_schema = R"({"type": "string"})";
  const engine::RequestId refused = engine.submit(bad);
  std::string refusal;
  while (!engine.idle()) {
    for (const engine::Event& e : engine.step().events) {
      if (e.id == refused) {
        CHECK(e.reason == engine::FinishReason::refused);
        refusal = e.error;
        continue;
      }
      if (e.has_token) replies[e.id] += vocabulary.text(e.token);
      if (e.finished) reasons[e.id] = e.reason;
    }
  }
  CHECK(refusal.find("the schema's root must be an object") != std::string::npos);
  int whole = 0;
  for (const auto& entry : replies) {
    const std::string& reply = entry.second;
    CAPTURE(reply);
    if (reasons[entry.first] == engine::FinishReason::stop) {
      CHECK(reference_takes(schema, reply));
      ++whole;
    } else {
      CHECK(reasons[entry.first] == engine::FinishReason::length);
      const engine::Grammar grammar = engine::json_schema_grammar(text);
      GrammarRecognizer recognizer(grammar);
      CHECK(recognizer.accept(reply));
    }
  }
  CHECK(whole >= 4);
}
