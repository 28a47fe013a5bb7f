#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/error.h"

namespace attnscope {

void validate_sampling(const SamplingOptions& options) {
  check(std::isfinite(options.temperature) && options.temperature >= 0.0f, "--temperature",
        "must be a finite number >= 0 (0 = greedy)");
  check(options.top_k >= 0, "--top-k", "must be >= 0 (0 = no limit)");
  check(options.top_p > 0.0f && options.top_p <= 1.0f, "--top-p", "must be in (0, 1]");
}

namespace {

// splitmix64's state advances by this constant with every number it gives.
constexpr std::uint64_t kStateStep = 0x9E3779B97F4A7C15ull;

}  // namespace

Sampler::Sampler(const SamplingOptions& options, std::uint64_t first_draw)
    : options_(options), state_(options.seed + first_draw * kStateStep) {
  validate_sampling(options);
}

double Sampler::next_uniform() {
  // splitmix64: a tiny, well-mixed generator whose sequence is the same everywhere.
  state_ += kStateStep;
  std::uint64_t z = state_;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;  // the top 53 bits as a fraction
}

std::int32_t Sampler::sample(std::span<const float> logits) {
  check(!logits.empty(), "sampler", "no logits to sample from");
  for (float l : logits) check(!std::isnan(l), "sampler", "the logits contain NaN");

  if (options_.temperature == 0.0f) {
    return static_cast<std::int32_t>(std::max_element(logits.begin(), logits.end()) -
                                     logits.begin());
  }

  // 1. Probabilities at this temperature (unnormalised: the most probable token has 1).
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  probabilities_.resize(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) {
    probabilities_[i] = std::exp((logits[i] - max_logit) / options_.temperature);
  }

  // 2-3. The kept tokens are those at least as probable as `cut`, the least probable one kept
  // (most probable first, the lower id first on ties). Without top-k and top-p every token is
  // kept and nothing is sorted: the common case costs O(V).
  std::pair<float, std::int32_t> cut{0.0f, static_cast<std::int32_t>(logits.size() - 1)};
  const bool limit_k =
      options_.top_k > 0 && static_cast<std::size_t>(options_.top_k) < logits.size();
  if (limit_k || options_.top_p < 1.0f) cut = least_probable_kept();
  auto kept = [&](std::size_t i) {
    const float p = probabilities_[i];
    return p > cut.first || (p == cut.first && static_cast<std::int32_t>(i) <= cut.second);
  };

  // 4. Renormalise and draw, walking the kept tokens in id order (as the GPU does).
  double mass = 0.0;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (kept(i)) mass += probabilities_[i];
  }
  const double draw = next_uniform() * mass;
  double running = 0.0;
  std::int32_t last_kept = cut.second;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (!kept(i)) continue;
    running += probabilities_[i];
    last_kept = static_cast<std::int32_t>(i);
    if (draw < running) return last_kept;
  }
  return last_kept;  // rounding left the draw at the very top
}

std::pair<float, std::int32_t> Sampler::least_probable_kept() {
  candidates_.clear();
  for (std::size_t i = 0; i < probabilities_.size(); ++i) {
    candidates_.emplace_back(probabilities_[i], static_cast<std::int32_t>(i));
  }
  auto more_probable = [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  const auto at = [&](std::size_t n) {
    return candidates_.begin() + static_cast<std::ptrdiff_t>(n);
  };

  // Top-k: the k most probable moved to the front, in any order (a selection, O(V)).
  std::size_t kept = candidates_.size();
  if (options_.top_k > 0 && static_cast<std::size_t>(options_.top_k) < kept) {
    kept = static_cast<std::size_t>(options_.top_k);
    std::nth_element(candidates_.begin(), at(kept - 1), candidates_.end(), more_probable);
  }
  if (options_.top_p >= 1.0f) {
    return *std::max_element(candidates_.begin(), at(kept), more_probable);  // the last of them
  }

  // Top-p: the smallest most-probable prefix of the kept whose mass reaches top_p of theirs.
  // Sorted a little at a time (64, then 4x more each round), since a peaked distribution
  // reaches the mass within a few tokens.
  double mass = 0.0;
  for (std::size_t i = 0; i < kept; ++i) mass += candidates_[i].first;
  const double target = options_.top_p * mass;
  double running = 0.0;
  std::size_t nucleus = 0, sorted = 0;
  for (;;) {
    const std::size_t next = std::min(kept, std::max<std::size_t>(64, 4 * sorted));
    std::partial_sort(at(sorted), at(next), at(kept), more_probable);
    sorted = next;
    while (nucleus < sorted && running < target) running += candidates_[nucleus++].first;
    if (running >= target || sorted == kept) break;
  }
  return candidates_[std::max<std::size_t>(nucleus, 1) - 1];
}

}  // namespace attnscope
