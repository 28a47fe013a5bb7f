// TextTokenizer: the tokenizer of whichever model a subcommand runs. GPT-2 checkpoints carry
// vocab.json + merges.txt (gpt2::Tokenizer); Llama-family checkpoints carry a Hugging Face
// tokenizer.json (tokenizer::TokenizerJson). The tools only encode a prompt or a file, decode
// ids and show one token's bytes, so both hide behind these four calls.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "models/gpt2/tokenizer.h"
#include "models/tokenizer/tokenizer_json.h"

namespace attnscope::cli {

class TextTokenizer {
 public:
  explicit TextTokenizer(gpt2::Tokenizer tokenizer) : impl_(std::move(tokenizer)) {}
  explicit TextTokenizer(tokenizer::TokenizerJson tokenizer) : impl_(std::move(tokenizer)) {}

  // The ids of `text`; a tokenizer.json adds its post-processor's special tokens (Llama 3's
  // <|begin_of_text|>), as transformers' encode() does by default, unless told not to (a chat
  // template's text holds them already).
  std::vector<std::int32_t> encode(std::string_view text, bool add_special_tokens = true) const {
    if (const auto* gpt2 = std::get_if<gpt2::Tokenizer>(&impl_)) return gpt2->encode(text);
    return std::get<tokenizer::TokenizerJson>(impl_).encode(text, add_special_tokens);
  }
  std::string decode(std::span<const std::int32_t> ids) const {
    return std::visit([&](const auto& t) { return t.decode(ids); }, impl_);
  }
  const std::string& token_bytes(std::int32_t id) const {
    return std::visit([&](const auto& t) -> const std::string& { return t.token_bytes(id); },
                      impl_);
  }
  // Whether this is GPT-2's vocab.json + merges.txt kind (not a tokenizer.json).
  bool is_gpt2_files() const { return std::holds_alternative<gpt2::Tokenizer>(impl_); }
  std::size_t vocab_size() const {
    return std::visit([](const auto& t) { return static_cast<std::size_t>(t.vocab_size()); },
                      impl_);
  }

 private:
  std::variant<gpt2::Tokenizer, tokenizer::TokenizerJson> impl_;
};

}  // namespace attnscope::cli
