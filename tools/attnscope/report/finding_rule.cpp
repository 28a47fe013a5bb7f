// The finding rule (tools/attnscope/report/finding_rule.h).
#include "tools/attnscope/report/finding_rule.h"

#include <algorithm>

namespace attnscope::cli {

Verdict verdict_of(const Interval& ratio) {
  if (ratio.low > 1.0) return Verdict::FirstFaster;
  if (ratio.high < 1.0) return Verdict::SecondFaster;
  return Verdict::Indistinguishable;
}

double could_differ_percent(const Interval& ratio) {
  const double first_faster_by = ratio.high - 1.0;
  const double second_faster_by = ratio.low > 0 ? 1.0 / ratio.low - 1.0 : 0.0;
  return 100.0 * std::max({first_faster_by, second_faster_by, 0.0});
}

std::string verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::FirstFaster:
      return "faster";
    case Verdict::SecondFaster:
      return "slower";
    case Verdict::Indistinguishable:
      break;
  }
  return "indistinguishable";
}

}  // namespace attnscope::cli
