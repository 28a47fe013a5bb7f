// Grammar: a context-free grammar over bytes, the language a constrained reply must stay in
// (JSON mode and JSON schemas compile to one: engine/json_grammar.h). A rule is a list of
// alternatives; an alternative a sequence of symbols; a symbol is a set of bytes (one byte of
// the text) or another rule. An empty alternative makes a rule optional; repetition is a rule
// that ends with itself (digits ::= [0-9] digits | ""), so a rule never starts with itself.
//
// Stored flat for GrammarRecognizer: every alternative's symbols back to back in one array,
// each alternative closed by an end mark, so that a place in the grammar is one index (the
// symbol to read next) and "the rest of this alternative" is the index after it.
// Cost: 8 bytes per symbol, 32 per distinct byte set.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::engine {

class Grammar {
 public:
  using Rule = std::uint32_t;
  using ByteSet = std::bitset<256>;

  // One symbol of an alternative: a byte out of `bytes`, or a text of `rule`.
  struct Symbol {
    bool is_rule = false;
    Rule rule = 0;
    ByteSet bytes;
  };
  static Symbol byte(unsigned char b);
  static Symbol byte_range(unsigned char low, unsigned char high);
  static Symbol any_of(std::string_view bytes);
  static Symbol rule_symbol(Rule rule) { return {true, rule, {}}; }
  // The symbols of `text`, one byte each.
  static std::vector<Symbol> literal(std::string_view text);

  // A new rule without alternatives yet (so that rules can refer to each other before they are
  // filled in).
  Rule add_rule();
  // A new rule with these alternatives.
  Rule add_rule(const std::vector<std::vector<Symbol>>& alternatives);
  // x*: a new rule of zero or more x ("" | x, then itself).
  Rule add_repetition(const Symbol& x);
  // Adds an alternative to `rule` (empty: the rule may match nothing).
  void add_alternative(Rule rule, const std::vector<Symbol>& symbols);
  // The rule a whole text must match (the first one added, unless set).
  void set_start(Rule rule) { start_ = rule; }
  // Why a recognizer could not use this grammar, "" when it can: a rule reached from the start
  // that matches no text at all (a recognizer could then be led where no text can end), or one
  // that can begin with itself before reading a byte (expanding it would never end).
  std::string defect() const;

  // Read by GrammarRecognizer.
  enum class Kind : std::uint8_t { bytes, rule, end };
  struct Element {
    Kind kind;
    std::uint32_t index;  // bytes: into byte_sets_; rule: the rule
  };
  Rule start() const { return start_; }
  const Element& element(std::uint32_t place) const { return elements_[place]; }
  bool matches(std::uint32_t place, unsigned char b) const {
    return byte_sets_[elements_[place].index].test(b);
  }
  // Where each alternative of `rule` starts.
  const std::vector<std::uint32_t>& alternatives(Rule rule) const { return alternatives_[rule]; }
  std::size_t rules() const { return alternatives_.size(); }
  // Symbols stored, end marks included (the grammar's size).
  std::size_t size() const { return elements_.size(); }

 private:
  std::vector<Element> elements_;
  std::vector<ByteSet> byte_sets_;
  std::vector<std::vector<std::uint32_t>> alternatives_;
  Rule start_ = 0;
};

// The symbols of an alternative as the compilers build them: `a + b` appends b's symbols (or one
// symbol) to a's.
using Symbols = std::vector<Grammar::Symbol>;
Symbols operator+(Symbols a, const Symbols& b);
Symbols operator+(Symbols a, const Grammar::Symbol& b);

}  // namespace attnscope::engine
