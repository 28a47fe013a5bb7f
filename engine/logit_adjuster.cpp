// OpenAI's sampling penalties and logit bias (logit_adjuster.h).
#include "engine/logit_adjuster.h"

namespace attnscope::engine {

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
