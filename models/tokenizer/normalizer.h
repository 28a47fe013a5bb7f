// The normalizer of a tokenizer.json: rewrites the text between added tokens before it is
// pre-tokenized. SentencePiece models converted by transformers (Llama 2, TinyLlama, Mistral)
// use it to write spaces as "▁" and to start each stretch of text with one; Qwen2 puts its text
// in Unicode's NFC, so that "é" typed as e + U+0301 encodes as the precomposed "é" does.
// Supported, as the `tokenizers` library runs them:
//   Prepend   {prepend}: the string before the text, unless the text is empty.
//   Replace   {pattern: {String}, content}: each occurrence, left to right, by content.
//   NFC, NFD, NFKC, NFKD  the Unicode normalization forms (UAX #15): canonical (NF*D) or
//             compatibility (NFK*D) decomposition, marks put in canonical order, then for NF*C
//             canonical composition (unicode_normalize below).
//   Sequence  of these, in order.
// Lowercase, Strip, BertNormalizer and Regex patterns are refused with one line naming them.
// Cost: O(n) per step for n bytes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::tokenizer {

// `text` with each occurrence of `pattern` (not empty), left to right, replaced by `content`: the
// Replace step of normalizers and decoders. O(n).
std::string replace_all(std::string_view text, std::string_view pattern, std::string_view content);

enum class UnicodeForm { NFC, NFD, NFKC, NFKD };

// `text` in the normalization form `form`, by utf8proc's tables (Unicode 15; the `tokenizers`
// library's are older, which matters only for characters assigned since). Bytes that are not
// valid UTF-8 stay as they are, and each run of valid UTF-8 between them is normalized on its own
// (the library only ever sees valid text). O(n).
std::string unicode_normalize(std::string_view text, UnicodeForm form);

class Normalizer {
 public:
  // `spec` is tokenizer.json's "normalizer" (null: the text is left as it is); `where` names the
  // file in messages.
  Normalizer(const nlohmann::json& spec, const std::string& where);

  std::string normalize(std::string_view text) const;

 private:
  struct Step {
    enum class Kind { prepend, replace, unicode };
    Kind kind;
    std::string text;                     // prepend: the string put first; replace: the pattern ...
    std::string content;                  // ... and what replaces it
    UnicodeForm form = UnicodeForm::NFC;  // unicode
  };
  void add_steps(const nlohmann::json& spec, const std::string& where);

  std::vector<Step> steps_;
};

}  // namespace attnscope::tokenizer
