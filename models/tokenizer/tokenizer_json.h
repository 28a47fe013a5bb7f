// A Hugging Face tokenizer.json byte-level BPE tokenizer (GPT-2, SmolLM2, Qwen2 and Llama 3
// style): text <-> token ids exactly as the `tokenizers` library (and so transformers) does it.
//
// Supported, and refused with one line when a file asks for anything else:
//   model           BPE: vocab, merges ("a b" strings or [a, b] pairs), ignore_merges; no
//                   dropout, no byte_fallback, no subword prefix or suffix; a token for each byte.
//   added_tokens    id, content, special, single_word, lstrip, rstrip, normalized.
//   normalizer      null only (Qwen2's NFC is refused: attnscope implements no Unicode
//                   normalization).
//   pre_tokenizer   ByteLevel last, after Split / Digits in a Sequence (pre_tokenizer.h).
//   post_processor  null, ByteLevel, TemplateProcessing (its single template), Sequence of these.
//   decoder         ByteLevel.
//
// encode(): added tokens are found first (added_tokens.h: those with normalized false, then the
// rest in the text between them), the text between them is pre-tokenized, and each piece becomes
// one token when ignore_merges is set and the piece is in the vocabulary, else goes through BPE
// (byte_pair_encoder.h, in the `tokenizers` library's merge order). Bytes that are not valid
// UTF-8 (which Python's str cannot hold) become their own byte tokens, so every byte string
// round-trips. O(n) plus O(m log m) of BPE per new piece of m bytes.
// decode(): concatenates each token's bytes: a token written in the byte alphabet gives the bytes
// it stands for, any other (e.g. an added "<mask>" with a space) its own UTF-8, as the ByteLevel
// decoder does. O(bytes out).
//
// Immutable once loaded apart from its piece cache, which is guarded: encode() and decode() may be
// called on one const TokenizerJson from many threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::tokenizer {

class TokenizerJson {
 public:
  // Loads `path`: a tokenizer.json file, or a folder holding one. Throws Error naming the file
  // and what is wrong or unsupported.
  static TokenizerJson load(const std::string& path);
  // True when `dir` holds a tokenizer.json.
  static bool present_in(const std::string& dir);

  TokenizerJson(TokenizerJson&&) noexcept;
  TokenizerJson& operator=(TokenizerJson&&) noexcept;
  ~TokenizerJson();

  // The ids of `text`. With add_special_tokens, the post-processor's tokens are added around
  // them (Llama 3's <|begin_of_text|> before), as transformers' encode() does by default.
  std::vector<std::int32_t> encode(std::string_view text, bool add_special_tokens) const;
  // Throws Error for an id that names no token.
  std::string decode(std::span<const std::int32_t> ids) const;
  // The bytes of one token (may be a partial UTF-8 sequence). Throws Error for an id that names
  // no token.
  const std::string& token_bytes(std::int32_t id) const;
  // The id of an added token or vocabulary entry written as `content` (e.g. "<|eot_id|>").
  std::optional<std::int32_t> token_id(std::string_view content) const;
  // One past the largest id.
  std::size_t vocab_size() const;

 private:
  struct Impl;
  explicit TokenizerJson(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace attnscope::tokenizer
