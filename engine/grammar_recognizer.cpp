// The pushdown recognizer of a byte grammar (grammar_recognizer.h).
#include "engine/grammar_recognizer.h"

#include <algorithm>
#include <span>

namespace attnscope::engine {

namespace {

// Buffers accept() reuses from call to call, one set per thread: a token mask's walk reads
// millions of bytes, and allocating for each would cost more than the reading.
struct Scratch {
  std::vector<std::uint32_t> stack;  // the stack being expanded
  std::vector<std::uint32_t> next;   // the stacks found, back to back
  std::vector<std::span<const std::uint32_t>> sorted;
};
thread_local Scratch scratch;

}  // namespace

GrammarRecognizer::GrammarRecognizer(const Grammar& grammar) : grammar_(&grammar) {
  std::vector<std::uint32_t> found;
  std::vector<std::uint32_t> stack;
  for (const std::uint32_t alternative : grammar.alternatives(grammar.start())) {
    if (grammar.element(alternative).kind != Grammar::Kind::end) stack.push_back(alternative);
    expand(stack, found);
    stack.clear();
  }
  keep_canonical(found);
}

void GrammarRecognizer::expand(std::vector<std::uint32_t>& stack,
                               std::vector<std::uint32_t>& out) const {
  if (stack.empty() || grammar_->element(stack.back()).kind != Grammar::Kind::rule) {
    out.push_back(static_cast<std::uint32_t>(stack.size()));
    out.insert(out.end(), stack.begin(), stack.end());
    return;
  }
  // The rest of the alternative the rule stands in stays below; each of the rule's own
  // alternatives goes on top of it in turn. The stack is left as it was found.
  const std::uint32_t place = stack.back();
  stack.pop_back();
  const bool rest = grammar_->element(place + 1).kind != Grammar::Kind::end;
  if (rest) stack.push_back(place + 1);
  for (const std::uint32_t alternative : grammar_->alternatives(grammar_->element(place).index)) {
    const bool empty = grammar_->element(alternative).kind == Grammar::Kind::end;
    if (!empty) stack.push_back(alternative);
    expand(stack, out);
    if (!empty) stack.pop_back();
  }
  if (rest) stack.pop_back();
  stack.push_back(place);
}

void GrammarRecognizer::keep_canonical(const std::vector<std::uint32_t>& found) {
  std::vector<std::span<const std::uint32_t>>& sorted = scratch.sorted;
  sorted.clear();
  for (std::size_t at = 0; at < found.size(); at += 1 + found[at]) {
    sorted.emplace_back(found.data() + at + 1, found[at]);
  }
  const auto less = [](std::span<const std::uint32_t> a, std::span<const std::uint32_t> b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  };
  const auto same = [](std::span<const std::uint32_t> a, std::span<const std::uint32_t> b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  };
  std::sort(sorted.begin(), sorted.end(), less);
  sorted.erase(std::unique(sorted.begin(), sorted.end(), same), sorted.end());
  stacks_.clear();
  for (const auto stack : sorted) {
    stacks_.push_back(static_cast<std::uint32_t>(stack.size()));
    stacks_.insert(stacks_.end(), stack.begin(), stack.end());
  }
}

bool GrammarRecognizer::accept(unsigned char byte) {
  std::vector<std::uint32_t>& next = scratch.next;
  std::vector<std::uint32_t>& stack = scratch.stack;
  next.clear();
  for (std::size_t at = 0; at < stacks_.size(); at += 1 + stacks_[at]) {
    const std::uint32_t size = stacks_[at];
    if (size == 0) continue;
    const std::uint32_t top = stacks_[at + size];
    if (!grammar_->matches(top, byte)) continue;
    stack.assign(stacks_.begin() + static_cast<std::ptrdiff_t>(at + 1),
                 stacks_.begin() + static_cast<std::ptrdiff_t>(at + size));
    if (grammar_->element(top + 1).kind != Grammar::Kind::end) stack.push_back(top + 1);
    expand(stack, next);
  }
  if (next.empty()) return false;
  keep_canonical(next);
  return true;
}

bool GrammarRecognizer::accept(std::string_view bytes) {
  GrammarRecognizer next = *this;
  for (const char byte : bytes) {
    if (!next.accept(static_cast<unsigned char>(byte))) return false;
  }
  *this = next;
  return true;
}

bool GrammarRecognizer::complete() const {
  for (std::size_t at = 0; at < stacks_.size(); at += 1 + stacks_[at]) {
    if (stacks_[at] == 0) return true;
  }
  return false;
}

std::size_t GrammarRecognizer::hash() const {
  std::uint64_t mixed = 0xCBF29CE484222325ull;  // FNV-1a over the words
  for (const std::uint32_t word : stacks_) mixed = (mixed ^ word) * 0x100000001B3ull;
  return static_cast<std::size_t>(mixed);
}

}  // namespace attnscope::engine
