// The float64 sum over a row that the normalisation ops (layer_norm, rms_norm) take of their
// inputs, in eight independent partial sums. One running sum is a chain of dependent additions,
// each waiting ~4 cycles for the one before: on a 768-wide row that chain, not memory, set the
// speed (pp512 of synthetic:gpt2 spent 2.7% of its time in layer_norm, 0.67 ms a call for
// 512 x 768 values, ~25x its memory traffic at the machine's bandwidth). Eight partial sums are
// one vector of doubles the compiler keeps in a register; they are added at the end. The order of
// the additions changes, not the precision: each partial sum is still float64.
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
