// A set of code points given as a PCRE2 character class, e.g. "[\p{White_Space}]": the
// `tokenizers` library's added tokens test single characters against Rust's \s and \w.
// contains() costs one anchored match of one character.
#pragma once

#include <memory>
#include <string_view>

namespace attnscope::tokenizer {

class CharacterClass {
 public:
  explicit CharacterClass(std::string_view pattern);
  CharacterClass(CharacterClass&&) noexcept;
  CharacterClass& operator=(CharacterClass&&) noexcept;
  ~CharacterClass();

  bool contains(char32_t value) const;
  // Whether the last code point of `text` is in the class (false for empty or invalid UTF-8).
  bool contains_last_of(std::string_view text) const;
  // The byte length of the longest prefix / suffix of `text` made of code points in the class.
  std::size_t prefix_length(std::string_view text) const;
  std::size_t suffix_length(std::string_view text) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

// Rust's regex \s: the Unicode White_Space property.
const CharacterClass& white_space();
// Rust's regex \w: Alphabetic, marks, decimal digits, connector punctuation, Join_Control.
const CharacterClass& word_character();

}  // namespace attnscope::tokenizer
