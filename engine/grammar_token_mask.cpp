// A grammar's mask over the vocabulary (grammar_token_mask.h).
#include "engine/grammar_token_mask.h"

#include <algorithm>
#include <limits>

namespace attnscope::engine {

GrammarTokenMask::GrammarTokenMask(Grammar grammar,
                                   std::shared_ptr<const SortedVocabulary> vocabulary)
    : grammar_(std::move(grammar)),
      vocabulary_(std::move(vocabulary)),
      walked_(vocabulary_->longest() + 1) {}

std::uint32_t GrammarTokenMask::number(const GrammarRecognizer& state) {
  const auto [found, added] = number_of_.emplace(state, static_cast<std::uint32_t>(known_.size()));
  if (added) {
    known_.push_back(state);
    next_.emplace_back();
    next_.back().fill(kUnknown);
  }
  return found->second;
}

std::uint32_t GrammarTokenMask::step(std::uint32_t from, unsigned char byte) {
  if (next_[from][byte] == kUnknown) {
    GrammarRecognizer after = known_[from];
    const std::uint32_t to = after.accept(byte) ? number(after) : kRefused;
    next_[from][byte] = to;  // indexed again: number() may have moved next_
  }
  return next_[from][byte];
}

std::vector<bool> GrammarTokenMask::walk(const GrammarRecognizer& state) {
  if (known_.size() > kKnownStates) {
    known_.clear();
    number_of_.clear();
    next_.clear();
  }
  const SortedVocabulary& vocabulary = *vocabulary_;
  std::vector<bool> allowed(vocabulary.id_limit(), false);
  walked_[0] = number(state);
  // The previous token's first `read` bytes were accepted (walked_[read] is the state after
  // them); when it was refused, its byte at `read` was the one refused.
  std::size_t read = 0;
  for (std::size_t i = 0; i < vocabulary.size(); ++i) {
    const std::string_view bytes = vocabulary.bytes_at(i);
    // Sharing more than `read` bytes with the previous token means sharing its refused byte.
    if (vocabulary.shared(i) > read) continue;
    read = vocabulary.shared(i);
    while (read < bytes.size()) {
      const std::uint32_t after = step(walked_[read], static_cast<unsigned char>(bytes[read]));
      if (after == kRefused) break;
      walked_[++read] = after;
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
