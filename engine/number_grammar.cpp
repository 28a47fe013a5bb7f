// Ranges of numbers as grammar rules (number_grammar.h).
#include "engine/number_grammar.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>

namespace attnscope::engine {
namespace {

using Rule = Grammar::Rule;
using Symbol = Grammar::Symbol;

Symbol ref(Rule rule) { return Grammar::rule_symbol(rule); }
Symbols lit(std::string_view text) { return Grammar::literal(text); }

const Symbol kDigit = Grammar::byte_range('0', '9');

int digit_count(long long n) { return static_cast<int>(std::to_string(n).size()); }
long long nines(int digits) {  // 10^digits - 1
  long long n = 0;
  for (int d = 0; d < digits; ++d) n = n * 10 + 9;
  return n;
}

void fixed_width_range(const std::string& low, const std::string& high, const Symbols& prefix,
                       std::vector<Symbols>& out) {
  if (low.empty()) {
    out.push_back(prefix);
    return;
  }
  const auto first_low = static_cast<unsigned char>(low[0]);
  const auto first_high = static_cast<unsigned char>(high[0]);
  const std::string rest_low = low.substr(1), rest_high = high.substr(1);
  if (first_low == first_high) {
    fixed_width_range(rest_low, rest_high, prefix + Grammar::byte(first_low), out);
    return;
  }
  // A lower edge of all zeros takes every digit string after first_low, and an upper edge of
  // all nines every one after first_high: both join the digits between (so 100..999 is one
  // alternative, not 2^digits).
  const bool low_is_zeros = rest_low.find_first_not_of('0') == std::string::npos;
  const bool high_is_nines = rest_high.find_first_not_of('9') == std::string::npos;
  const std::size_t rest = rest_low.size();
  if (!low_is_zeros) {
    fixed_width_range(rest_low, std::string(rest, '9'), prefix + Grammar::byte(first_low), out);
  }
  const unsigned char from = low_is_zeros ? first_low : first_low + 1;
  const unsigned char to = high_is_nines ? first_high : first_high - 1;
  if (from <= to) {
    Symbols middle = prefix + Grammar::byte_range(from, to);
    middle.insert(middle.end(), rest, kDigit);
    out.push_back(middle);
  }
  if (!high_is_nines) {
    fixed_width_range(std::string(rest, '0'), rest_high, prefix + Grammar::byte(first_high), out);
  }
}

// Calls visit(d, from, to) for each digit count d, with the whole numbers of d digits from `low`
// to `high` (0 <= low <= high) being from..to.
template <class Visit>
void by_digit_count(long long low, long long high, Visit visit) {
  long long power = 1;  // 10^(d-1)
  for (int d = 1; d <= digit_count(high); ++d, power *= 10) {
    const long long from = std::max(low, d == 1 ? 0LL : power);
    const long long to = std::min(high, power * 10 - 1);
    if (from <= to) visit(d, from, to);
  }
}

// Every text, without leading zeros, of a whole number from `low` (>= 0) to `high` (nullopt: no
// bound; then `digits` is the rule [0-9]*).
std::vector<Symbols> whole_numbers(long long low, std::optional<long long> high, Rule digits) {
  std::vector<Symbols> out;
  const int fewest = digit_count(low);
  by_digit_count(low, high ? *high : nines(fewest), [&](int, long long from, long long to) {
    fixed_width_range(std::to_string(from), std::to_string(to), {}, out);
  });
  if (!high) {  // and every number with more digits
    Symbols longer = {Grammar::byte_range('1', '9')};
    longer.insert(longer.end(), static_cast<std::size_t>(fewest), kDigit);
    out.push_back(longer + ref(digits));
  }
  return out;
}

// |x| in decimal: its whole part and the digits of its fraction, without trailing zeros.
struct Decimal {
  long long whole = 0;
  std::string fraction;

  explicit Decimal(double x) {
    char text[512];  // |x| >= 2^-1074 has at most ~330 fraction digits in its shortest form
    const auto [end, error] =
        std::to_chars(text, text + sizeof text, std::fabs(x), std::chars_format::fixed);
    const std::string_view written(text, error == std::errc() ? end - text : 0);
    const std::size_t point = written.find('.');
    std::from_chars(written.data(), written.data() + std::min(point, written.size()), whole);
    if (point != std::string_view::npos) fraction = written.substr(point + 1);
    while (!fraction.empty() && fraction.back() == '0') fraction.pop_back();
  }
  auto operator<=>(const Decimal&) const = default;  // the fractions compare as digit strings
};

// One end of a range of magnitudes.
struct Edge {
  Decimal at;
  bool exclusive = false;
};

// A set of digit strings (the digits after a decimal point, as far as they go): whether the
// empty one is in it, and the others as alternatives that each start with a digit.
struct Tails {
  bool empty_too = false;
  std::vector<Symbols> starting_with_digit;
  bool none() const { return !empty_too && starting_with_digit.empty(); }
};

// The decimal texts of magnitudes in a range, with the rules of free digits shared.
class MagnitudeRanges {
 public:
  explicit MagnitudeRanges(Grammar& grammar) : grammar_(grammar) {}

  // whole(.fraction)? with low <= value <= high (nullopt: below 10^kNumberDigits).
  std::vector<Symbols> texts(const Edge& low, const std::optional<Edge>& high) {
    std::vector<Symbols> out;
    if (high && (high->at < low.at || (high->at == low.at && (low.exclusive || high->exclusive)))) {
      return out;
    }
    const auto with_fractions = [&](const Symbols& whole, const Tails& fractions) {
      if (fractions.empty_too) out.push_back(whole);
      if (!fractions.starting_with_digit.empty()) {
        out.push_back(whole + Grammar::byte('.') +
                      ref(grammar_.add_rule(fractions.starting_with_digit)));
      }
    };
    const long long low_whole = low.at.whole;
    if (high && high->at.whole == low_whole) {
      with_fractions(lit(std::to_string(low_whole)),
                     between(low.at.fraction, high->at.fraction, budget(low_whole), low.exclusive,
                             high->exclusive));
      return out;
    }
    with_fractions(lit(std::to_string(low_whole)),
                   at_least(low.at.fraction, budget(low_whole), low.exclusive));
    const long long first = low_whole + 1;
    const long long last = high ? high->at.whole - 1 : kLargestWhole;
    if (first <= last) {
      by_digit_count(first, last, [&](int d, long long from, long long to) {
        std::vector<Symbols> wholes;
        fixed_width_range(std::to_string(from), std::to_string(to), {}, wholes);
        for (const Symbols& whole : wholes) with_fractions(whole, any_digits(kNumberDigits - d));
      });
    }
    if (high) {
      with_fractions(lit(std::to_string(high->at.whole)),
                     at_most(high->at.fraction, budget(high->at.whole), high->exclusive));
    }
    return out;
  }

 private:
  static constexpr long long kLargestWhole = 999'999'999'999'999;  // nines(kNumberDigits)

  // The fraction digits left after a whole part: a zero whole part spends none.
  static int budget(long long whole) {
    return whole == 0 ? kNumberDigits : kNumberDigits - digit_count(whole);
  }

  // [0-9]{0,budget}
  Tails any_digits(int budget) {
    if (budget == 0) return {true, {}};
    return {true, {{kDigit, any_digits_rule(budget - 1)}}};
  }
  // 0{0,budget}
  Tails zeros(int budget) {
    if (budget == 0) return {true, {}};
    return {true, {{Grammar::byte('0'), zeros_rule(budget - 1)}}};
  }
  // [0-9]{1,budget} with a digit other than 0: a fraction above zero.
  Tails some_nonzero(int budget) {
    Tails out;
    if (budget == 0) return out;
    out.starting_with_digit.push_back({Grammar::byte_range('1', '9'), any_digits_rule(budget - 1)});
    if (budget > 1) {
      out.starting_with_digit.push_back({Grammar::byte('0'), some_nonzero_rule(budget - 1)});
    }
    return out;
  }

  // Fractions (as digit strings) at least 0.`fraction` (above it where exclusive).
  Tails at_least(const std::string& fraction, int budget, bool exclusive) {
    if (fraction.empty()) return exclusive ? some_nonzero(budget) : any_digits(budget);
    Tails out;
    if (budget == 0) return out;
    const auto first = static_cast<unsigned char>(fraction[0]);
    if (first < '9') {
      out.starting_with_digit.push_back(
          {Grammar::byte_range(first + 1, '9'), any_digits_rule(budget - 1)});
    }
    followed_by(out, first, at_least(fraction.substr(1), budget - 1, exclusive));
    return out;
  }

  // Fractions at most 0.`fraction` (below it where exclusive).
  Tails at_most(const std::string& fraction, int budget, bool exclusive) {
    if (fraction.empty()) return exclusive ? Tails{} : zeros(budget);
    Tails out{true, {}};
    if (budget == 0) return out;
    const auto first = static_cast<unsigned char>(fraction[0]);
    if (first > '0') {
      out.starting_with_digit.push_back(
          {Grammar::byte_range('0', first - 1), any_digits_rule(budget - 1)});
    }
    followed_by(out, first, at_most(fraction.substr(1), budget - 1, exclusive));
    return out;
  }

  // Fractions from 0.`low` to 0.`high` (low <= high as digit strings).
  Tails between(const std::string& low, const std::string& high, int budget, bool low_exclusive,
                bool high_exclusive) {
    if (low.empty() && !low_exclusive) return at_most(high, budget, high_exclusive);
    if (high.empty()) return {};  // low is 0, exclusive, and so is high
    Tails out;
    if (budget == 0) return out;
    const auto first_low = static_cast<unsigned char>(low.empty() ? '0' : low[0]);
    const auto first_high = static_cast<unsigned char>(high[0]);
    const std::string rest_low = low.empty() ? "" : low.substr(1), rest_high = high.substr(1);
    if (first_low == first_high) {
      followed_by(out, first_low,
                  between(rest_low, rest_high, budget - 1, low_exclusive, high_exclusive));
      return out;
    }
    followed_by(out, first_low, at_least(rest_low, budget - 1, low_exclusive));
    if (first_low + 1 < first_high) {
      out.starting_with_digit.push_back(
          {Grammar::byte_range(first_low + 1, first_high - 1), any_digits_rule(budget - 1)});
    }
    followed_by(out, first_high, at_most(rest_high, budget - 1, high_exclusive));
    return out;
  }

  // Adds `digit` then any of `rest` to `out`, unless `rest` is empty.
  void followed_by(Tails& out, unsigned char digit, const Tails& rest) {
    if (rest.none()) return;
    out.starting_with_digit.push_back({Grammar::byte(digit), ref(rule_of(rest))});
  }

  // The rules of any_digits, zeros and some_nonzero, each made once for a budget.
  Symbol any_digits_rule(int budget) {
    return cached(any_digits_, budget, [&] { return any_digits(budget); });
  }
  Symbol zeros_rule(int budget) {
    return cached(zeros_, budget, [&] { return zeros(budget); });
  }
  Symbol some_nonzero_rule(int budget) {
    return cached(some_nonzero_, budget, [&] { return some_nonzero(budget); });
  }
  template <class Make>
  Symbol cached(std::vector<std::optional<Rule>>& rules, int budget, Make make) {
    auto& rule = rules[static_cast<std::size_t>(budget)];
    if (!rule) rule = rule_of(make());
    return ref(*rule);
  }
  Rule rule_of(const Tails& tails) {
    std::vector<Symbols> alternatives = tails.starting_with_digit;
    if (tails.empty_too) alternatives.push_back({});
    return grammar_.add_rule(alternatives);
  }

  Grammar& grammar_;
  using Cache = std::vector<std::optional<Rule>>;  // [budget]
  Cache any_digits_ = Cache(kNumberDigits + 1), zeros_ = Cache(kNumberDigits + 1),
        some_nonzero_ = Cache(kNumberDigits + 1);
};

}  // namespace

std::vector<Symbols> fixed_width_range(const std::string& low, const std::string& high) {
  std::vector<Symbols> out;
  fixed_width_range(low, high, {}, out);
  return out;
}

int significant_digits(double x) {
  const Decimal d(x);
  if (d.whole != 0) return digit_count(d.whole) + static_cast<int>(d.fraction.size());
  const std::size_t first = d.fraction.find_first_not_of('0');
  return first == std::string::npos ? 0 : static_cast<int>(d.fraction.size() - first);
}

Rule add_integer_range(Grammar& grammar, std::optional<long long> low,
                       std::optional<long long> high) {
  const Rule digits = grammar.add_repetition(kDigit);
  std::vector<Symbols> alternatives;
  if (!high || *high >= 0) {
    alternatives = whole_numbers(low ? std::max(*low, 0LL) : 0, high, digits);
  }
  if (!low || *low < 0) {  // -m for m from max(1, -high) to -low
    const long long least = high ? std::max(1LL, -std::min(*high, -1LL)) : 1;
    std::optional<long long> most;
    if (low) most = -*low;
    for (Symbols& magnitude : whole_numbers(least, most, digits)) {
      alternatives.push_back(lit("-") + magnitude);
    }
  }
  return grammar.add_rule(alternatives);
}

std::optional<Rule> add_number_range(Grammar& grammar, std::optional<NumberBound> low,
                                     std::optional<NumberBound> high) {
  MagnitudeRanges ranges(grammar);
  std::vector<Symbols> alternatives;
  if (!high || high->value >= 0) {  // x >= 0: magnitudes from max(low, 0) to high
    const Edge from = low && low->value >= 0 ? Edge{Decimal(low->value), low->exclusive}
                                             : Edge{Decimal(0.0), false};
    std::optional<Edge> to;
    if (high) to = Edge{Decimal(high->value), high->exclusive};
    alternatives = ranges.texts(from, to);
  }
  if (!low || low->value < 0) {  // x < 0: "-" and magnitudes above 0 (no "-0"), from -high to -low
    const Edge from = high && high->value < 0 ? Edge{Decimal(high->value), high->exclusive}
                                              : Edge{Decimal(0.0), true};
    std::optional<Edge> to;
    if (low) to = Edge{Decimal(low->value), low->exclusive};
    for (const Symbols& magnitude : ranges.texts(from, to)) {
      alternatives.push_back(lit("-") + magnitude);
    }
  }
  if (alternatives.empty()) return std::nullopt;
  return grammar.add_rule(alternatives);
}

}  // namespace attnscope::engine
