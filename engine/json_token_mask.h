// JsonTokenMask: JSON mode's constraint on the sampler. Before each draw, every token whose bytes
// the request's JsonRecognizer would refuse gets a logit of -inf, so whatever the sampler picks
// (greedy or not, after penalties and logit bias) keeps the reply on its way to one JSON object.
// This is how grammar-constrained decoding works in llama.cpp and vLLM (there with a grammar for
// any JSON schema; here the grammar is JSON itself).
//
// The vocabulary is kept sorted by bytes with, for each token, the length of the prefix it shares
// with the one before it (a trie walked in order without its nodes): the recognizer's state after
// each prefix is kept on a stack, so a shared prefix is read once, and a refused prefix refuses
// every token after it that starts with it, without reading them.
// What a walk finds depends on the recognizer's state alone, and a reply passes through few
// distinct states (inside a string, every string at the same depth is the same state), so the
// allowed set of each state is remembered (up to kRememberedStates of them, then forgotten all
// at once) and a walk runs only on a state not seen before.
// Cost per draw: O(V) to copy the logits through the remembered set. A walk: O(V), plus one
// recognizer step (a few nanoseconds) per trie node under the accepted prefixes: about the
// vocabulary's total bytes inside a string (where nearly every token fits), far fewer
// elsewhere. Memory: V bits per remembered state.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/json_recognizer.h"
#include "engine/token_vocabulary.h"
#include "models/model_config.h"

namespace attnscope::engine {

class JsonTokenMask {
 public:
  // token_bytes[id]: the bytes token id adds to a text; empty for a token that may never be
  // drawn in JSON mode (a control token, the end-of-sequence token, an id naming no token).
  explicit JsonTokenMask(const std::vector<std::string>& token_bytes);
  // The vocabulary of a model: every id below its vocab_size, less the control tokens and the
  // model's end-of-sequence ids.
  JsonTokenMask(const TokenVocabulary& vocabulary, const ModelConfig& model);

  // The bytes of token `id` ("" for one never drawn).
  std::string_view bytes(std::int32_t id) const;

  // `logits` with every token that cannot follow `json` at -inf: a copy, valid until the next
  // call. Empty when no token of the vocabulary can follow (a vocabulary without single bytes).
  std::span<const float> restrict(const JsonRecognizer& json, std::span<const float> logits);

  // States whose allowed set is remembered now.
  std::size_t remembered_states() const { return allowed_after_.size(); }

  static constexpr std::size_t kRememberedStates = 256;

 private:
  static constexpr std::uint32_t kNone = UINT32_MAX;

  struct StateHash {
    std::size_t operator()(const JsonRecognizer& state) const { return state.hash(); }
  };

  // The walk: allowed[id] for every token after `json`.
  std::vector<bool> walk(const JsonRecognizer& json);

  std::size_t vocabulary_size_;        // token ids are below it
  std::string bytes_;                  // the tokens' bytes, in sorted order, back to back
  std::vector<std::uint32_t> offset_;  // token i of the order: bytes_[offset_[i], offset_[i+1])
  std::vector<std::uint32_t> shared_;  // its prefix shared with token i - 1 (0 for the first)
  std::vector<std::int32_t> id_;       // its id
  std::vector<std::uint32_t> order_of_id_;  // id -> its i in the order (kNone: never drawn)
  std::size_t longest_ = 0;                 // the longest token's bytes
  std::vector<JsonRecognizer> states_;      // the walk's stack: states_[k] after k bytes
  std::unordered_map<JsonRecognizer, std::vector<bool>, StateHash> allowed_after_;
  std::vector<float> restricted_;
};

}  // namespace attnscope::engine
