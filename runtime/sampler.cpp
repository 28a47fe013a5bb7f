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

  // Probabilities at this temperature, most probable first.
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  candidates_.clear();
  for (std::size_t i = 0; i < logits.size(); ++i) {
    const float p = std::exp((logits[i] - max_logit) / options_.temperature);
    candidates_.emplace_back(p, static_cast<std::int32_t>(i));
  }
  auto more_probable = [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  std::size_t kept = candidates_.size();
  if (options_.top_k > 0 && static_cast<std::size_t>(options_.top_k) < kept) {
    kept = static_cast<std::size_t>(options_.top_k);
  }
  std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(kept),
                    candidates_.end(), more_probable);

  double mass = 0.0;
  for (std::size_t i = 0; i < kept; ++i) mass += candidates_[i].first;
  if (options_.top_p < 1.0f) {
    const double target = options_.top_p * mass;
    double running = 0.0;
    std::size_t nucleus = 0;
    while (nucleus < kept && running < target) running += candidates_[nucleus++].first;
    kept = std::max<std::size_t>(nucleus, 1);
    mass = running > 0.0 ? running : candidates_[0].first;
  }

  const double draw = next_uniform() * mass;
  double running = 0.0;
  for (std::size_t i = 0; i < kept; ++i) {
    running += candidates_[i].first;
    if (draw < running) return candidates_[i].second;
  }
  return candidates_[kept - 1].second;  // rounding left the draw at the very top
}

}  // namespace attnscope
