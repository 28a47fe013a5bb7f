// Attention recomputed on the host in float64, from the tensors an AttentionTap saw: what the
// attention map (a flash call's probabilities) and `diverge` (softmax statistics, each backend's
// own error) compare a backend's work against.
//
// For query row i of a head, at position p = kv_len - Tq + i, against the keys of its KV head
// (head h reads KV head h / (Hq / Hkv)):
//   s_j = scale * q_i . k_j  for j <= p (causal: later keys are masked)
//   m   = max_j s_j,  lse = m + log sum_j exp(s_j - m),  P_j = exp(s_j - lse)
//   out_i = sum_j P_j v_j
// Cost per row: (p + 1) D multiply-adds for the scores and as many for the output, in double.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/attention_tap.h"
#include "runtime/context.h"

namespace attnscope::cli {

// Batch row 0 of one attention call, copied to the host in f32 (from any device and dtype):
// q and out [Hq, Tq, D], and the kv_len valid rows of k and v [Hkv, kv_len, D].
struct HostAttention {
  std::int64_t q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
  double scale = 1.0;
  std::vector<float> q, k, v, out;

  std::int64_t position(std::int64_t row) const { return kv_len - q_len + row; }
  std::span<const float> q_row(std::int64_t head, std::int64_t row) const;
  std::span<const float> out_row(std::int64_t head, std::int64_t row) const;
  // The kv_len keys (or values) of the KV head that query head `head` reads, [kv_len, D].
  std::span<const float> keys_of(std::int64_t head) const;
  std::span<const float> values_of(std::int64_t head) const;
};
HostAttention copy_to_host(Context& ctx, const AttentionTap::Call& call);

// One query row's softmax over its visible keys, in float64.
struct SoftmaxRow {
  double max = 0;                     // m: the largest scaled score
  double log_sum_exp = 0;             // lse
  std::vector<double> probabilities;  // P_j for j <= p
};
SoftmaxRow softmax_row(const HostAttention& call, std::int64_t head, std::int64_t row);

// out_i of one query row in float64 from its softmax row ([D]).
std::vector<double> reference_output(const HostAttention& call, std::int64_t head,
                                     const SoftmaxRow& softmax);

}  // namespace attnscope::cli
