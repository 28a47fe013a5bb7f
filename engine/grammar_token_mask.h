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
// A walk reads the same few states again and again (inside a string, after most bytes the
// recognizer is where it was), so the recognizer's steps are kept as a table as walks need them:
// each state a walk reaches is numbered once, and the state after it and a byte is computed
// once, then looked up (the pushdown recognizer unrolled into a DFA, lazily, as far as the
// vocabulary leads it; forgotten all at once before a walk once past kKnownStates).
// What a walk finds depends on the recognizer's state alone, and a reply passes through few
// distinct states (inside a string, every string at the same place of the grammar is the same
// state), so the allowed set of each state is remembered too (up to kRememberedStates of them,
// then forgotten all at once) and a walk runs only on a state not seen before.
// Cost per draw: O(V) to copy the logits through the remembered set. A walk: O(V), plus one
// table lookup per trie node under the accepted prefixes (about the vocabulary's total bytes
// inside a string, where nearly every token fits; far fewer elsewhere), plus one recognizer step
// per (state, byte) pair not met before. Memory: V bits per remembered state, 1 KiB per known
// state (about kKnownStates of them at most).
#pragma once

#include <array>
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
  static constexpr std::size_t kKnownStates = 1024;

 private:
  struct StateHash {
    std::size_t operator()(const GrammarRecognizer& state) const { return state.hash(); }
  };
  static constexpr std::uint32_t kRefused = UINT32_MAX;      // in next_: the byte is refused
  static constexpr std::uint32_t kUnknown = UINT32_MAX - 1;  // in next_: not computed yet

  // The walk: allowed[id] for every token after `state`.
  std::vector<bool> walk(const GrammarRecognizer& state);
  // The number of `state` in the table (numbered now if new).
  std::uint32_t number(const GrammarRecognizer& state);
  // The number of the state after state number `from` and `byte`, or kRefused.
  std::uint32_t step(std::uint32_t from, unsigned char byte);

  Grammar grammar_;
  std::shared_ptr<const SortedVocabulary> vocabulary_;
  std::vector<GrammarRecognizer> known_;  // the table's states, by number
  std::unordered_map<GrammarRecognizer, std::uint32_t, StateHash> number_of_;
  std::vector<std::array<std::uint32_t, 256>> next_;  // [number][byte]: the next number
  std::vector<std::uint32_t> walked_;  // the walk's stack: walked_[k] the number after k bytes
  std::unordered_map<GrammarRecognizer, std::vector<bool>, StateHash> allowed_after_;
  std::vector<float> restricted_;
};

}  // namespace attnscope::engine
