// How the 16-bit GPU suites of both families (tests/test_cuda_model.cpp,
// tests/test_cuda_llama.cpp) compare logits with a fixture's f32 reference: each row (one
// position of one sequence) at its own scale. In bf16 a logit near 0 is off by about as much as
// a large one of its row (the error comes from the rounding of everything the row was computed
// from), so its own relative error says little; the row's rms is the scale of that error.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

namespace attnscope::testing {

// The worst over rows of rms(actual - expected) / rms(expected) and of
// max |actual - expected| / rms(expected); infinite when a logit is NaN. `actual` is
// [batch, length, vocab] flattened, `expected` a reference.json's logits [batch][length][vocab].
struct RowErrors {
  double rms = 0.0;
  double largest = 0.0;
};
inline RowErrors worst_row_errors(const std::vector<float>& actual, const nlohmann::json& expected,
                                  std::int64_t batch, std::int64_t length, std::int64_t vocab) {
  RowErrors worst;
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t t = 0; t < length; ++t) {
      const auto& row = expected[b][t];
      double error_squares = 0.0, squares = 0.0, largest = 0.0;
      for (std::int64_t v = 0; v < vocab; ++v) {
        const double e = row[v].get<double>();
        const double a = actual[static_cast<std::size_t>((b * length + t) * vocab + v)];
        if (std::isnan(a)) return {INFINITY, INFINITY};
        error_squares += (a - e) * (a - e);
        squares += e * e;
        largest = std::max(largest, std::fabs(a - e));
      }
      const double scale = std::sqrt(squares / static_cast<double>(vocab));
      worst.rms =
          std::max(worst.rms, std::sqrt(error_squares / static_cast<double>(vocab)) / scale);
      worst.largest = std::max(worst.largest, largest / scale);
    }
  }
  return worst;
}

}  // namespace attnscope::testing
