// The syntax tree of a chat template: the subset of Jinja2 that Hugging Face chat templates are
// written in, as transformers compiles them (jinja2 with trim_blocks, lstrip_blocks and the loop
// controls; models/tokenizer/jinja.h renders the tree).
//
// Statements: text, {{ expression }}, {% if %} / {% elif %} / {% else %} / {% endif %},
// {% for x in xs [if condition] %} (also `for a, b in`, and {% else %} for an empty loop),
// {% set name = value %}, {% set namespace.attribute = value %} and {% set name %} text
// {% endset %} (the block's text), {% break %}, {% continue %},
// {% macro name(a, b = default) %} ... {% endmacro %} (called as a function once its definition
// has run, from anywhere, itself included), {% generation %} (transformers' marker around an
// assistant's text: rendered as its body) and {# comments #}. Expressions: literals (strings,
// integers, floats, true/false/none, lists, dicts), names, `a.b`, `a[i]`, `a[i:j:k]`, calls,
// filters `a | f(args)`, tests `a is [not] t`, `not`, `and`, `or`, comparisons, `in` / `not in`, +
// - * / // % ~, unary minus and `x if condition else y`. Any other statement ({% call %}, {% raw
// %}, {% include %},
// ...) is refused by parse_template with the line it is on. Names are looked up as jinja2 looks
// them up, when they are rendered: a filter, test, method or function jinja.h does not implement is
// refused by the render that reaches it (a template's tool-calling branch may use one that a plain
// conversation never runs). Whitespace as transformers' jinja2 environment treats it: `-` inside a
// delimiter strips the whitespace on that side, a block or comment tag alone on its line takes the
// line's indentation with it (lstrip_blocks, unless `{%+`) and the newline right after it
// (trim_blocks, unless `+%}`).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attnscope::tokenizer::jinja {

// Template values: JSON in the order its keys were written (Python dicts keep it, and tojson
// shows it), with `discarded` standing for jinja2's Undefined.
using Value = nlohmann::ordered_json;

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    literal,      // value
    name,         // name
    list,         // operands: the elements
    dict,         // operands: key, value, key, value, ...
    attribute,    // operands[0] . name
    subscript,    // operands[0] [ operands[1] ]
    slice,        // operands[0] [ operands[1] : operands[2] : operands[3] ] (null: left out)
    call,         // name ( operands, keywords ): a global function
    method,       // operands[0] . name ( operands[1..], keywords )
    filter,       // operands[0] | name ( operands[1..], keywords )
    test,         // operands[0] is [not] name ( operands[1..] )
    unary,        // name ("not", "-") operands[0]
    binary,       // operands[0] name operands[1] ("and", "or", "==", "in", "not in", "+", "~", ...)
    conditional,  // operands[1] if operands[0] else operands[2] (null: undefined)
  };
  Kind kind;
  int line = 0;
  Value value;
  std::string name;
  std::vector<ExprPtr> operands;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  bool negated = false;  // `is not`
};

struct Node;
using Body = std::vector<Node>;

struct Node {
  enum class Kind { text, output, if_, for_, set, macro, break_, continue_ };
  Node(Kind node_kind, int node_line) : kind(node_kind), line(node_line) {}
  Kind kind;
  int line;
  std::string text;  // text
  ExprPtr expr;      // output: what to print; set: the value; for_: what to iterate
  // if_: (condition, body) in order; a null condition is the else.
  std::vector<std::pair<ExprPtr, Body>> branches;
  // for_: the loop variables, the optional filter, the body and the else body (run when nothing
  // was iterated).
  std::vector<std::string> targets;
  ExprPtr condition;
  Body body, else_body;
  // set: the variable, the namespace attribute when `set ns.attribute = ...`, and for a block
  // set no expr but a body; macro: its
  // name (target), its parameters with their defaults (null: none) and its body.
  std::string target, attribute;
  std::vector<std::pair<std::string, ExprPtr>> parameters;
};

// Throws Error("chat template: line N: what"): how the parser and the renderer (jinja.cpp)
// report a template's errors.
[[noreturn]] void template_error(int line, const std::string& what);

// Parses a template; throws Error("chat template: line N: ...") on what it cannot parse or does
// not support.
Body parse_template(std::string_view source);

}  // namespace attnscope::tokenizer::jinja
