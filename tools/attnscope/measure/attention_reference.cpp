// Attention recomputed in float64 on the host (attention_reference.h).
#include "tools/attnscope/measure/attention_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/transfer.h"

namespace attnscope::cli {

namespace {

// Batch row 0 of `t` [B, H, rows, D] as host f32, keeping the first `kept` rows of each head.
std::vector<float> first_batch_row(Context& ctx, const Tensor& t, std::int64_t kept) {
  const Tensor host = to_host(ctx, t.slice_rows(0, 1)).to_dtype(DType::F32, ctx.host_allocator());
  const std::int64_t heads = t.dim(1), rows = t.dim(2), width = t.dim(3);
  std::vector<float> values;
  values.reserve(static_cast<std::size_t>(heads * kept * width));
  for (std::int64_t h = 0; h < heads; ++h) {
    const float* head = host.data<float>() + h * rows * width;
    values.insert(values.end(), head, head + kept * width);
  }
  return values;
}

}  // namespace

HostAttention copy_to_host(Context& ctx, const AttentionTap::Call& call) {
  HostAttention host;
  host.q_heads = call.q.dim(1);
  host.kv_heads = call.k.dim(1);
  host.q_len = call.q.dim(2);
  host.kv_len = call.kv_len;
  host.head_dim = call.q.dim(3);
  host.scale = call.scale;
  host.q = first_batch_row(ctx, call.q, host.q_len);
  host.k = first_batch_row(ctx, call.k, host.kv_len);
  host.v = first_batch_row(ctx, call.v, host.kv_len);
  host.out = first_batch_row(ctx, call.out, host.q_len);
  return host;
}

std::span<const float> HostAttention::q_row(std::int64_t head, std::int64_t row) const {
  return std::span(q).subspan(static_cast<std::size_t>((head * q_len + row) * head_dim),
                              static_cast<std::size_t>(head_dim));
}

std::span<const float> HostAttention::out_row(std::int64_t head, std::int64_t row) const {
  return std::span(out).subspan(static_cast<std::size_t>((head * q_len + row) * head_dim),
                                static_cast<std::size_t>(head_dim));
}

std::span<const float> HostAttention::keys_of(std::int64_t head) const {
  const std::int64_t kv_head = head / (q_heads / kv_heads);
  return std::span(k).subspan(static_cast<std::size_t>(kv_head * kv_len * head_dim),
                              static_cast<std::size_t>(kv_len * head_dim));
}

std::span<const float> HostAttention::values_of(std::int64_t head) const {
  const std::int64_t kv_head = head / (q_heads / kv_heads);
  return std::span(v).subspan(static_cast<std::size_t>(kv_head * kv_len * head_dim),
                              static_cast<std::size_t>(kv_len * head_dim));
}

SoftmaxRow softmax_row(const HostAttention& call, std::int64_t head, std::int64_t row) {
  const std::span<const float> q = call.q_row(head, row);
  const std::span<const float> keys = call.keys_of(head);
  const std::int64_t visible = call.position(row) + 1;
  const auto d = static_cast<std::size_t>(call.head_dim);
  SoftmaxRow result;
  result.probabilities.resize(static_cast<std::size_t>(visible));
  result.max = -std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < result.probabilities.size(); ++j) {
    double dot = 0;
    for (std::size_t x = 0; x < d; ++x) dot += double(q[x]) * double(keys[j * d + x]);
    result.probabilities[j] = call.scale * dot;
    result.max = std::max(result.max, result.probabilities[j]);
  }
  double sum = 0;
  for (double s : result.probabilities) sum += std::exp(s - result.max);
  result.log_sum_exp = result.max + std::log(sum);
  for (double& p : result.probabilities) p = std::exp(p - result.log_sum_exp);
  return result;
}

std::vector<double> reference_output(const HostAttention& call, std::int64_t head,
                                     const SoftmaxRow& softmax) {
  const std::span<const float> values = call.values_of(head);
  const auto d = static_cast<std::size_t>(call.head_dim);
  std::vector<double> out(d, 0.0);
  for (std::size_t j = 0; j < softmax.probabilities.size(); ++j) {
    for (std::size_t x = 0; x < d; ++x)
      out[x] += softmax.probabilities[j] * double(values[j * d + x]);
  }
  return out;
}

}  // namespace attnscope::cli
