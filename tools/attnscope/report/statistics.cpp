// The percentile bootstrap of medians and ratios (tools/attnscope/report/statistics.h has the
// math).
#include "tools/attnscope/report/statistics.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace attnscope::cli {

namespace {

// The median of `values`, reordering them (nth_element: O(n)).
double median_in_place(std::vector<double>& values) {
  const std::size_t n = values.size(), mid = n / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (n % 2) return upper;
  const double lower =
      *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

// Fills `out` with a resample of `from` (n draws with replacement) and returns its median.
double resampled_median(const std::vector<double>& from, std::vector<double>& out,
                        std::mt19937_64& rng) {
  std::uniform_int_distribution<std::size_t> pick(0, from.size() - 1);
  out.resize(from.size());
  for (double& value : out) value = from[pick(rng)];
  return median_in_place(out);
}

Interval percentile_interval(std::vector<double>& statistics, double confidence) {
  std::sort(statistics.begin(), statistics.end());
  const double tail = (1.0 - confidence) / 2;
  return {quantile_of_sorted(statistics, tail), quantile_of_sorted(statistics, 1.0 - tail)};
}

}  // namespace

double Estimate::relative_width() const {
  return value == 0 ? 0.0 : (interval.high - interval.low) / value;
}

double median(std::vector<double> values) { return values.empty() ? 0.0 : median_in_place(values); }

double quantile_of_sorted(const std::vector<double>& sorted, double p) {
  const double position = std::clamp(p, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(position);
  if (below + 1 >= sorted.size()) return sorted.back();
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + fraction * (sorted[below + 1] - sorted[below]);
}

Estimate median_estimate(const std::vector<double>& samples, double confidence,
                         std::uint64_t seed) {
  Estimate estimate;
  if (samples.empty()) return estimate;
  estimate.value = median(samples);
  std::mt19937_64 rng(seed);
  std::vector<double> medians(kResamples), scratch;
  for (double& m : medians) m = resampled_median(samples, scratch, rng);
  estimate.interval = percentile_interval(medians, confidence);
  return estimate;
}

TimingStats summarize(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  TimingStats stats;
  if (n == 0) return stats;
  const Estimate median = median_estimate(values, 0.95);
  stats.median = median.value;
  stats.median_low = median.interval.low;
  stats.median_high = median.interval.high;
  stats.min = values.front();
  stats.max = values.back();
  double sum = 0;
  for (double v : values) sum += v;
  stats.mean = sum / static_cast<double>(n);
  double squares = 0;
  for (double v : values) squares += (v - stats.mean) * (v - stats.mean);
  stats.stddev = n > 1 ? std::sqrt(squares / static_cast<double>(n - 1)) : 0.0;
  return stats;
}

Estimate ratio_estimate(const std::vector<double>& numerator,
                        const std::vector<double>& denominator, double confidence,
                        std::uint64_t seed) {
  Estimate estimate;
  estimate.value = median(numerator) / median(denominator);
  std::mt19937_64 rng(seed);
  std::vector<double> ratios(kResamples), scratch;
  for (double& r : ratios) {
    const double top = resampled_median(numerator, scratch, rng);
    r = top / resampled_median(denominator, scratch, rng);
  }
  estimate.interval = percentile_interval(ratios, confidence);
  return estimate;
}

std::vector<PairRatio> pairwise_ratios(const std::vector<std::vector<double>>& cells,
                                       double confidence) {
  std::vector<PairRatio> pairs;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    for (std::size_t j = i + 1; j < cells.size(); ++j) {
      pairs.push_back({i, j, ratio_estimate(cells[j], cells[i], confidence)});
    }
  }
  return pairs;
}

double widest_relative_width(const std::vector<PairRatio>& pairs) {
  double widest = 0;
  for (const PairRatio& pair : pairs) widest = std::max(widest, pair.ratio.relative_width());
  return widest;
}

double per_interval_confidence(double family_confidence, int comparisons) {
  return 1.0 - (1.0 - family_confidence) / std::max(1, comparisons);
}

}  // namespace attnscope::cli
