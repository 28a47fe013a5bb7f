// runtime/log_probs.h: log-softmax, top-k log-probabilities, KL divergence and its Hoeffding
// bound, arg max.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "runtime/error.h"
#include "runtime/log_probs.h"

using namespace attnscope;

TEST_CASE("log_softmax matches the formula, stays finite for huge logits, refuses NaN") {
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f};
  const std::vector<double> log_p = log_softmax(logits);
  const double log_sum = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  for (std::size_t i = 0; i < logits.size(); ++i) {
    CHECK(log_p[i] == doctest::Approx(logits[i] - log_sum).epsilon(1e-15));
  }
  const std::vector<double> huge = log_softmax(std::vector<float>{1e30f, 1e30f});
  CHECK(huge[0] == doctest::Approx(-std::log(2.0)));
  CHECK_THROWS_AS(log_softmax(std::vector<float>{1.0f, NAN}), Error);
  CHECK_THROWS_AS(log_softmax(std::vector<float>{}), Error);
}

TEST_CASE("top_log_probs: most probable first, ties to the lower id, k clamped to the row") {
  const std::vector<double> log_p = {-3.0, -1.0, -2.0, -1.0};
  const auto top = top_log_probs(log_p, 3);
  REQUIRE(top.size() == 3);
  CHECK(top[0].first == 1);
  CHECK(top[1].first == 3);
  CHECK(top[2].first == 2);
  CHECK(top[2].second == -2.0);
  CHECK(top_log_probs(log_p, 0).empty());
  CHECK(top_log_probs(log_p, 10).size() == 4);
}

TEST_CASE("KL divergence: exactly 0 for equal rows, within (max |d|)^2 / 2 of perturbed ones") {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::uniform_real_distribution<float> noise(-1e-2f, 1e-2f);
  std::vector<float> base(500), perturbed(500);
  for (int trial = 0; trial < 20; ++trial) {
    double max_diff = 0.0;
    for (std::size_t i = 0; i < base.size(); ++i) {
      base[i] = normal(rng);
      perturbed[i] = base[i] + noise(rng);
      max_diff = std::max(max_diff, std::abs(static_cast<double>(perturbed[i]) - base[i]));
    }
    const std::vector<double> log_p = log_softmax(base);
    CHECK(kl_divergence(log_p, log_p) == 0.0);
    const double kl = kl_divergence(log_p, log_softmax(perturbed));
    CHECK(kl >= 0.0);
    CHECK(kl <= max_diff * max_diff / 2 + 1e-15);
  }
  // KL of two known distributions: P = (1/2, 1/2), Q = (1/4, 3/4).
  const std::vector<double> p = {std::log(0.5), std::log(0.5)};
  const std::vector<double> q = {std::log(0.25), std::log(0.75)};
  CHECK(kl_divergence(p, q) == doctest::Approx(0.5 * std::log(2.0) + 0.5 * std::log(2.0 / 3.0)));
}

TEST_CASE("arg_max takes the lowest index on ties") {
  CHECK(arg_max(std::vector<float>{1.0f, 5.0f, 5.0f, 2.0f}) == 1);
  CHECK_THROWS_AS(arg_max(std::vector<float>{}), Error);
}
