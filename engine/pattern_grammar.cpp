// A JSON schema's pattern as grammar rules of the string contents it matches
// (pattern_grammar.h).
#include "engine/pattern_grammar.h"

#include <bitset>
#include <cctype>
#include <string>
#include <vector>

#include "runtime/error.h"

namespace attnscope::engine {
namespace {

using Rule = Grammar::Rule;
using Symbol = Grammar::Symbol;

constexpr long kMaxCount = 1024;

[[noreturn]] void refuse(std::string_view pattern, const std::string& what) {
  throw Error("json_schema", "pattern \"" + std::string(pattern) + "\": " + what);
}

// A set of ASCII characters (code points below 128).
using CharSet = std::bitset<128>;

CharSet range(char low, char high) {
  CharSet set;
  for (int c = low; c <= high; ++c) set.set(static_cast<std::size_t>(c));
  return set;
}

CharSet digits() { return range('0', '9'); }
CharSet word() { return range('a', 'z') | range('A', 'Z') | digits() | CharSet().set('_'); }
CharSet spaces() {
  CharSet set;
  for (const char c : {' ', '\t', '\n', '\r', '\v', '\f'}) set.set(static_cast<std::size_t>(c));
  return set;
}

class PatternCompiler {
 public:
  PatternCompiler(Grammar& grammar, std::string_view pattern)
      : grammar_(grammar), pattern_(pattern) {}

  Rule compile() {
    const Rule whole = alternatives(true);
    if (at_ < pattern_.size()) fail("an unmatched ')'");
    return whole;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    refuse(pattern_, what + " at offset " + std::to_string(at_));
  }
  bool more() const { return at_ < pattern_.size(); }
  char peek() const { return pattern_[at_]; }

  // One character of `set` as a JSON string writes it: printable ASCII raw but '"' and '\',
  // those two and the control characters escaped.
  Rule characters(const CharSet& set) {
    std::vector<Symbols> out;
    Symbol raw;
    for (std::size_t c = 0x20; c < 0x80; ++c) {
      if (set.test(c) && c != '"' && c != '\\') raw.bytes.set(c);
    }
    if (raw.bytes.any()) out.push_back({raw});
    if (set.test('"')) out.push_back(Grammar::literal("\\\""));
    if (set.test('\\')) out.push_back(Grammar::literal("\\\\"));
    static constexpr char kHex[] = "0123456789abcdef";
    for (std::size_t c = 0; c < 0x20; ++c) {
      if (!set.test(c)) continue;
      const std::string_view named = c == '\n'   ? "\\n"
                                     : c == '\t' ? "\\t"
                                     : c == '\r' ? "\\r"
                                     : c == '\b' ? "\\b"
                                     : c == '\f' ? "\\f"
                                                 : "";
      out.push_back(Grammar::literal(
          named.empty() ? std::string("\\u00") + kHex[c >> 4] + kHex[c & 15] : std::string(named)));
    }
    if (out.empty()) fail("a class no character matches");
    return grammar_.add_rule(out);
  }

  // alternatives := sequence ('|' sequence)*
  Rule alternatives(bool top) {
    std::vector<Symbols> out = {sequence(top)};
    while (more() && peek() == '|') {
      ++at_;
      out.push_back(sequence(top));
    }
    return grammar_.add_rule(out);
  }

  // sequence := ('^')? (atom quantifier?)* ('$')?, the anchors only at the top level; a side
  // without its anchor takes any (ASCII) characters there.
  Symbols sequence(bool top) {
    Symbols out;
    bool from_start = false;
    bool to_end = false;
    if (more() && peek() == '^') {
      if (!top) fail("'^' inside a group");
      from_start = true;
      ++at_;
    }
    while (more() && peek() != '|' && peek() != ')') {
      if (peek() == '$') {
        ++at_;
        if (!top || (more() && peek() != '|')) fail("'$' before the end");
        to_end = true;
        break;
      }
      const Symbol atom_symbol = atom();
      quantified(atom_symbol, out);
    }
    if (!top) return out;
    const Symbol anything =
        Grammar::rule_symbol(grammar_.add_repetition(Grammar::rule_symbol(characters(~CharSet()))));
    if (!from_start) out.insert(out.begin(), anything);
    if (!to_end) out.push_back(anything);
    return out;
  }

  // An atom followed by its quantifier, appended to `out`.
  void quantified(const Symbol& atom_symbol, Symbols& out) {
    long least = 1, most = 1;  // most < 0: no bound
    if (more() && (peek() == '?' || peek() == '*' || peek() == '+')) {
      const char q = pattern_[at_++];
      least = q == '+' ? 1 : 0;
      most = q == '?' ? 1 : -1;
    } else if (more() && peek() == '{') {
      read_count(least, most);
    }
    if (more() && peek() == '?' && (least != 1 || most != 1)) ++at_;  // lazy: the same strings
    for (long i = 0; i < least; ++i) out.push_back(atom_symbol);
    if (most < 0) {
      out.push_back(Grammar::rule_symbol(grammar_.add_repetition(atom_symbol)));
      return;
    }
    // Up to most - least more, each optional: rest_k ::= "" | x rest_{k-1}.
    Rule rest = grammar_.add_rule({{}});
    for (long i = least; i < most; ++i) {
      rest = grammar_.add_rule({{}, {atom_symbol, Grammar::rule_symbol(rest)}});
    }
    if (most > least) out.push_back(Grammar::rule_symbol(rest));
  }

  // {n}, {n,}, {n,m}
  void read_count(long& least, long& most) {
    ++at_;  // '{'
    const auto number = [&]() {
      const std::size_t start = at_;
      long n = 0;
      while (more() && peek() >= '0' && peek() <= '9') {
        n = n * 10 + (peek() - '0');
        if (n > kMaxCount) fail("a count above " + std::to_string(kMaxCount));
        ++at_;
      }
      if (at_ == start) fail("a malformed {n,m}");
      return n;
    };
    least = most = number();
    if (more() && peek() == ',') {
      ++at_;
      most = more() && peek() == '}' ? -1 : number();
    }
    if (!more() || peek() != '}') fail("a malformed {n,m}");
    ++at_;
    if (most >= 0 && most < least) fail("{n,m} with m below n");
  }

  Symbol atom() {
    const char c = pattern_[at_++];
    switch (c) {
      case '(': {
        if (more() && peek() == '?') {
          if (at_ + 1 < pattern_.size() && pattern_[at_ + 1] == ':') {
            at_ += 2;
          } else {
            fail("a lookaround or named group");
          }
        }
        const Rule inner = alternatives(false);
        if (!more() || peek() != ')') fail("an unclosed '('");
        ++at_;
        return Grammar::rule_symbol(inner);
      }
      case '[':
        return Grammar::rule_symbol(characters(char_class()));
      case '.':
        return Grammar::rule_symbol(characters(~(CharSet().set('\n').set('\r'))));
      case '\\': {
        const CharSet set = escape(false);
        return Grammar::rule_symbol(characters(set));
      }
      case '*':
      case '+':
      case '?':
      case '{':
        fail(std::string("a quantifier '") + c + "' with nothing before it");
      case '^':
        fail("'^' after the start");
      default:
        break;
    }
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x80) return Grammar::rule_symbol(characters(CharSet().set(byte)));
    // A non-ASCII character: its UTF-8 bytes as they are (the schema's text is UTF-8).
    std::string bytes(1, c);
    while (more() && (static_cast<unsigned char>(peek()) & 0xC0) == 0x80) bytes += pattern_[at_++];
    return Grammar::rule_symbol(grammar_.add_rule({Grammar::literal(bytes)}));
  }

  // After '\': the characters the escape stands for. In a class, \b is a backspace.
  CharSet escape(bool in_class) {
    if (!more()) fail("a '\\' at the end");
    const char c = pattern_[at_++];
    switch (c) {
      case 'd':
        return digits();
      case 'D':
        return ~digits();
      case 'w':
        return word();
      case 'W':
        return ~word();
      case 's':
        return spaces();
      case 'S':
        return ~spaces();
      case 't':
        return CharSet().set('\t');
      case 'n':
        return CharSet().set('\n');
      case 'r':
        return CharSet().set('\r');
      case 'f':
        return CharSet().set('\f');
      case 'v':
        return CharSet().set('\v');
      case 'x':
      case 'u': {
        const std::size_t width = c == 'x' ? 2 : 4;
        static constexpr std::string_view kHex = "0123456789abcdef";
        unsigned value = 0;
        for (std::size_t i = 0; i < width; ++i) {
          const std::size_t digit =
              more()
                  ? kHex.find(static_cast<char>(std::tolower(static_cast<unsigned char>(peek()))))
                  : std::string_view::npos;
          if (digit == std::string_view::npos) fail(std::string("a malformed \\") + c);
          value = value * 16 + static_cast<unsigned>(digit);
          ++at_;
        }
        if (value >= 0x80) fail("a non-ASCII \\" + std::string(1, c) + " escape");
        return CharSet().set(value);
      }
      case 'b':
        if (in_class) return CharSet().set('\b');
        fail("a word boundary \\b");
      default:
        break;
    }
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x80 && !std::isalnum(byte)) return CharSet().set(byte);  // an escaped symbol
    fail(std::string("the escape \\") + c);
  }

  // After '[': the class's characters, complemented for [^...].
  CharSet char_class() {
    const bool negated = more() && peek() == '^';
    if (negated) ++at_;
    CharSet set;
    while (more() && peek() != ']') {
      CharSet item = single();
      if (more() && peek() == '-' && at_ + 1 < pattern_.size() && pattern_[at_ + 1] != ']') {
        ++at_;
        const CharSet high = single();
        if (item.count() != 1 || high.count() != 1) fail("a range of a class escape");
        std::size_t low = 0, top = 0;
        while (!item.test(low)) ++low;
        while (!high.test(top)) ++top;
        if (top < low) fail("a range out of order");
        item = range(static_cast<char>(low), static_cast<char>(top));
      }
      set |= item;
    }
    if (!more()) fail("an unclosed '['");
    ++at_;  // ']'
    return negated ? ~set : set;
  }

  // One class member: a character, or an escape.
  CharSet single() {
    const char c = pattern_[at_++];
    if (c == '\\') return escape(true);
    if (static_cast<unsigned char>(c) >= 0x80) fail("a non-ASCII character in a class");
    return CharSet().set(static_cast<unsigned char>(c));
  }

  Grammar& grammar_;
  std::string_view pattern_;
  std::size_t at_ = 0;
};

}  // namespace

Grammar::Rule add_pattern_rules(Grammar& grammar, std::string_view pattern) {
  return PatternCompiler(grammar, pattern).compile();
}

}  // namespace attnscope::engine
