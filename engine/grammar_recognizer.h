// GrammarRecognizer: reads a text one byte at a time and refuses every byte after which the text
// could no longer match its Grammar, so that a sampler masked by it (engine/grammar_token_mask.h)
// can only write text of the grammar: JSON mode, a JSON schema.
//
// Its state is a set of stacks, one per way the text read so far can go on (the grammar may
// leave several open: after "12" a number may go on, or end). A stack holds places in the
// grammar, the innermost rule's on top: the top is always a byte set, the byte to read next,
// and below it each enclosing rule's rest. Reading a byte keeps the stacks whose top takes it,
// pops that top and expands what is now on top: a rule is replaced by each of its alternatives
// (one new stack per alternative; an empty alternative, or the end of one, uncovers the place
// below it). An empty stack means the text is a whole sentence of the grammar. This is the
// pushdown recognizer of llama.cpp's grammars, here over bytes.
// The stacks are kept sorted and without repeats, so two texts that stand at the same places
// have equal states whatever their strings held (GrammarTokenMask remembers its masks by state).
// Cost per byte: O(stacks * (depth + expansion)); a JSON grammar keeps a handful of stacks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/grammar.h"

namespace attnscope::engine {

class GrammarRecognizer {
 public:
  // At the start of `grammar`'s start rule; `grammar` must outlive this recognizer.
  explicit GrammarRecognizer(const Grammar& grammar);

  // Reads `byte`; false (the state unchanged) when no text of the grammar starts with the text
  // so far followed by it.
  bool accept(unsigned char byte);
  // Reads `bytes` in turn; false (the state unchanged) when one of them is refused.
  bool accept(std::string_view bytes);
  // Whether the text read is a whole sentence of the grammar.
  bool complete() const;
  // Whether it is a whole sentence that no byte can extend (a JSON object once closed).
  bool finished() const { return stacks_.size() == 1 && stacks_[0] == 0; }

  bool operator==(const GrammarRecognizer& other) const {
    return grammar_ == other.grammar_ && stacks_ == other.stacks_;
  }
  std::size_t hash() const;

 private:
  // Every stack that `stack` expands to (its top a byte set, or empty), appended to `out`;
  // `stack` is left as it was.
  void expand(std::vector<std::uint32_t>& stack, std::vector<std::uint32_t>& out) const;
  // Keeps the stacks of `found` (back to back, as stacks_), sorted and without repeats.
  void keep_canonical(const std::vector<std::uint32_t>& found);

  const Grammar* grammar_;
  // Every stack back to back: its size, then its places from the bottom to the top.
  std::vector<std::uint32_t> stacks_;
};

}  // namespace attnscope::engine
