// UTF-8 by the strict rules that PCRE2 also checks: no overlong forms, no surrogates, nothing
// above U+10FFFF.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::tokenizer {

// One code point read from UTF-8; length 0 when the bytes there are not a valid sequence.
struct CodePoint {
  char32_t value;
  std::size_t length;
};

// Reads the UTF-8 sequence at text[pos] (pos < text.size()).
CodePoint decode_utf8(std::string_view text, std::size_t pos);

// The UTF-8 bytes of a code point (value <= U+10FFFF, not a surrogate).
std::string encode_utf8(char32_t value);

// A stretch of text: a maximal run of valid UTF-8, or one byte that is not valid UTF-8 there.
struct Utf8Run {
  std::string_view text;
  bool valid;
};

// `text` cut into such runs, in order (empty text gives none). O(n).
std::vector<Utf8Run> utf8_runs(std::string_view text);

// "U+4E2D": a code point as messages name it.
std::string code_point_name(char32_t value);

}  // namespace attnscope::tokenizer
