// Confidence intervals for timings: the percentile bootstrap of a median and of a ratio of two
// medians. Used by `compare`, `bench`, `bench-attention` and `study`
// (tools/attnscope/report/finding_rule.h decides what a report may call faster from these
// intervals).
//
// The math. A cell (one backend, one phase, one shape) has n repetition times x_1..x_n; its
// centre is the median m(x) (the mean of the two middle values when n is even). Times are
// skewed, with a long right tail from other processes, so we assume no distribution. The
// percentile bootstrap (Efron 1979) estimates the sampling distribution of m by resampling:
// draw B samples x* of size n from x with replacement, take m(x*) for each, and report the
// alpha/2 and 1 - alpha/2 quantiles of those B medians as the (1 - alpha) interval. For the
// ratio of two independent cells, r = m(y) / m(x), each resample draws x* from x and y* from y
// independently and records m(y*) / m(x*).
//
// A check the tests use: for odd n with distinct sorted values x_(1) < ... < x_(n), the median
// of a resample is <= x_(k) exactly when at least (n + 1) / 2 of its n draws are <= x_(k), so
//   P(m(x*) <= x_(k)) = P(Binomial(n, k / n) >= (n + 1) / 2),
// which gives the bootstrap interval's end points exactly, without resampling.
//
// Why the bootstrap: no normality assumption, the same method gives intervals for ratios, and
// it costs microseconds. It is made deterministic by a fixed seed: the same samples always give
// the same interval. Its limits: with n < 5 the resampled medians take only a few values and the
// interval is coarse (and its coverage below nominal), which is why the commands repeat at least
// 5 times by default; repetitions are assumed independent (interleaving the backends within each
// round spreads slow drifts over all of them alike instead of one).
//
// Cost: O(B n) per interval (nth_element per resample), B = kResamples.
#pragma once

#include <cstdint>
#include <vector>

namespace attnscope::cli {

inline constexpr int kResamples = 10000;
inline constexpr std::uint64_t kBootstrapSeed = 0x5eed2026;

struct Interval {
  double low = 0, high = 0;
  bool contains(double value) const { return low <= value && value <= high; }
};

// A point estimate with its confidence interval.
struct Estimate {
  double value = 0;
  Interval interval;
  // (high - low) / value: the interval's width relative to the estimate (0 when value is 0).
  double relative_width() const;
};

// The median; 0 for an empty vector.
double median(std::vector<double> values);

// The p-quantile (0 <= p <= 1) of sorted values, interpolating linearly between order statistics
// (position p (n - 1), "type 7"). `sorted` must not be empty.
double quantile_of_sorted(const std::vector<double>& sorted, double p);

// The median of `samples` with its percentile-bootstrap interval at `confidence` (e.g. 0.95).
// One sample gives the zero-width interval [x, x]; an empty vector gives all zeros.
Estimate median_estimate(const std::vector<double>& samples, double confidence,
                         std::uint64_t seed = kBootstrapSeed);

// median(numerator) / median(denominator) with its percentile-bootstrap interval, resampling
// both independently. Both vectors must be non-empty with positive medians.
Estimate ratio_estimate(const std::vector<double>& numerator,
                        const std::vector<double>& denominator, double confidence,
                        std::uint64_t seed = kBootstrapSeed);

// A timing's summary: the median with its 95% bootstrap interval, the extremes, the mean and
// the sample standard deviation (n - 1; zero for a single value). All zeros when empty.
struct TimingStats {
  double median = 0, min = 0, max = 0, mean = 0, stddev = 0;
  double median_low = 0, median_high = 0;  // the median's 95% bootstrap interval
};
TimingStats summarize(std::vector<double> values);

// One pair of cells i < j and the ratio median(cells[j]) / median(cells[i]) with its interval:
// above 1 when cell i is faster.
struct PairRatio {
  std::size_t first = 0, second = 0;
  Estimate ratio;
};
// Every pair of `cells` (each non-empty with a positive median), in order (0,1), (0,2), ...
std::vector<PairRatio> pairwise_ratios(const std::vector<std::vector<double>>& cells,
                                       double confidence);
// The widest Estimate::relative_width() of `pairs` (0 when empty).
double widest_relative_width(const std::vector<PairRatio>& pairs);

// The confidence each of `comparisons` intervals needs so that all hold together at
// `family_confidence` (Bonferroni: 1 - (1 - family_confidence) / comparisons).
double per_interval_confidence(double family_confidence, int comparisons);

}  // namespace attnscope::cli
