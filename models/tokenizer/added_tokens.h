// The added tokens of a tokenizer.json (special tokens such as "<|begin_of_text|>", and others):
// found in the text before pre-tokenization, as the `tokenizers` library does, and never split.
//
// Matching is leftmost-longest: at the first position where any token's content starts, the
// longest content there wins; the search goes on after it. A token's options:
//   single_word  only where neither neighbouring character is a word character (Rust's \w)
//   lstrip       the whitespace before it joins the token (not past the previous match)
//   rstrip       the whitespace after it joins the token
// Cost: O(n * k) byte comparisons for n bytes and the k tokens sharing a first byte.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::tokenizer {

struct AddedToken {
  std::int32_t id;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
};

// A stretch of text, or one added token (token_id >= 0) and the text it covers.
struct Segment {
  std::string_view text;
  std::int32_t token_id;  // -1: ordinary text
};

class AddedTokenMatcher {
 public:
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  // Appends the segments of `text` to `segments`, in order; together they cover `text`.
  void split(std::string_view text, std::vector<Segment>& segments) const;

 private:
  std::vector<AddedToken> tokens_;
  // first byte -> indices into tokens_, longest content first
  std::array<std::vector<std::size_t>, 256> tokens_by_first_byte_;
};

}  // namespace attnscope::tokenizer
