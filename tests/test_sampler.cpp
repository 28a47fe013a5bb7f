// Sampling: greedy, temperature, top-k, top-p; reproducible with a seed.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include "runtime/error.h"
#include "runtime/sampler.h"

using namespace attnscope;

namespace {

std::map<std::int32_t, int> histogram(const SamplingOptions& options,
                                      const std::vector<float>& logits, int draws) {
  Sampler sampler(options);
  std::map<std::int32_t, int> counts;
  for (int i = 0; i < draws; ++i) ++counts[sampler.sample(logits)];
  return counts;
}

}  // namespace

TEST_CASE("greedy picks the arg max, the lowest id on ties") {
  Sampler sampler(SamplingOptions{});
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f};
  CHECK(sampler.sample(logits) == 1);
}

TEST_CASE("temperature sampling follows the softmax probabilities") {
  const std::vector<float> logits = {std::log(1.0f), std::log(2.0f), std::log(7.0f)};
  SamplingOptions options;
  options.temperature = 1.0f;
  options.seed = 42;
  const int draws = 100000;
  const auto counts = histogram(options, logits, draws);
  CHECK(counts.at(0) / double(draws) == doctest::Approx(0.1).epsilon(0.05));
  CHECK(counts.at(1) / double(draws) == doctest::Approx(0.2).epsilon(0.03));
  CHECK(counts.at(2) / double(draws) == doctest::Approx(0.7).epsilon(0.01));
}

TEST_CASE("top-k keeps only the k most probable tokens") {
  const std::vector<float> logits = {0.0f, 3.0f, 1.0f, 2.0f};
  SamplingOptions options;
  options.temperature = 1.0f;
  options.top_k = 2;
  const auto counts = histogram(options, logits, 5000);
  CHECK(counts.size() == 2);
  CHECK(counts.contains(1));
  CHECK(counts.contains(3));
}

TEST_CASE("top-p keeps the smallest set reaching the mass") {
  // Probabilities 0.5, 0.3, 0.15, 0.05: p = 0.75 needs the first two.
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f),
                                     std::log(0.05f)};
  SamplingOptions options;
  options.temperature = 1.0f;
  options.top_p = 0.75f;
  const auto counts = histogram(options, logits, 20000);
  CHECK(counts.size() == 2);
  CHECK(counts.at(0) / 20000.0 == doctest::Approx(0.5 / 0.8).epsilon(0.03));
  options.top_p = 0.01f;  // always at least the most probable token
  CHECK(histogram(options, logits, 100).size() == 1);
}

TEST_CASE("top-k and top-p over a large vocabulary keep what a full sort keeps") {
  // 3000 tokens with spread-out logits: the nucleus holds a few hundred tokens, more than the
  // sampler's first partial sort of 64, and top-k cuts inside it. The reference sorts all.
  // 10000 draws put about 2000 in the tail checked below: its share is off by ~2% (one standard
  // deviation of a binomial count), the check allows 8%.
  constexpr int kDraws = 10000;
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(3000);
  for (float& l : logits) l = normal(rng);
  std::vector<std::int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  });
  const float max_logit = logits[order[0]];
  auto nucleus = [&](std::size_t top_k, double top_p) {
    double mass = 0.0, running = 0.0;
    for (std::size_t i = 0; i < top_k; ++i) mass += std::exp(logits[order[i]] - max_logit);
    std::size_t kept = 0;
    while (kept < top_k && running < top_p * mass) {
      running += std::exp(logits[order[kept++]] - max_logit);
    }
    return std::vector<std::int32_t>(order.begin(), order.begin() + kept);
  };
  for (const std::pair<int, float>& limits :
       {std::pair{0, 0.9f}, std::pair{120, 0.95f}, std::pair{500, 1.0f}, std::pair{0, 0.3f}}) {
    SamplingOptions options;
    options.temperature = 1.0f;
    options.top_k = limits.first;
    options.top_p = limits.second;
    CAPTURE(options.top_k);
    CAPTURE(options.top_p);
    std::vector<std::int32_t> expected = nucleus(
        limits.first > 0 ? static_cast<std::size_t>(limits.first) : logits.size(), limits.second);
    std::sort(expected.begin(), expected.end());
    const auto counts = histogram(options, logits, kDraws);
    for (const auto& drawn : counts) {
      CAPTURE(drawn.first);
      CHECK(std::binary_search(expected.begin(), expected.end(), drawn.first));
    }
    // The kept tokens are drawn in proportion to their probabilities: the least probable of
    // them, those holding the last fifth of the kept mass, get about a fifth of the draws (a
    // sampler keeping too few tokens gives them less, one keeping too many more).
    std::vector<std::int32_t> by_rank = nucleus(expected.size(), 1.0);
    double kept_mass = 0.0;
    for (std::int32_t id : by_rank) kept_mass += std::exp(logits[id] - max_logit);
    double running = 0.0, tail_mass = 0.0;
    int tail_draws = 0;
    for (std::int32_t id : by_rank) {
      const double p = std::exp(logits[id] - max_logit);
      running += p;
      if (running > 0.8 * kept_mass) {
        tail_mass += p;
        tail_draws += counts.contains(id) ? counts.at(id) : 0;
      }
    }
    const double expected_share = tail_mass / kept_mass, drawn_share = tail_draws / double(kDraws);
    CAPTURE(expected_share);
    CHECK(std::abs(drawn_share - expected_share) < 0.08 * expected_share);
  }
}

TEST_CASE("the same seed reproduces the same draws; another seed differs") {
  std::vector<float> logits(1000);
  for (std::size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<float>(i));
  SamplingOptions options;
  options.temperature = 0.8f;
  options.top_p = 0.9f;
  options.seed = 7;
  auto draw = [&](std::uint64_t seed) {
    options.seed = seed;
    Sampler sampler(options);
    std::vector<std::int32_t> ids;
    for (int i = 0; i < 50; ++i) ids.push_back(sampler.sample(logits));
    return ids;
  };
  CHECK(draw(7) == draw(7));
  CHECK(draw(7) != draw(8));
}

TEST_CASE("bad options and bad logits are errors") {
  SamplingOptions options;
  options.top_p = 0.0f;
  CHECK_THROWS_AS(Sampler{options}, Error);
  options = {};
  options.temperature = -1.0f;
  CHECK_THROWS_AS(Sampler{options}, Error);
  options = {};
  options.top_k = -3;
  CHECK_THROWS_AS(Sampler{options}, Error);
  Sampler sampler(SamplingOptions{});
  CHECK_THROWS_AS(sampler.sample(std::vector<float>{}), Error);
  CHECK_THROWS_AS(sampler.sample(std::vector<float>{1.0f, std::nanf("")}), Error);
}
