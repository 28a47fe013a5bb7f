// The decoder of a tokenizer.json: token ids back to text. attnscope keeps each token's bytes as
// they continue a text (so a stream of tokens can be printed as it comes) and applies what acts
// on the whole text once, at the end. Supported, as the `tokenizers` library runs them:
//   ByteLevel  a token written in the byte alphabet gives the bytes it stands for; any other
//              token (e.g. an added "<mask>") its own UTF-8.
//   Sequence   LlamaConverter's (Llama 2, TinyLlama, Mistral: Replace, ByteFallback, Fuse,
//              Strip) and the GGUF converter's (ByteFallback, Fuse, Replace, Strip) of:
//                Replace      {pattern: {String}, content} in each token ("▁" -> " "),
//                ByteFallback a token "<0xHH>" gives byte HH,
//                Fuse         the tokens joined,
//                Strip        {content, start, stop}, last: up to `start` of the character
//                             `content` off the start of the joined text, `stop` off its end.
// Two differences, by design: bytes that are not valid UTF-8 stay as they are, where the library
// writes U+FFFD for each (ByteFallback) or for each bad sequence (ByteLevel), and printing the
// bytes as UTF-8 text (serve, Python) replaces them the same way; a Replace after ByteFallback
// still acts on each token, so a pattern spelled by byte tokens ("▁" as <0xE2><0x96><0x81>)
// stays, where the library would replace it in the joined text.
// Anything else is refused with one line naming it. Cost: O(bytes) per token and per text.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::tokenizer {

class Decoder {
 public:
  // `spec` is tokenizer.json's "decoder"; `where` names the file in messages.
  Decoder(const nlohmann::json& spec, const std::string& where);

  // Whether this is the ByteLevel decoder (tokens written in the byte alphabet).
  bool byte_level() const { return byte_level_; }
  // The bytes one token, written `content` in the vocabulary, adds to a text.
  std::string token_bytes(std::string_view content) const;
  // What the decoder does to the joined text: the Strip steps.
  void finish(std::string& text) const;

 private:
  struct Replace {
    std::string pattern;
    std::string content;
  };
  struct Strip {
    std::string character;
    std::size_t start;
    std::size_t stop;
  };
  void add_step(const nlohmann::json& spec, const std::string& where);

  bool byte_level_ = false;
  std::vector<Replace> replaces_;
  bool byte_fallback_ = false;
  bool fused_ = false;
  std::vector<Strip> strips_;
};

}  // namespace attnscope::tokenizer
