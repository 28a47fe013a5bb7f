// What the GPU model suites of both families (tests/test_cuda_model.cpp,
// tests/test_cuda_llama.cpp) share on top of model_checks.h: a fixture's prefill on the device,
// and the f32 parity measure with NaN counted as infinitely wrong (greedy tokens that must equal
// the fixture's exactly are model_checks.h's check_greedy_equals_reference).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "model_checks.h"
#include "models/language_model.h"

namespace attnscope::testing {

// The logits [B, T, V] of one prefill over `prefill`'s rows with every position kept, on the
// model's device (a fresh cache holds exactly the prefill).
inline Tensor prefill_logits(Context& ctx, const LanguageModel& model, const Prefill& prefill) {
  KVCache cache = model.new_cache(ctx, prefill.batch, prefill.length);
  return model.forward(ctx, prefill.ids, prefill.batch, cache, true);
}

// Worst |actual - expected| / max(|expected|, 1) over every logit of every row; infinite when a
// logit is NaN. `actual` is [batch, length, vocab] flattened, `expected` a reference.json's
// logits [batch][length][vocab].
inline double worst_relative_error(const std::vector<float>& actual, const nlohmann::json& expected,
                                   std::int64_t batch, std::int64_t length, std::int64_t vocab) {
  double worst = 0.0;
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t t = 0; t < length; ++t) {
      const auto& row = expected[b][t];
      for (std::int64_t v = 0; v < vocab; ++v) {
        const double e = row[v].get<double>();
        const double a = actual[static_cast<std::size_t>((b * length + t) * vocab + v)];
        if (std::isnan(a)) return INFINITY;
        worst = std::max(worst, std::fabs(a - e) / std::max(std::fabs(e), 1.0));
      }
    }
  }
  return worst;
}

}  // namespace attnscope::testing
