// A context-free grammar over bytes, stored flat (grammar.h).
#include "engine/grammar.h"

#include <algorithm>

namespace attnscope::engine {

Grammar::Symbol Grammar::byte(unsigned char b) { return byte_range(b, b); }

Grammar::Symbol Grammar::byte_range(unsigned char low, unsigned char high) {
  Symbol symbol;
  for (unsigned b = low; b <= high; ++b) symbol.bytes.set(b);
  return symbol;
}

Grammar::Symbol Grammar::any_of(std::string_view bytes) {
  Symbol symbol;
  for (const char b : bytes) symbol.bytes.set(static_cast<unsigned char>(b));
  return symbol;
}

std::vector<Grammar::Symbol> Grammar::literal(std::string_view text) {
  std::vector<Symbol> symbols;
  for (const char b : text) symbols.push_back(byte(static_cast<unsigned char>(b)));
  return symbols;
}

Grammar::Rule Grammar::add_rule() {
  alternatives_.emplace_back();
  return static_cast<Rule>(alternatives_.size() - 1);
}

Grammar::Rule Grammar::add_rule(const std::vector<std::vector<Symbol>>& alternatives) {
  const Rule rule = add_rule();
  for (const std::vector<Symbol>& symbols : alternatives) add_alternative(rule, symbols);
  return rule;
}

Grammar::Rule Grammar::add_repetition(const Symbol& x) {
  const Rule rule = add_rule();
  add_alternative(rule, {});
  add_alternative(rule, {x, rule_symbol(rule)});
  return rule;
}

void Grammar::add_alternative(Rule rule, const std::vector<Symbol>& symbols) {
  alternatives_[rule].push_back(static_cast<std::uint32_t>(elements_.size()));
  for (const Symbol& symbol : symbols) {
    if (symbol.is_rule) {
      elements_.push_back({Kind::rule, symbol.rule});
      continue;
    }
    auto known = std::find(byte_sets_.begin(), byte_sets_.end(), symbol.bytes);
    if (known == byte_sets_.end()) {
      byte_sets_.push_back(symbol.bytes);
      known = byte_sets_.end() - 1;
    }
    elements_.push_back({Kind::bytes, static_cast<std::uint32_t>(known - byte_sets_.begin())});
  }
  elements_.push_back({Kind::end, 0});
}

std::string Grammar::defect() const {
  // Which rules match the empty text, and which match some text: least fixed points, found by
  // a worklist in time linear in the grammar's size. An alternative waits on each rule it
  // refers to (a byte waits for ever for nullable, never for productive); once none is left,
  // its rule is marked, and the alternatives waiting on that rule wait on one fewer.
  const auto fixed_point = [&](bool bytes_count) {
    std::vector<bool> marked(rules(), false);
    std::vector<Rule> owner;             // [alternative]: its rule
    std::vector<std::uint32_t> waiting;  // [alternative]: symbols not yet satisfied
    std::vector<std::vector<std::uint32_t>> waits_on(rules());  // [rule]: alternatives
    std::vector<Rule> newly_marked;
    for (Rule rule = 0; rule < rules(); ++rule) {
      for (std::uint32_t place : alternatives_[rule]) {
        const auto alternative = static_cast<std::uint32_t>(owner.size());
        owner.push_back(rule);
        std::uint32_t count = 0;
        for (; elements_[place].kind != Kind::end; ++place) {
          if (elements_[place].kind == Kind::rule) {
            waits_on[elements_[place].index].push_back(alternative);
            ++count;
          } else if (!bytes_count) {
            count = ~0U / 2;  // a byte: never satisfied
          }
        }
        waiting.push_back(count);
        if (count == 0 && !marked[rule]) {
          marked[rule] = true;
          newly_marked.push_back(rule);
        }
      }
    }
    while (!newly_marked.empty()) {
      const Rule rule = newly_marked.back();
      newly_marked.pop_back();
      for (const std::uint32_t alternative : waits_on[rule]) {
        if (--waiting[alternative] == 0 && !marked[owner[alternative]]) {
          marked[owner[alternative]] = true;
          newly_marked.push_back(owner[alternative]);
        }
      }
    }
    return marked;
  };
  const std::vector<bool> nullable = fixed_point(false);
  const std::vector<bool> productive = fixed_point(true);
  // The rules each rule can begin with: those before which only empty texts can stand.
  const auto leading = [&](Rule rule) {
    std::vector<Rule> found;
    for (std::uint32_t place : alternatives_[rule]) {
      for (; elements_[place].kind == Kind::rule; ++place) {
        found.push_back(elements_[place].index);
        if (!nullable[elements_[place].index]) break;
      }
    }
    return found;
  };
  // Depth-first from the start over every rule reference; a leading reference back to a rule
  // still being visited along leading references is a left recursion.
  enum class Mark : std::uint8_t { unseen, open, done };
  std::vector<Mark> leading_mark(rules(), Mark::unseen);
  std::vector<bool> reached(rules(), false);
  std::vector<Rule> to_visit{start_};
  reached[start_] = true;
  std::string found;
  const auto visit_leading = [&](auto& self, Rule rule) -> void {
    leading_mark[rule] = Mark::open;
    for (const Rule next : leading(rule)) {
      if (leading_mark[next] == Mark::open) found = "a rule can begin with itself";
      if (leading_mark[next] == Mark::unseen) self(self, next);
    }
    leading_mark[rule] = Mark::done;
  };
  bool unproductive = false;  // some reached rule matches no text
  while (!to_visit.empty() && found.empty()) {
    const Rule rule = to_visit.back();
    to_visit.pop_back();
    if (leading_mark[rule] == Mark::unseen) visit_leading(visit_leading, rule);
    unproductive = unproductive || !productive[rule];
    for (const std::uint32_t alternative : alternatives_[rule]) {
      for (std::uint32_t place = alternative; elements_[place].kind != Kind::end; ++place) {
        const Element& e = elements_[place];
        if (e.kind == Kind::rule && !reached[e.index]) {
          reached[e.index] = true;
          to_visit.push_back(e.index);
        }
      }
    }
  }
  if (found.empty() && unproductive) found = "a rule matches no text";
  return found;
}

Symbols operator+(Symbols a, const Symbols& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Symbols operator+(Symbols a, const Grammar::Symbol& b) {
  a.push_back(b);
  return a;
}

}  // namespace attnscope::engine
