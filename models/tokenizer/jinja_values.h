// Python's view of a chat template's values, as jinja2 (a Python library) gives it: the template
// interpreter (jinja.h) asks these how a value prints, whether it is true, how strings strip,
// split and change case, and how tojson writes it (json.dumps).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/tokenizer/jinja_syntax.h"

namespace attnscope::tokenizer::jinja {

// jinja2's Undefined: what a missing name, key or index gives.
inline const Value kUndefined(Value::value_t::discarded);  // not braces: a list
// What a global function's name (strftime_now, ...) is as a value: defined and truthy, as a
// function is in jinja2; only calling it does anything.
inline const Value kGlobalFunction = "<built-in function>";
// A namespace(...) is an object holding its attributes under this key, so that `set ns.a = 1`
// can tell it from a dict (jinja2 refuses to assign to a dict's attributes).
inline constexpr std::string_view kNamespaceKey = "\x01namespace";

bool is_namespace(const Value& v);
// "str", "int", "list", "dict", "undefined", ...: a value's type as messages name it.
std::string type_name(const Value& v);

// Python's truthiness: none, false, 0, "", [], {} and undefined are false.
bool truthy(const Value& v);
bool is_int(const Value& v);
bool is_number(const Value& v);  // an int, a float or a bool (Python's bool is an int)
double as_double(const Value& v);
std::int64_t as_int(const Value& v);

// Python's repr of a float: the shortest digits that read back, positional from 1e-4 to 1e16.
std::string python_float(double x);
// Python's str(): what {{ }} prints (None, True, 1.0, ['a', 1], {'k': 2}; undefined: nothing).
std::string python_str(const Value& v);
// Python's repr(): a string quoted as Python quotes it.
std::string python_repr(const Value& v);
// json.dumps' options, as transformers' tojson passes them.
struct JsonStyle {
  std::optional<std::string> indent;  // what each level indents by (none: all on one line)
  // (between items, between a key and its value); by default ", " and ": ", or "," and ": "
  // with an indent.
  std::optional<std::pair<std::string, std::string>> separators;
  bool sort_keys = false;
  bool ensure_ascii = false;                // past '~' as \uXXXX (a surrogate pair past U+FFFF)
  std::size_t max_bytes = std::size_t(-1);  // longer text is refused while it is written
};
// Python's json.dumps(value, ...): what tojson prints. Throws Error("chat template: tojson ...")
// for an undefined value, a namespace, or text past style.max_bytes.
std::string python_json(const Value& value, const JsonStyle& style = {});

// A string's code points (Python indexes strings by them), as the byte offsets where each
// starts, plus the end.
std::vector<std::size_t> code_point_starts(const std::string& s);
// str.strip, lstrip or rstrip: of Unicode whitespace, or of the code points in `chars`.
std::string strip(const std::string& s, bool left, bool right,
                  const std::optional<std::string>& chars);
enum class Case { lower, upper, capitalize, title };
// str.lower, upper, capitalize or title, on ASCII letters only.
std::string ascii_case(std::string s, Case mode);
// str.replace(from, to, count) (count < 0: every one).
std::string replace_all(const std::string& s, const std::string& from, const std::string& to,
                        std::int64_t count);
// str.split(separator, max_splits): null separator splits on runs of whitespace.
Value split(const std::string& s, const Value& separator, std::int64_t max_splits);
// str.splitlines(): the lines, without their ends (\n, \r\n, \r, \v, \f, \x1c-\x1e, U+0085,
// U+2028, U+2029); a last line end starts no empty line.
std::vector<std::string> split_lines(const std::string& s);
// Python's a // b for ints: the quotient rounded toward minus infinity (b != 0).
std::int64_t floor_div(std::int64_t a, std::int64_t b);

}  // namespace attnscope::tokenizer::jinja
