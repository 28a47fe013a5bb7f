// One request's pick of its next token (token_picker.h).
#include "engine/token_picker.h"

namespace attnscope::engine {

std::string json_prefix_refusal(std::string_view prefix) {
  JsonRecognizer json;
  if (!json.accept(prefix)) {
    return "JSON mode: the text continued is not the start of a JSON object (as JSON mode "
           "writes one)";
  }
  if (json.complete()) return "JSON mode: the text continued is a whole JSON object already";
  return "";
}

TokenPicker::TokenPicker(const SamplingOptions& sampling, LogitAdjustments adjustments,
                         JsonTokenMask* json_mask, std::string_view json_prefix)
    : sampler_(sampling), adjuster_(std::move(adjustments)), json_mask_(json_mask) {
  if (json_mask_ == nullptr) return;
  json_.emplace();
  json_->accept(json_prefix);  // checked by json_prefix_refusal
}

std::optional<std::int32_t> TokenPicker::pick(std::span<const float> logits) {
  std::span<const float> choices = adjuster_.adjust(logits);
  if (json_) {
    choices = json_mask_->restrict(*json_, choices);
    if (choices.empty()) return std::nullopt;
  }
  const std::int32_t token = sampler_.sample(choices);
  adjuster_.record(token);
  // The grammar takes the token's bytes: the mask let through no other token.
  if (json_) json_->accept(json_mask_->bytes(token));
  return token;
}

}  // namespace attnscope::engine
