// The normalizer of a tokenizer.json: rewrites the text between added tokens before it is
// pre-tokenized. SentencePiece models converted by transformers (Llama 2, TinyLlama, Mistral)
// use it to write spaces as "▁" and to start each stretch of text with one. Supported, as the
// `tokenizers` library runs them:
//   Prepend   {prepend}: the string before the text, unless the text is empty.
//   Replace   {pattern: {String}, content}: each occurrence, left to right, by content.
//   Sequence  of these, in order.
// Unicode normalizations (NFC, NFKC, ...), Lowercase, Strip and Regex patterns are refused with
// one line naming them. Cost: O(n) per step for n bytes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::tokenizer {

// `text` with each occurrence of `pattern` (not empty), left to right, replaced by `content`: the
// Replace step of normalizers and decoders. O(n).
std::string replace_all(std::string_view text, std::string_view pattern, std::string_view content);

class Normalizer {
 public:
  // `spec` is tokenizer.json's "normalizer" (null: the text is left as it is); `where` names the
  // file in messages.
  Normalizer(const nlohmann::json& spec, const std::string& where);

  std::string normalize(std::string_view text) const;

 private:
  struct Step {
    std::string prepend;  // Prepend when `pattern` is empty
    std::string pattern;  // Replace: this string ...
    std::string content;  // ... by this one
  };
  void add_steps(const nlohmann::json& spec, const std::string& where);

  std::vector<Step> steps_;
};

}  // namespace attnscope::tokenizer
