// Cuts valid UTF-8 text into pieces with a regex, the way the `tokenizers` library's Split
// pre-tokenizer does with behavior "Isolated": each match is a piece, and so is each stretch of
// text between matches. Compiled once with PCRE2 (JIT when available); O(n) per text of n bytes
// for the pre-tokenizer patterns in use.
//
// The reference implementations match with Python's `regex` module (GPT-2) or Oniguruma
// (`tokenizers`), where \s is the Unicode White_Space property; PCRE2's \s also matches U+180E.
// So the pattern's \s and \S are rewritten to \p{White_Space} and \P{White_Space} before
// compiling.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::tokenizer {

// GPT-2's pre-tokenizer: contractions, words and numbers with their leading space, symbol runs,
// whitespace. The `tokenizers` library's ByteLevel pre-tokenizer uses the same pattern.
constexpr std::string_view kGpt2SplitPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class RegexSplitter {
 public:
  // Throws Error (naming `where`) when the pattern does not compile.
  RegexSplitter(std::string_view pattern, const std::string& where);
  RegexSplitter(RegexSplitter&&) noexcept;
  RegexSplitter& operator=(RegexSplitter&&) noexcept;
  ~RegexSplitter();

  // Appends the pieces of `text` (valid UTF-8) to `pieces`, in order; together they are `text`.
  // Thread-safe.
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace attnscope::tokenizer
