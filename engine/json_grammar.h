// json_schema_grammar: a JSON schema compiled into the Grammar of the replies it admits, so that
// a recognizer (grammar_recognizer.h) masking the sampler makes the model write one JSON document
// valid under the schema: OpenAI's structured outputs (response_format json_schema) and, with
// the schema {"type": "object"}, JSON mode.
//
// What a reply may be: one JSON object or array (the schema's root must be one: an object as in
// OpenAI's structured outputs, an array for serve's forced tool calls), so that a reply ends
// with its closing bracket and nothing may follow it; in RFC 8259's syntax (escapes, surrogate
// pairs, well-formed UTF-8, numbers), with the whitespace between two tokens (a gap) nothing,
// one space, or one line break ("\n" or "\r\n") and at most kMaxIndent spaces or tabs, as
// compact and pretty-printed JSON write it (llama.cpp's JSON grammar has the same rule), so
// that a model cannot fill its budget with emptiness.
// The schema keywords enforced:
//   type (one or a list), enum, const, anyOf, oneOf (as anyOf: a reply may match several),
//   allOf of one schema (pydantic's reference with a description), $ref within the schema (#,
//   #/$defs/..., #/definitions/...; recursion allowed);
//   objects: properties, written in the schema's order, each in `required` always, the others
//   maybe; additionalProperties (no property beyond `properties` is written; with no
//   `properties`, any keys, their values under additionalProperties when it is a schema);
//   arrays: items, minItems, maxItems (up to kMaxCountedItems); prefixItems, written as a tuple
//   of its own length (as pydantic writes a Tuple);
//   strings: minLength, maxLength (code points, up to kMaxCountedItems), format date, time,
//   date-time (RFC 3339; February 29th in any year) and uuid (any other format is an
//   annotation, as in JSON Schema's default vocabulary), pattern (pattern_grammar.h's subset
//   of ECMA-262), one of the three;
//   integers and numbers: minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers, or
//   draft 4's booleans), written digit by digit (number_grammar.h), numbers as plain decimals
//   of at most 15 significant digits.
// A schema nests at most kMaxSchemaNesting schemas inside one another, and its grammar holds at
// most kMaxGrammarSymbols symbols (a bounded compile, whatever a request sends).
// A value the schema leaves free (true, {}, an object's free values) is any JSON value with at
// most kMaxDepth containers open inside it. Annotations (title, description, default, ...) are
// ignored; any other keyword (multipleOf, not, if, ...) is refused
// rather than silently not enforced.
// Cost: a few rules per schema node; a free value's rules once per depth; a counted string or
// array one rule per count; bounds O(digits^2) alternatives.
#pragma once

#include <cstddef>
#include <string_view>

#include "engine/grammar.h"

namespace attnscope::engine {

inline constexpr int kMaxDepth = 32;
inline constexpr int kMaxIndent = 20;
inline constexpr int kMaxCountedItems = 1024;
inline constexpr int kMaxSchemaNesting = 64;  // schemas inside schemas (compiled recursively)
inline constexpr std::size_t kMaxGrammarSymbols = 1 << 20;  // 8 MiB of grammar

// JSON mode's schema: any JSON object.
inline constexpr std::string_view kJsonObjectSchema = R"({"type": "object"})";

// The grammar of the replies `schema` (JSON text) admits. Throws Error saying what is wrong with
// it or what it asks that is not enforced.
Grammar json_schema_grammar(std::string_view schema);

}  // namespace attnscope::engine
