// Sampling: greedy, temperature, top-k, top-p; reproducible with a seed.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <map>
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
