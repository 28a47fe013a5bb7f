// A Hugging Face tokenizer.json BPE tokenizer: text <-> token ids exactly as the `tokenizers`
// library (and so transformers) does it. Two kinds of file:
//   byte-level BPE   GPT-2, SmolLM2, Qwen2, Llama 3: the ByteLevel pre-tokenizer and decoder,
//                    BPE over bytes (a token for each byte).
//   SentencePiece    Llama 2, TinyLlama, Mistral (transformers' LlamaConverter): spaces written
//                    "▁" by the normalizer or a Metaspace pre-tokenizer, BPE over characters with
//                    byte_fallback ("<0xHH>" tokens) or unk_token, a Replace / ByteFallback /
//                    Fuse / Strip decoder.
//
// Supported, and refused with one line when a file asks for anything else:
//   model           BPE: vocab, merges ("a b" strings or [a, b] pairs), ignore_merges,
//                   byte_fallback, unk_token, fuse_unk (symbol_alphabet.h); no dropout, no
//                   subword prefix or suffix.
//   added_tokens    id, content, special, single_word, lstrip, rstrip, normalized.
//   normalizer      null, Prepend, Replace, NFC, NFD, NFKC, NFKD, Sequence (normalizer.h).
//   pre_tokenizer   null, ByteLevel last after Split / Digits, Metaspace (pre_tokenizer.h).
//   post_processor  null, ByteLevel, TemplateProcessing (its single template), Sequence of these.
//   decoder         ByteLevel, or a Sequence of Replace, ByteFallback, Fuse, Strip (decoder.h).
//
// encode(): added tokens are found first (added_tokens.h: those with normalized false in the raw
// text; the text between them is normalized, and those with normalized true are found in it, as
// the normalizer writes them), the rest is pre-tokenized, and each piece becomes one token when
// ignore_merges is set and the piece is in the vocabulary, else goes through BPE
// (byte_pair_encoder.h, in the `tokenizers` library's merge order). Bytes that are not valid
// UTF-8 (which Python's str cannot hold) become their own byte tokens (byte-level) or byte
// fallback / unknown tokens, so with a byte-level or byte_fallback vocabulary every byte string
// round-trips. O(n) plus O(m log m) of BPE per new piece of m symbols.
// decode(): joins each token's bytes (decoder.h: the byte alphabet's bytes, or "▁" as a space
// and "<0xHH>" as its byte), then applies the decoder's Strip (the space the normalizer put
// before the text). O(bytes out).
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
  // The text of `ids` as transformers' decode() gives it (special tokens kept). Throws Error for
  // an id that names no token.
  std::string decode(std::span<const std::int32_t> ids) const;
  // The bytes one token adds to a text it continues (may be a partial UTF-8 sequence; without
  // the decoder's Strip: SentencePiece's "▁Paris" is " Paris"). Throws Error for an id that
  // names no token.
  const std::string& token_bytes(std::int32_t id) const;
  // Whether `id` names a token (a vocabulary may leave ids unused).
  bool has_token(std::int32_t id) const;
  // Whether `id` is an added token marked special (a control token: <|im_end|>, <s>).
  bool is_special(std::int32_t id) const;
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
