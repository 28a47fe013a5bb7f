// A grammar's mask over the vocabulary (grammar_token_mask.h).
#include "engine/grammar_token_mask.h"

#include <algorithm>
#include <limits>

namespace attnscope::engine {

GrammarTokenMask::GrammarTokenMask(Grammar grammar,
                                   std::shared_ptr<const SortedVocabulary> vocabulary)
    : grammar_(std::move(grammar)),
      vocabulary_(std::move(vocabulary)),
      states_(vocabulary_->longest() + 1, GrammarRecognizer(grammar_)) {}

std::vector<bool> GrammarTokenMask::walk(const GrammarRecognizer& state) {
  const SortedVocabulary& vocabulary = *vocabulary_;
  std::vector<bool> allowed(vocabulary.id_limit(), false);
  states_[0] = state;
  // The previous token's first `read` bytes were accepted (states_[read] is the state after
  // them); when it was refused, its byte at `read` was the one refused.
  std::size_t read = 0;
  for (std::size_t i = 0; i < vocabulary.size(); ++i) {
    const std::string_view bytes = vocabulary.bytes_at(i);
    // Sharing more than `read` bytes with the previous token means sharing its refused byte.
    if (vocabulary.shared(i) > read) continue;
    read = vocabulary.shared(i);
    while (read < bytes.size()) {
      states_[read + 1] = states_[read];
      if (!states_[read + 1].accept(static_cast<unsigned char>(bytes[read]))) break;
      ++read;
    }
    if (read == bytes.size()) allowed[static_cast<std::size_t>(vocabulary.id(i))] = true;
  }
  return allowed;
}

std::span<const float> GrammarTokenMask::restrict(const GrammarRecognizer& state,
                                                  std::span<const float> logits) {
  auto found = allowed_after_.find(state);
  if (found == allowed_after_.end()) {
    if (allowed_after_.size() >= kRememberedStates) allowed_after_.clear();
    found = allowed_after_.emplace(state, walk(state)).first;
  }
  const std::vector<bool>& allowed = found->second;
  restricted_.assign(logits.size(), -std::numeric_limits<float>::infinity());
  bool any = false;
  for (std::size_t id = 0; id < std::min(logits.size(), allowed.size()); ++id) {
    if (allowed[id]) {
      restricted_[id] = logits[id];
      any = true;
    }
  }
  if (!any) return {};
  return restricted_;
}

}  // namespace attnscope::engine
