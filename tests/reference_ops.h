// Float64 reference implementations for the op tests: the definitions written as plainly as
// possible, with no concern for speed, so the tests compare attnscope's ops against the math.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "runtime/tensor.h"

namespace attnscope::testing {

// u, the unit roundoff of f32 (round to nearest): the op tests' error bounds are multiples of it.
constexpr double kUnitRoundoff = 0x1p-24;

inline Tensor random_tensor(const Shape& shape, std::mt19937& rng, Allocator& allocator,
                            float scale = 1.0f) {
  Tensor t = Tensor::empty(shape, DType::F32, allocator);
  std::normal_distribution<float> normal(0.0f, scale);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(rng);
  return t;
}

inline std::vector<double> to_double(const Tensor& t) {
  return std::vector<double>(t.data<float>(), t.data<float>() + t.numel());
}

// t's values rounded to bf16 (to nearest, ties to even), kept in f32.
inline Tensor rounded_to_bf16(const Tensor& t, Allocator& allocator) {
  return t.to_dtype(DType::BF16, allocator).to_dtype(DType::F32, allocator);
}

// |t| elementwise, in f32.
inline Tensor magnitudes(const Tensor& t, Allocator& allocator) {
  Tensor out = t.to_dtype(DType::F32, allocator);
  for (std::int64_t i = 0; i < out.numel(); ++i)
    out.data<float>()[i] = std::abs(out.data<float>()[i]);
  return out;
}

// Attention whose softmax weights p were rounded to bf16 for P V (flash's bf16 products): the
// largest error of actual[i] against `expected` (float64 attention of the same rounded q, k and v)
// over i in [first, last), as a share of p's rounding's bound 2^-8 sum_j p_j |v_j| / sum_j p_j
// (`weight`: float64 attention of |v|) plus f32's noise. At most 1 when within the bound.
inline double share_of_rounded_p_bound(const Tensor& actual, const std::vector<double>& expected,
                                       const std::vector<double>& weight, std::size_t first,
                                       std::size_t last) {
  double worst = 0.0;
  for (std::size_t i = first; i < last; ++i) {
    const double bound = std::ldexp(weight[i], -8) + 1e-5 * (1.0 + weight[i]);
    worst = std::max(worst, std::abs(actual.data<float>()[i] - expected[i]) / bound);
  }
  return worst;
}

// Largest |a - b| / max(|b|, floor) over the elements; NaN when any output is NaN.
inline double max_relative_error(const Tensor& actual, const std::vector<double>& expected,
                                 double floor = 1e-3) {
  double worst = 0.0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double err =
        std::fabs(actual.data<float>()[i] - expected[i]) / std::max(std::fabs(expected[i]), floor);
    if (std::isnan(err) || err > worst) worst = err;  // a NaN output stays the worst
  }
  return worst;
}

// The causal softmax probabilities in float64, [B, Hq, Tq, kv_len]: softmax_j(scale q_i . k_j)
// over the keys j <= query i's position kv_len - Tq + i, and 0 beyond. q [B, Hq, Tq, D], k
// [B, Hkv, S, D] with kv_len valid rows.
inline std::vector<double> reference_probabilities(const Tensor& q, const Tensor& k,
                                                   std::int64_t kv_len, double scale) {
  const std::int64_t batch = q.dim(0), q_heads = q.dim(1), q_len = q.dim(2), d = q.dim(3);
  const std::int64_t kv_heads = k.dim(1), capacity = k.dim(2), group = q_heads / kv_heads;
  std::vector<double> probs(static_cast<std::size_t>(batch * q_heads * q_len * kv_len), 0.0);
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t h = 0; h < q_heads; ++h) {
      const float* keys = k.data<float>() + (b * kv_heads + h / group) * capacity * d;
      for (std::int64_t i = 0; i < q_len; ++i) {
        const float* qi = q.data<float>() + ((b * q_heads + h) * q_len + i) * d;
        double* row = probs.data() + ((b * q_heads + h) * q_len + i) * kv_len;
        const std::int64_t position = kv_len - q_len + i;
        double max_score = -INFINITY;
        for (std::int64_t j = 0; j <= position; ++j) {
          double dot = 0.0;
          for (std::int64_t x = 0; x < d; ++x) dot += double(qi[x]) * keys[j * d + x];
          row[j] = dot * scale;
          max_score = std::max(max_score, row[j]);
        }
        double sum = 0.0;
        for (std::int64_t j = 0; j <= position; ++j) sum += (row[j] = std::exp(row[j] - max_score));
        for (std::int64_t j = 0; j <= position; ++j) row[j] /= sum;
      }
    }
  }
  return probs;
}

// Causal attention in float64: q [B, Hq, Tq, D], k/v [B, Hkv, S, D] with kv_len valid rows.
inline std::vector<double> reference_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                               std::int64_t kv_len, double scale) {
  const std::int64_t batch = q.dim(0), q_heads = q.dim(1), q_len = q.dim(2), d = q.dim(3);
  const std::int64_t kv_heads = k.dim(1), capacity = k.dim(2), group = q_heads / kv_heads;
  std::vector<double> out(static_cast<std::size_t>(q.numel()), 0.0);
  const float* Q = q.data<float>();
  const float* K = k.data<float>();
  const float* V = v.data<float>();
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t h = 0; h < q_heads; ++h) {
      const std::int64_t kv_base = (b * kv_heads + h / group) * capacity * d;
      for (std::int64_t i = 0; i < q_len; ++i) {
        const std::int64_t position = kv_len - q_len + i;
        const float* qi = Q + ((b * q_heads + h) * q_len + i) * d;
        std::vector<double> scores(static_cast<std::size_t>(position + 1));
        double max_score = -INFINITY;
        for (std::int64_t j = 0; j <= position; ++j) {
          double dot = 0.0;
          for (std::int64_t x = 0; x < d; ++x) dot += double(qi[x]) * K[kv_base + j * d + x];
          scores[j] = dot * scale;
          max_score = std::max(max_score, scores[j]);
        }
        double sum = 0.0;
        for (double& s : scores) sum += (s = std::exp(s - max_score));
        double* o = out.data() + ((b * q_heads + h) * q_len + i) * d;
        for (std::int64_t j = 0; j <= position; ++j) {
          for (std::int64_t x = 0; x < d; ++x) o[x] += scores[j] / sum * V[kv_base + j * d + x];
        }
      }
    }
  }
  return out;
}

}  // namespace attnscope::testing
