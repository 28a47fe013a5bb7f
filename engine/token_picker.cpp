// One request's pick of its next token (token_picker.h).
#include "engine/token_picker.h"

namespace attnscope::engine {

std::string grammar_prefix_refusal(const Grammar& grammar, std::string_view prefix) {
  GrammarRecognizer recognizer(grammar);
  if (!recognizer.accept(prefix)) {
    return "the text continued is not the start of a reply the JSON schema admits";
  }
  if (recognizer.finished()) return "the text continued is a whole reply already";
  return "";
}

TokenPicker::TokenPicker(const SamplingOptions& sampling, LogitAdjustments adjustments,
                         std::shared_ptr<GrammarTokenMask> grammar_mask,
                         std::string_view grammar_prefix)
    : sampler_(sampling),
      adjuster_(std::move(adjustments)),
      grammar_mask_(std::move(grammar_mask)) {
  if (!grammar_mask_) return;
  grammar_.emplace(grammar_mask_->start());
  grammar_->accept(grammar_prefix);  // checked by grammar_prefix_refusal
}

std::optional<std::int32_t> TokenPicker::pick(std::span<const float> logits) {
  std::span<const float> choices = adjuster_.adjust(logits);
  if (grammar_) {
    choices = grammar_mask_->restrict(*grammar_, choices);
    if (choices.empty()) return std::nullopt;
  }
  const std::int32_t token = sampler_.sample(choices);
  adjuster_.record(token);
  // The grammar takes the token's bytes: the mask let through no other token.
  if (grammar_) grammar_->accept(grammar_mask_->bytes(token));
  return token;
}

}  // namespace attnscope::engine
