// TokenPicker: how one request picks its next token from its row of logits, the same in the
// engine (every sequence has one) and in `attnscope generate`:
//   1. its penalties and logit bias change the logits (logit_adjuster.h);
//   2. in JSON mode, every token that cannot continue the JSON object is masked
//      (json_token_mask.h);
//   3. its own seeded sampler draws (runtime/sampler.h: temperature, top-k, top-p).
// The pick is then recorded: counted for the penalties, read by the JSON grammar.
// Cost: the sampler's, plus the adjuster's and the mask's when the request asks for them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "engine/json_recognizer.h"
#include "engine/json_token_mask.h"
#include "engine/logit_adjuster.h"
#include "runtime/sampler.h"

namespace attnscope::engine {

// Why JSON mode cannot continue `prefix` (it is not the start of a JSON object, or is a whole
// one already); "" when it can.
std::string json_prefix_refusal(std::string_view prefix);

class TokenPicker {
 public:
  // JSON mode when `json_mask` is given (the model's vocabulary masked, shared by every picker
  // over that vocabulary; it must outlive this picker), the reply continuing `json_prefix`
  // (which json_prefix_refusal accepts).
  TokenPicker(const SamplingOptions& sampling, LogitAdjustments adjustments,
              JsonTokenMask* json_mask = nullptr, std::string_view json_prefix = {});

  // The next token, recorded; nullopt when JSON mode finds no token of the vocabulary that can
  // continue the reply (a vocabulary without single-byte tokens). Throws Error as
  // Sampler::sample does.
  std::optional<std::int32_t> pick(std::span<const float> logits);
  // JSON mode: whether the reply is one whole JSON object now (nothing may follow it).
  bool json_complete() const { return json_.has_value() && json_->complete(); }

 private:
  Sampler sampler_;
  LogitAdjuster adjuster_;
  JsonTokenMask* json_mask_;
  std::optional<JsonRecognizer> json_;  // JSON mode: where the reply is in the grammar
};

}  // namespace attnscope::engine
