// OpenAI's sampling penalties and logit bias: what a request adds to its logits before its
// sampler draws (the log-probabilities it reports stay the raw logits'):
//   logit[j] += bias[j] - frequency_penalty * count[j] - presence_penalty * (count[j] > 0)
// where count[j] is how many times token j was generated so far (the prompt is not counted, as
// in vLLM). Positive penalties make repeating less likely, negative ones more; a bias of -100
// all but bans a token, +100 all but forces it.
// Cost per step: a copy of the row (O(V)) and O(distinct tokens generated + biased tokens), and
// nothing at all for a request that asks for none of it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace attnscope::engine {

struct LogitAdjustments {
  float presence_penalty = 0.0f;                           // [-2, 2]
  float frequency_penalty = 0.0f;                          // [-2, 2]
  std::vector<std::pair<std::int32_t, float>> logit_bias;  // (token id, bias in [-100, 100])

  bool any() const {
    return presence_penalty != 0.0f || frequency_penalty != 0.0f || !logit_bias.empty();
  }
  // Why these cannot apply to a vocabulary of `vocab_size` tokens (a penalty or a bias out of
  // range, a token id outside it); "" when they can. Every caller checks this before a
  // LogitAdjuster reads them (the engine, generate, Python).
  std::string refusal(std::int64_t vocab_size) const;
};

// One sequence's adjustments, with the counts of what it generated.
class LogitAdjuster {
 public:
  explicit LogitAdjuster(LogitAdjustments adjustments) : adjustments_(std::move(adjustments)) {}

  // The logits to draw from: `row` itself when nothing is adjusted, else an adjusted copy (valid
  // until the next call). Token ids are checked by Engine::refusal before a request runs.
  std::span<const float> adjust(std::span<const float> row);
  // A token the sequence generated.
  void record(std::int32_t token);

 private:
  LogitAdjustments adjustments_;
  std::unordered_map<std::int32_t, std::int64_t> counts_;
  std::vector<float> adjusted_;
};

}  // namespace attnscope::engine
