// number_grammar: the texts of the numbers in a range, as grammar rules: JSON schema's minimum,
// maximum, exclusiveMinimum and exclusiveMaximum (json_grammar.h), and the two-digit fields of a
// date or a time.
//
// A range of whole numbers is written digit count by digit count, and within one digit count
// as fixed_width_range does: where the two bounds' digits part, the lower edge (the low bound's
// next digit, then anything from the rest of it up), the digits between (then any digits), the
// upper edge. So 17..342 is 1[7-9] | [2-9][0-9] | 1[0-9][0-9] | 2[0-9][0-9] | 3[0-3][0-9] |
// 34[0-2].
//
// Numbers that need not be whole are written as plain decimals, whole(.fraction)?, no exponent,
// with at most kNumberDigits significant digits (DBL_DIG): two different decimals that short
// read as two different doubles, so a reader that parses the reply into a double finds it inside
// the range too, even next to an exclusive bound (a longer 0.99999999999999999 would read as 1).
// The whole part is a range of whole numbers as above; after the low bound's whole part the
// fraction must be at least the bound's fraction, after the high bound's at most its fraction,
// after a whole part between the two any fraction. A fraction at least 0.375 is, digit by digit,
// [4-9] then anything, or 3 then at least 0.75; a fraction at most 0.375 is nothing, [0-2] then
// anything, or 3 then at most 0.75. The budget of digits shrinks as the digits are written.
// Cost: O(digits^2) alternatives for a range, O(kNumberDigits) rules for each bound's fraction.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/grammar.h"

namespace attnscope::engine {

// The significant digits a bounded number may have (a double's DBL_DIG). Its bounds lie
// strictly within +-10^kNumberDigits, so that their whole parts have at most that many digits.
inline constexpr int kNumberDigits = 15;

// Every decimal text of low.size() digits from `low` to `high` (as long as `low`).
std::vector<std::vector<Grammar::Symbol>> fixed_width_range(const std::string& low,
                                                            const std::string& high);

// One end of a range of numbers.
struct NumberBound {
  double value = 0;
  bool exclusive = false;
};

// The significant digits of x's shortest decimal text (0.125: 3; 1200: 4).
int significant_digits(double x);

// Adds to `grammar` the rule of the JSON texts of the integers from `low` to `high` (nullopt: no
// bound), both inclusive, without leading zeros or "-0". Needs |low|, |high| <= 1e17.
Grammar::Rule add_integer_range(Grammar& grammar, std::optional<long long> low,
                                std::optional<long long> high);

// Adds to `grammar` the rule of the plain decimal texts (described above) of the numbers x with
// low <= x <= high (< where exclusive; nullopt: no bound), nullopt when there is no such text.
// Needs the bounds' magnitudes below 10^kNumberDigits.
std::optional<Grammar::Rule> add_number_range(Grammar& grammar, std::optional<NumberBound> low,
                                              std::optional<NumberBound> high);

}  // namespace attnscope::engine
