// jinja::Template: a chat template parsed once (jinja_syntax.h: the subset of Jinja2 that Hugging
// Face chat templates are written in) and rendered over JSON values, as transformers renders it.
//
// The values a template sees behave as Python's do under jinja2: truthiness, == across int and
// float, `+` on strings and lists, `//` and `%` rounding toward minus infinity, negative indexes
// and slices (over a string's code points), printing (None, True, 1.0, ['a'] as Python prints
// them), an undefined name or key that prints as nothing but fails when read further. Besides
// jinja2's own, the globals transformers adds: raise_exception(message), strftime_now(format)
// (local time), namespace(...) and dict(...), and its tojson (json.dumps: ", " and ": ",
// non-ASCII text kept). Filters: trim, length (count), tojson, upper, lower, capitalize, title,
// default (d), first, last, join, string, int, float, list, items, reverse, replace, safe, abs,
// map, select, reject, selectattr, rejectattr, dictsort, sort (stable; strings compared
// lowercased unless case_sensitive), min, max, indent. Tests: defined, undefined, none, string,
// number, integer, float, boolean, mapping, sequence, iterable, true, false, odd, even,
// divisibleby, equalto (eq, ==), ne (!=), in. Methods: strings' strip, lstrip, rstrip, split,
// startswith, endswith, upper, lower, title, capitalize, replace, join, format ({}, {0}, {name});
// dicts' items, keys, values, get. Any other name is refused by the render that reaches it. Case
// mapping is ASCII only, and a tuple is a list (it prints as [1, 2], not (1, 2)). jinja_values.h
// holds the Python semantics; jinja.cpp the interpreter.
//
// Rendering always ends, and soon: loops run over finite values, and the steps
// (kMaxRenderSteps), the nesting (kMaxRenderDepth: a macro calling itself forever stops there),
// the output, ranges and repeated strings (kMaxRenderBytes) are capped. Errors
// (raise_exception, a type error, an undefined value read further) throw Error("chat template: line
// N: ...").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "models/tokenizer/jinja_syntax.h"

namespace attnscope::tokenizer::jinja {

// The most bytes a render may produce (and a string or range it may build).
inline constexpr std::size_t kMaxRenderBytes = std::size_t{16} << 20;
// The most statements and expressions a render may be inside at once (the parser allows 256
// levels of each in a template; macros calling macros add theirs up).
inline constexpr int kMaxRenderDepth = 1024;
// The most statements and loop iterations a render may run: a chat of a thousand messages takes
// under 100,000; nested loops over long ranges that print nothing would otherwise run for hours.
inline constexpr std::int64_t kMaxRenderSteps = 1'000'000;

class Template {
 public:
  // Parses `source`; throws Error on a syntax error or an unsupported statement.
  explicit Template(std::string_view source) : body_(parse_template(source)) {}

  // The text, with `variables` (a JSON object) as the template's global names.
  std::string render(const Value& variables) const;

 private:
  Body body_;
};

}  // namespace attnscope::tokenizer::jinja
