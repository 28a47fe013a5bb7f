// GrammarTokenMask: a grammar's constraint on the sampler (JSON mode, a JSON schema). Before each
// draw, every token whose bytes the request's GrammarRecognizer would refuse gets a logit of
// -inf, so whatever the sampler picks (greedy or not, after penalties and logit bias) keeps the
// reply on its way to a text of the grammar. This is grammar-constrained decoding as llama.cpp
// and vLLM do it.
//
// The walk: the vocabulary, sorted by bytes with shared-prefix lengths (sorted_vocabulary.h), is
// read through the recognizer with its state after each prefix kept on a stack, so a shared
// prefix is read once, and a refused prefix refuses every token after it that starts with it,
// without reading them.
// What a walk finds depends on the recognizer's state alone, and a reply passes through few
// distinct states (inside a string, every string at the same place of the grammar is the same
// state), so the allowed set of each state is remembered (up to kRememberedStates of them, then
// forgotten all at once) and a walk runs only on a state not seen before.
// Cost per draw: O(V) to copy the logits through the remembered set. A walk: O(V), plus one
// recognizer step per trie node under the accepted prefixes: about the vocabulary's total bytes
// inside a string (where nearly every token fits), far fewer elsewhere. Memory: V bits per
// remembered state.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/grammar.h"
#include "engine/grammar_recognizer.h"
#include "engine/sorted_vocabulary.h"

namespace attnscope::engine {

class GrammarTokenMask {
 public:
  GrammarTokenMask(Grammar grammar, std::shared_ptr<const SortedVocabulary> vocabulary);
  GrammarTokenMask(const GrammarTokenMask&) = delete;  // recognizers point at its grammar
  GrammarTokenMask& operator=(const GrammarTokenMask&) = delete;

  const Grammar& grammar() const { return grammar_; }
  // A recognizer at the start of the grammar (valid while this mask lives).
  GrammarRecognizer start() const { return GrammarRecognizer(grammar_); }
  // The bytes of token `id` ("" for one never drawn).
  std::string_view bytes(std::int32_t id) const { return vocabulary_->bytes(id); }

  // `logits` with every token that cannot follow `state` at -inf: a copy, valid until the next
  // call. Empty when no token of the vocabulary can follow (a vocabulary without single bytes).
  std::span<const float> restrict(const GrammarRecognizer& state, std::span<const float> logits);

  // States whose allowed set is remembered now.
  std::size_t remembered_states() const { return allowed_after_.size(); }

  static constexpr std::size_t kRememberedStates = 256;

 private:
  struct StateHash {
    std::size_t operator()(const GrammarRecognizer& state) const { return state.hash(); }
  };

  // The walk: allowed[id] for every token after `state`.
  std::vector<bool> walk(const GrammarRecognizer& state);

  Grammar grammar_;
  std::shared_ptr<const SortedVocabulary> vocabulary_;
  std::vector<GrammarRecognizer> states_;  // the walk's stack: states_[k] after k bytes
  std::unordered_map<GrammarRecognizer, std::vector<bool>, StateHash> allowed_after_;
  std::vector<float> restricted_;
};

}  // namespace attnscope::engine
