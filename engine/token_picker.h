// TokenPicker: how one request picks its next token from its row of logits, the same in the
// engine (every sequence has one) and in `attnscope generate`:
//   1. its penalties and logit bias change the logits (logit_adjuster.h);
//   2. under a grammar (JSON mode, a JSON schema), every token that cannot continue the reply is
//      masked (grammar_token_mask.h);
//   3. its own seeded sampler draws (runtime/sampler.h: temperature, top-k, top-p).
// The pick is then recorded: counted for the penalties, read by the grammar.
// Cost: the sampler's, plus the adjuster's and the mask's when the request asks for them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "engine/grammar_recognizer.h"
#include "engine/grammar_token_mask.h"
#include "engine/logit_adjuster.h"
#include "runtime/sampler.h"

namespace attnscope::engine {

// Why a reply under `grammar` cannot continue `prefix` (it is not the start of a text of the
// grammar, or is a whole one that nothing may extend); "" when it can.
std::string grammar_prefix_refusal(const Grammar& grammar, std::string_view prefix);

class TokenPicker {
 public:
  // Under a grammar when `grammar_mask` is given (a grammar over the model's vocabulary, shared
  // by every picker under that grammar), the reply continuing `grammar_prefix` (which
  // grammar_prefix_refusal accepts).
  TokenPicker(const SamplingOptions& sampling, LogitAdjustments adjustments,
              std::shared_ptr<GrammarTokenMask> grammar_mask = nullptr,
              std::string_view grammar_prefix = {});

  // The next token, recorded; nullopt when the grammar finds no token of the vocabulary that can
  // continue the reply (a vocabulary without single-byte tokens). Throws Error as
  // Sampler::sample does.
  std::optional<std::int32_t> pick(std::span<const float> logits);
  // Under a grammar: whether the reply is a whole text of it that nothing may extend (a JSON
  // reply once its object is closed).
  bool grammar_finished() const { return grammar_.has_value() && grammar_->finished(); }

 private:
  Sampler sampler_;
  LogitAdjuster adjuster_;
  std::shared_ptr<GrammarTokenMask> grammar_mask_;
  std::optional<GrammarRecognizer> grammar_;  // where the reply is in the grammar
};

}  // namespace attnscope::engine
