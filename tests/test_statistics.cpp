// The bootstrap intervals of tools/attnscope/report/statistics.h against known distributions and an
// exact formula, and the finding rule of tools/attnscope/report/finding_rule.h.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tools/attnscope/report/finding_rule.h"
#include "tools/attnscope/report/statistics.h"

using namespace attnscope::cli;

namespace {

// The share of `trials` samples of size n, drawn by `draw`, whose 95% median interval contains
// `true_median`.
template <class Draw>
double median_coverage(int trials, int n, double true_median, Draw draw) {
  std::mt19937_64 rng(7);
  int covered = 0;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> sample(static_cast<std::size_t>(n));
    for (double& x : sample) x = draw(rng);
    covered +=
        median_estimate(sample, 0.95, static_cast<std::uint64_t>(t)).interval.contains(true_median);
  }
  return static_cast<double>(covered) / trials;
}

std::vector<double> one_to(int n) {
  std::vector<double> values;
  for (int i = 1; i <= n; ++i) values.push_back(i);
  return values;
}

}  // namespace

TEST_CASE("median and quantiles of known values") {
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({4, 1, 3, 2}) == 2.5);
  CHECK(median({}) == 0);
  const std::vector<double> sorted = {10, 20, 30, 40, 50};
  CHECK(quantile_of_sorted(sorted, 0.0) == 10);
  CHECK(quantile_of_sorted(sorted, 1.0) == 50);
  CHECK(quantile_of_sorted(sorted, 0.5) == 30);
  CHECK(quantile_of_sorted(sorted, 0.125) == doctest::Approx(15));  // position 0.5
}

TEST_CASE("the bootstrap interval of a median matches the exact binomial formula") {
  // For odd n, P(median of a resample <= x_(k)) = P(Binomial(n, k/n) >= (n+1)/2). For n = 9:
  // F(1) = 0.0014, F(2) = 0.0304, F(7) = 0.9696, F(8) = 0.9986, so the 2.5% and 97.5% points
  // are x_(2) and x_(8). For n = 15 at 90%: F(4) = 0.0255 < 0.05 <= F(5) = 0.0882 and
  // F(10) = 0.9118 < 0.95 <= F(11) = 0.9745, so x_(5) and x_(11).
  const Estimate nine = median_estimate(one_to(9), 0.95);
  CHECK(nine.value == 5);
  CHECK(nine.interval.low == 2);
  CHECK(nine.interval.high == 8);
  const Estimate fifteen = median_estimate(one_to(15), 0.90);
  CHECK(fifteen.interval.low == 5);
  CHECK(fifteen.interval.high == 11);
}

TEST_CASE("degenerate samples give degenerate intervals, and the seed makes them repeatable") {
  const Estimate single = median_estimate({4.0}, 0.95);
  CHECK(single.value == 4.0);
  CHECK(single.interval.low == 4.0);
  CHECK(single.interval.high == 4.0);
  const Estimate constant = ratio_estimate({6, 6, 6}, {2, 2, 2, 2}, 0.95);
  CHECK(constant.value == 3.0);
  CHECK(constant.interval.low == 3.0);
  CHECK(constant.interval.high == 3.0);
  const std::vector<double> sample = {1.2, 0.7, 3.1, 1.9, 2.2, 0.4, 1.1};
  CHECK(median_estimate(sample, 0.95).interval.low == median_estimate(sample, 0.95).interval.low);
  CHECK(median_estimate(sample, 0.95, 1).interval.high ==
        median_estimate(sample, 0.95, 1).interval.high);
}

TEST_CASE("95% median intervals cover the true median about 95% of the time") {
  // Normal(10, 1): median 10. Exponential(1): median ln 2, a skewed distribution like timings.
  std::normal_distribution<double> normal(10.0, 1.0);
  std::exponential_distribution<double> exponential(1.0);
  const double normal_coverage =
      median_coverage(200, 15, 10.0, [&](std::mt19937_64& rng) { return normal(rng); });
  const double exponential_coverage = median_coverage(
      200, 15, std::log(2.0), [&](std::mt19937_64& rng) { return exponential(rng); });
  CHECK(normal_coverage >= 0.90);
  CHECK(normal_coverage <= 0.995);
  CHECK(exponential_coverage >= 0.90);
  CHECK(exponential_coverage <= 0.995);
  // Wider intervals cover more: 99% must cover at least as often as 80% on the same samples.
  std::mt19937_64 rng(3);
  int wide = 0, narrow = 0;
  for (int t = 0; t < 100; ++t) {
    std::vector<double> sample(9);
    for (double& x : sample) x = exponential(rng);
    wide += median_estimate(sample, 0.99).interval.contains(std::log(2.0));
    narrow += median_estimate(sample, 0.80).interval.contains(std::log(2.0));
  }
  CHECK(wide > narrow);
  CHECK(static_cast<double>(narrow) / 100 < 0.93);  // 80% is not secretly 100%
}

TEST_CASE("ratio intervals cover the true ratio of medians") {
  std::exponential_distribution<double> exponential(1.0);
  std::mt19937_64 rng(11);
  int covered = 0;
  const int trials = 150;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> x(15), y(15);
    for (double& v : x) v = 10.0 + exponential(rng);
    for (double& v : y) v = 1.5 * (10.0 + exponential(rng));
    covered += ratio_estimate(y, x, 0.95, static_cast<std::uint64_t>(t)).interval.contains(1.5);
  }
  CHECK(static_cast<double>(covered) / trials >= 0.90);
}

TEST_CASE("the finding rule: only an interval excluding 1 is a win") {
  CHECK(verdict_of({1.01, 1.10}) == Verdict::FirstFaster);
  CHECK(verdict_of({0.80, 0.95}) == Verdict::SecondFaster);
  CHECK(verdict_of({0.98, 1.05}) == Verdict::Indistinguishable);
  CHECK(verdict_of({1.0, 1.2}) == Verdict::Indistinguishable);  // touching 1 is a tie
  CHECK(verdict_of({0.8, 1.0}) == Verdict::Indistinguishable);
  CHECK(could_differ_percent({0.9, 1.05}) == doctest::Approx(100.0 / 9.0));
  CHECK(could_differ_percent({0.99, 1.08}) == doctest::Approx(8.0));
  CHECK(verdict_name(Verdict::Indistinguishable) == "indistinguishable");
  CHECK(excludes_zero({0.5, 2.0}));
  CHECK_FALSE(excludes_zero({-0.5, 2.0}));
  CHECK(per_interval_confidence(0.95, 10) == doctest::Approx(0.995));
}

TEST_CASE("a tie is never called a win: identical cells, and cells from one distribution") {
  const std::vector<double> same = {20.1, 19.4, 22.0, 18.9, 20.5};
  CHECK(verdict_of(ratio_estimate(same, same, 0.95).interval) == Verdict::Indistinguishable);
  // Two cells drawn from the same skewed distribution: with the 10 pairs of 5 backends tested at
  // the Bonferroni level (99.5% each), a false win in any of 100 such pairs is rare.
  std::mt19937_64 rng(5);
  std::exponential_distribution<double> exponential(1.0);
  int wins = 0;
  const double level = per_interval_confidence(0.95, 10);
  for (int t = 0; t < 100; ++t) {
    std::vector<double> a(8), b(8);
    for (double& v : a) v = 18.0 + exponential(rng);
    for (double& v : b) v = 18.0 + exponential(rng);
    wins += verdict_of(ratio_estimate(b, a, level, static_cast<std::uint64_t>(t)).interval) !=
            Verdict::Indistinguishable;
  }
  CHECK(wins <= 2);
  // A real 20% difference is found.
  std::vector<double> fast(8), slow(8);
  for (double& v : fast) v = 10.0 + 0.1 * exponential(rng);
  for (double& v : slow) v = 12.0 + 0.1 * exponential(rng);
  CHECK(verdict_of(ratio_estimate(slow, fast, level).interval) == Verdict::FirstFaster);
}
