// The rule every report follows before it calls one thing faster than another.
//
// Two cells A and B are compared by the ratio r = median time of B / median time of A, with its
// bootstrap interval [low, high] (tools/attnscope/report/statistics.h). Then
//   low > 1   : A is faster (B takes at least `low` times as long),
//   high < 1  : B is faster,
//   otherwise : they are indistinguishable at this many repetitions. The interval still bounds
//               the difference: A could be faster by up to high - 1, or B by up to 1/low - 1, so
//               "could differ by up to" max(high - 1, 1/low - 1).
// A tie is never called a win: only an interval that excludes 1.0 lets a report say "faster" or
// "beats". The same rule, on a difference instead of a ratio, decides whether the profiler's
// overhead is distinguishable from zero (interval excludes 0).
#pragma once

#include <string>

#include "tools/attnscope/report/statistics.h"

namespace attnscope::cli {

enum class Verdict { FirstFaster, SecondFaster, Indistinguishable };

// The verdict for the ratio time(second) / time(first).
Verdict verdict_of(const Interval& ratio_second_over_first);

// How much the two could differ, in percent, as the interval allows: max(high - 1, 1/low - 1).
double could_differ_percent(const Interval& ratio);

// "faster", "slower" or "indistinguishable": machine-readable verdicts for the JSON.
std::string verdict_name(Verdict verdict);

// A signed quantity (the profiler's overhead in percent) is distinguishable from zero when its
// interval excludes 0.
inline bool excludes_zero(const Interval& interval) {
  return interval.low > 0 || interval.high < 0;
}

}  // namespace attnscope::cli
