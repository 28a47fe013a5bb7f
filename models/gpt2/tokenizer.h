// GPT-2's byte-level BPE tokenizer: text (any bytes) <-> token ids, exactly as OpenAI's encoder.py
// and Hugging Face's GPT2Tokenizer do it.
//
// encode() costs O(n) for the pre-tokenizer regex over n bytes plus O(m log m) of BPE for each
// piece of m bytes never seen before (pieces already seen come from a cache). decode() costs
// O(bytes out). See tokenizer.cpp for the steps.
//
// A Tokenizer is immutable once loaded apart from its piece cache, which is guarded: encode() and
// decode() may be called on one const Tokenizer from many threads. Moving is cheap (one pointer);
// a moved-from Tokenizer may only be assigned to or destroyed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::gpt2 {

class Tokenizer {
 public:
  // Loads vocab.json + merges.txt (Hugging Face names) or encoder.json + vocab.bpe (OpenAI's names)
  // from `dir`. Throws Error naming the missing/invalid file.
  static Tokenizer load(const std::string& dir);
  // True when `dir` holds either pair of files.
  static bool present_in(const std::string& dir);
  // True when `name` is one of those files' names ("vocab.json", "encoder.json", ...).
  static bool is_file_name(std::string_view name);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Never throws on bad input: invalid UTF-8 bytes become their own single-byte tokens, so
  // decode(encode(text)) == text for any byte string. A literal "<|endoftext|>" becomes eot_id().
  std::vector<std::int32_t> encode(std::string_view text) const;
  // Throws Error for an id outside [0, vocab_size()).
  std::string decode(std::span<const std::int32_t> ids) const;
  // The raw bytes of one token (may be a partial UTF-8 sequence). Throws Error when out of range.
  const std::string& token_bytes(std::int32_t id) const;
  std::int32_t eot_id() const;  // "<|endoftext|>" (50256 for GPT-2)
  std::size_t vocab_size() const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace attnscope::gpt2
