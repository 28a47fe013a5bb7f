// The first symbols of byte-pair encoding: how a piece of text becomes the tokens that merges then
// join. Two alphabets, as the `tokenizers` library's BPE model sees them:
//   bytes       one token per byte (byte-level BPE: GPT-2, Llama 3, Qwen2; the ByteLevel
//               pre-tokenizer has written every byte as a character of its own alphabet).
//   characters  one token per UTF-8 character in the vocabulary (SentencePiece BPE: Llama 2,
//               TinyLlama, Mistral). A character outside it becomes its bytes' "<0xHH>" tokens
//               when the model has byte_fallback; otherwise the unknown token (a run of such
//               characters one unknown token with fuse_unk), or nothing when the model has
//               none. A byte that is not valid UTF-8 counts as such a character of its own.
// Cost: O(n) for n bytes (one hash lookup per character).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attnscope::tokenizer {

class SymbolAlphabet {
 public:
  // byte_token[b]: the id of the one-byte token of byte b.
  static SymbolAlphabet bytes(const std::array<std::int32_t, 256>& byte_token);

  struct Characters {
    std::unordered_map<std::string, std::int32_t> token_of_character;  // single characters only
    std::optional<std::array<std::int32_t, 256>> fallback_token;       // "<0xHH>" of each byte
    std::optional<std::int32_t> unknown_token;
    bool fuse_unknown = false;
  };
  static SymbolAlphabet characters(Characters characters);

  // Appends the first symbols of `piece` to `symbols`.
  void split(std::string_view piece, std::vector<std::int32_t>& symbols) const;

 private:
  std::optional<std::array<std::int32_t, 256>> byte_token_;  // set: the bytes alphabet
  Characters characters_;
};

}  // namespace attnscope::tokenizer
