// SortedVocabulary: a model's tokens as bytes, sorted, each with the length of the prefix it
// shares with the one before it: a trie walked in order without its nodes, which is how a
// grammar's token mask (grammar_token_mask.h) reads a shared prefix once and skips every token
// under a refused one. Built once per vocabulary and shared by every grammar's mask.
// Cost: O(V log V) string comparisons to build; the tokens' bytes plus 12 bytes per token.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/token_vocabulary.h"
#include "models/model_config.h"

namespace attnscope::engine {

class SortedVocabulary {
 public:
  // token_bytes[id]: the bytes token id adds to a text; empty for a token that may never be
  // drawn under a grammar (a control token, the end-of-sequence token, an id naming no token).
  explicit SortedVocabulary(const std::vector<std::string>& token_bytes);
  // The vocabulary of a model: every id below its vocab_size, less the control tokens and the
  // model's end-of-sequence ids.
  SortedVocabulary(const TokenVocabulary& vocabulary, const ModelConfig& model);

  // Ids are below this.
  std::size_t id_limit() const { return order_of_id_.size(); }
  // The bytes of token `id` ("" for one never drawn).
  std::string_view bytes(std::int32_t id) const;

  // The drawable tokens in sorted order: i-th's id, bytes and prefix shared with the (i-1)-th.
  std::size_t size() const { return id_.size(); }
  std::int32_t id(std::size_t i) const { return id_[i]; }
  std::string_view bytes_at(std::size_t i) const {
    return std::string_view(bytes_).substr(offset_[i], offset_[i + 1] - offset_[i]);
  }
  std::size_t shared(std::size_t i) const { return shared_[i]; }
  std::size_t longest() const { return longest_; }

 private:
  static constexpr std::uint32_t kNone = UINT32_MAX;

  std::string bytes_;                  // the tokens' bytes, in sorted order, back to back
  std::vector<std::uint32_t> offset_;  // token i of the order: bytes_[offset_[i], offset_[i+1])
  std::vector<std::uint32_t> shared_;  // its prefix shared with token i - 1 (0 for the first)
  std::vector<std::int32_t> id_;       // its id
  std::vector<std::uint32_t> order_of_id_;  // id -> its i in the order (kNone: never drawn)
  std::size_t longest_ = 0;                 // the longest token's bytes
};

}  // namespace attnscope::engine
