// Log-softmax, top-k log-probabilities, KL divergence and arg max (runtime/log_probs.h).
#include "runtime/log_probs.h"

#include <algorithm>
#include <cmath>

#include "runtime/error.h"

namespace attnscope {

std::vector<double> log_softmax(std::span<const float> logits) {
  check(!logits.empty(), "log_softmax", "empty row of logits");
  double max = -INFINITY;
  for (float z : logits) {
    check(!std::isnan(z), "log_softmax", "NaN logit");
    max = std::max(max, static_cast<double>(z));
  }
  double sum = 0.0;
  for (float z : logits) sum += std::exp(static_cast<double>(z) - max);
  const double log_sum = std::log(sum);
  std::vector<double> out(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) {
    out[i] = (static_cast<double>(logits[i]) - max) - log_sum;
  }
  return out;
}

std::vector<std::pair<std::int32_t, double>> top_log_probs(std::span<const double> log_probs,
                                                           std::int64_t k) {
  std::vector<std::int32_t> ids(log_probs.size());
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int32_t>(i);
  const auto kept = static_cast<std::size_t>(
      std::clamp<std::int64_t>(k, 0, static_cast<std::int64_t>(ids.size())));
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(kept), ids.end(),
                    [&](std::int32_t a, std::int32_t b) {
                      const double pa = log_probs[static_cast<std::size_t>(a)];
                      const double pb = log_probs[static_cast<std::size_t>(b)];
                      return pa != pb ? pa > pb : a < b;
                    });
  std::vector<std::pair<std::int32_t, double>> top;
  for (std::size_t i = 0; i < kept; ++i) {
    top.emplace_back(ids[i], log_probs[static_cast<std::size_t>(ids[i])]);
  }
  return top;
}

double kl_divergence(std::span<const double> log_p, std::span<const double> log_q) {
  check(log_p.size() == log_q.size(), "kl_divergence", "the two rows differ in length");
  double kl = 0.0;
  for (std::size_t i = 0; i < log_p.size(); ++i) {
    // A token P gives no mass to adds nothing (0 log 0 = 0), whatever Q says.
    const double p = std::exp(log_p[i]);
    if (p > 0.0) kl += p * (log_p[i] - log_q[i]);
  }
  return kl;
}

std::int32_t arg_max(std::span<const float> values) {
  check(!values.empty(), "arg_max", "empty row");
  return static_cast<std::int32_t>(std::max_element(values.begin(), values.end()) - values.begin());
}

}  // namespace attnscope
