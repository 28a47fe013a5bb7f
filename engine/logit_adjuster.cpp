// OpenAI's sampling penalties and logit bias (logit_adjuster.h).
#include "engine/logit_adjuster.h"

namespace attnscope::engine {

std::string LogitAdjustments::refusal(std::int64_t vocab_size) const {
  for (const float penalty : {presence_penalty, frequency_penalty}) {
    if (!(penalty >= -2.0f && penalty <= 2.0f)) return "a penalty must be in [-2, 2]";
  }
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0 || token >= vocab_size) {
      return "logit_bias names token id " + std::to_string(token) +
             ", outside the vocabulary [0, " + std::to_string(vocab_size) + ")";
    }
    if (!(bias >= -100.0f && bias <= 100.0f)) return "a logit_bias must be in [-100, 100]";
  }
  return "";
}

std::span<const float> LogitAdjuster::adjust(std::span<const float> row) {
  if (!adjustments_.any()) return row;
  adjusted_.assign(row.begin(), row.end());
  for (const auto& [token, count] : counts_) {
    adjusted_[static_cast<std::size_t>(token)] -=
        adjustments_.frequency_penalty * static_cast<float>(count) + adjustments_.presence_penalty;
  }
  for (const auto& [token, bias] : adjustments_.logit_bias) {
    adjusted_[static_cast<std::size_t>(token)] += bias;
  }
  return adjusted_;
}

void LogitAdjuster::record(std::int32_t token) {
  if (adjustments_.any()) ++counts_[token];
}

}  // namespace attnscope::engine
