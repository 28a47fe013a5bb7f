// The float64 sum over a row that the normalisation ops (layer_norm, rms_norm) take of their
// inputs, in eight independent partial sums. One running sum is a chain of dependent additions,
// each waiting for the one before (~4 cycles): on a 768-wide row that chain, not memory, set the
// speed. Eight partial sums are vectors of doubles the compiler keeps in registers, added at the
// end. The order of the additions changes, not the precision: each partial sum is still float64.
// Measured (pp512, 2 threads, 3 interleaved rounds, docs/results/2026-12-01-cpu-emerald-rapids/
// layer-norm-ab.txt): synthetic:gpt2's 25 layer_norm calls 17.2 -> 5.8 ms, synthetic:smollm2-
// 135m's 61 rms_norm calls 18.0 -> 6.8 ms.
#pragma once

#include <cstdint>

namespace attnscope::ops::cpu {

// sum over c in [0, width) of term(c), in float64.
template <typename Term>
double row_sum(std::int64_t width, Term term) {
  constexpr int kLanes = 8;
  double lanes[kLanes] = {};
  std::int64_t c = 0;
  for (; c + kLanes <= width; c += kLanes) {
    for (int lane = 0; lane < kLanes; ++lane) lanes[lane] += term(c + lane);
  }
  double sum = 0.0;
  for (; c < width; ++c) sum += term(c);
  for (double lane : lanes) sum += lane;
  return sum;
}

}  // namespace attnscope::ops::cpu
