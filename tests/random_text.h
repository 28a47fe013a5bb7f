// Random text for the tokenizer suites' round-trip tests (tests/test_tokenizer.cpp,
// tests/test_tokenizer_json.cpp): code points drawn from ranges picked uniformly, sometimes a
// special token.
#pragma once

#include <cstddef>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <utility>

#include "models/tokenizer/utf8.h"

namespace attnscope::testing {

// The code points [first, second] that random_text draws one from.
using CodePointRange = std::pair<char32_t, char32_t>;

// `length` pieces of text, each a code point drawn uniformly from one of `ranges`, or, with the
// chance of one more range, the text `special()` returns. A surrogate half is replaced by 'x'.
inline std::string random_text(std::mt19937& rng, std::size_t length,
                               std::span<const CodePointRange> ranges,
                               const std::function<std::string()>& special) {
  std::uniform_int_distribution<std::size_t> pick_range(0, ranges.size());
  std::string text;
  for (std::size_t i = 0; i < length; ++i) {
    const std::size_t range = pick_range(rng);
    if (range == ranges.size()) {
      text += special();
      continue;
    }
    char32_t value =
        std::uniform_int_distribution<char32_t>(ranges[range].first, ranges[range].second)(rng);
    if (value >= 0xD800 && value <= 0xDFFF) value = 'x';
    text += tokenizer::encode_utf8(value);
  }
  return text;
}

}  // namespace attnscope::testing
