// add_pattern_rules: a JSON schema's `pattern` (an ECMA-262 regular expression) as grammar rules
// of the contents of the JSON strings it matches (between the quotes, escapes written as JSON
// writes them: a '"' as \", a newline as \n), for json_grammar.h.
//
// The subset read: literals (any character; a metacharacter escaped), '.', classes [...] and
// [^...] of ASCII characters and ranges, the escapes \d \D \w \W \s \S \t \n \r \f \v \xHH
// \uHHHH (ASCII), groups (...) and (?:...), alternatives |, the quantifiers ? * + {n} {n,}
// {n,m} (up to 1024; a lazy one as its greedy self), ^ at the start and $ at the end of a
// top-level alternative. As JSON Schema has it, a pattern matches anywhere in the string: a side
// without its anchor takes any characters. What the subset leaves out (lookarounds, word
// boundaries, back references, anchors inside groups, non-ASCII in classes) is refused.
// The grammar writes a part of what matches, so that every string it writes does: '.', a negated
// class and the unanchored sides write ASCII characters only (ECMA's . excludes U+2028, \S
// excludes U+00A0...; ASCII needs no such care).
// Cost: O(pattern) rules; a counted quantifier one reference per count.
#pragma once

#include <string_view>

#include "engine/grammar.h"

namespace attnscope::engine {

// Adds to `grammar` the rules of the string contents `pattern` matches and returns the first.
// Throws Error("json_schema", ...) saying what in the pattern is outside the subset.
Grammar::Rule add_pattern_rules(Grammar& grammar, std::string_view pattern);

}  // namespace attnscope::engine
