// TextTokenizer: the tokenizer of whichever model a subcommand runs. GPT-2 checkpoints carry
// vocab.json + merges.txt (gpt2::Tokenizer); Llama-family checkpoints carry a Hugging Face
// tokenizer.json (tokenizer::TokenizerJson). The tools only encode a prompt or a file, decode
// ids and show one token's bytes, so both hide behind these few calls.
//
// Ids a model generates may name no token: a checkpoint's vocabulary can be padded past its
// tokenizer's (Qwen2's 151,936 rows for 151,665 tokens), and a synthetic model may be paired with
// any tokenizer. The output_ calls print those as nothing, as transformers' decode() skips them;
// decode() and token_bytes(), for ids a user gives, refuse them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/token_vocabulary.h"
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
  bool has_token(std::int32_t id) const {
    if (const auto* gpt2 = std::get_if<gpt2::Tokenizer>(&impl_)) {
      return id >= 0 && static_cast<std::size_t>(id) < gpt2->vocab_size();
    }
    return std::get<tokenizer::TokenizerJson>(impl_).has_token(id);
  }
  // Whether `id` is a control token: GPT-2's <|endoftext|>, a tokenizer.json's special tokens.
  bool is_special(std::int32_t id) const {
    if (const auto* gpt2 = std::get_if<gpt2::Tokenizer>(&impl_)) return id == gpt2->eot_id();
    return std::get<tokenizer::TokenizerJson>(impl_).is_special(id);
  }
  // The bytes of a generated token; none when it names no token.
  std::string output_bytes(std::int32_t id) const {
    return has_token(id) ? token_bytes(id) : std::string();
  }
  // The text of generated ids, leaving out those that name no token.
  std::string decode_output(std::span<const std::int32_t> ids) const {
    std::vector<std::int32_t> known;
    for (const std::int32_t id : ids) {
      if (has_token(id)) known.push_back(id);
    }
    return decode(known);
  }
  // The vocabulary as an engine reads it (stop strings, JSON mode). This tokenizer must outlive
  // the engine.
  engine::TokenVocabulary vocabulary() const {
    return {[this](std::int32_t id) { return output_bytes(id); },
            [this](std::int32_t id) { return is_special(id); }};
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
