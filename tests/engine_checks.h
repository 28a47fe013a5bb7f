// What the engine suites (tests/test_engine.cpp, and on a GPU tests/test_cuda_paged.cpp) compare
// the engine's tokens with: the same request run alone through the contiguous path, and the rule
// that lets the two differ only where the alone run's top two logits were a near tie.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/request.h"
#include "model_checks.h"
#include "models/language_model.h"
#include "runtime/sampler.h"

namespace attnscope::testing {

// The request run alone through the contiguous path (LanguageModel::forward with a KVCache of
// its own, every kernel eager, logits read on the host): its tokens, and at each step the lead of
// the top logit over the runner-up, relative to max(|top|, 1) as the parity bounds are.
struct Alone {
  std::vector<std::int32_t> tokens;
  std::vector<double> leads;
};

inline Alone run_alone(Context& ctx, const LanguageModel& model, const engine::Request& request) {
  Alone alone;
  const auto prompt_length = static_cast<std::int64_t>(request.prompt.size());
  KVCache cache = model.new_cache(ctx, 1, prompt_length + request.max_tokens);
  Sampler sampler(request.sampling);
  Tensor logits = model.forward(ctx, request.prompt, 1, cache);
  for (std::int64_t i = 0; i < request.max_tokens; ++i) {
    const std::vector<float> row = host_logits(ctx, logits);
    std::vector<float> sorted = row;
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
    alone.leads.push_back((static_cast<double>(sorted[0]) - sorted[1]) /
                          std::max(std::fabs(static_cast<double>(sorted[0])), 1.0));
    const std::int32_t next = sampler.sample(row);
    alone.tokens.push_back(next);
    if (!request.ignore_eos && model.config().is_eos(next)) break;
    if (i + 1 < request.max_tokens) logits = model.forward(ctx, {&next, 1}, 1, cache);
  }
  return alone;
}

// Whether `tokens` first differs from the alone run's where the alone run's top two logits lay
// within 2 x `bound` of each other (relative, as Alone::leads): a tie that another batch's
// rounding may break the other way. Greedy requests only: a draw has no such margin to read.
// False when `tokens` equals the alone run's or is cut short before differing.
inline bool differs_at_near_tie(const std::vector<std::int32_t>& tokens, const Alone& alone,
                                double bound) {
  const auto first_difference =
      std::mismatch(tokens.begin(), tokens.end(), alone.tokens.begin(), alone.tokens.end());
  if (first_difference.first == tokens.end()) return false;  // equal, or cut short: no tie
  const auto at = static_cast<std::size_t>(first_difference.first - tokens.begin());
  return at < alone.leads.size() && alone.leads[at] <= 2 * bound;
}

}  // namespace attnscope::testing
