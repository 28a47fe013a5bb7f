// Log-probabilities from logits, and the distances between two distributions that `generate
// --top-logprobs` and `perplexity` report. Host-side, on one row of f32 logits at a time; every
// sum runs in double, so a row of 50k logits loses nothing that f32 logits could show.
//
//   log_softmax:  log p_i = z_i - m - log sum_j exp(z_j - m),   m = max_j z_j (so no exp
//                 overflows; the largest term is exp(0) = 1, so the log never sees 0)
//   KL(P || Q)  = sum_i p_i (log p_i - log q_i) >= 0, in nats; exactly 0 when the two rows of
//                 logits are equal, since then every log p_i - log q_i is exactly 0.
//   Bound used by the tests: if the logits differ by d_i = z'_i - z_i with max_i |d_i| <= e, then
//   KL(P || Q) = log E_P[exp(d)] - E_P[d] <= (max d - min d)^2 / 8 <= e^2 / 2 (Hoeffding's lemma).
//
// Cost: O(V) per row; top_log_probs O(V log K).
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace attnscope {

// log p_i of softmax(logits). Throws Error for an empty row or a NaN logit.
std::vector<double> log_softmax(std::span<const float> logits);

// The k most probable tokens, most probable first (ties: the lower id first), as (id, log p).
std::vector<std::pair<std::int32_t, double>> top_log_probs(std::span<const double> log_probs,
                                                           std::int64_t k);

// KL(P || Q) in nats from the log-probabilities of P and of Q (same length).
double kl_divergence(std::span<const double> log_p, std::span<const double> log_q);

// The index of the largest value (the lowest one on ties); the row must not be empty.
std::int32_t arg_max(std::span<const float> values);

}  // namespace attnscope
