// Byte-pair encoding of one piece of text: start from its first symbols (one token per byte or
// per character, symbol_alphabet.h) and apply ranked merges of adjacent tokens until none
// applies. Serves GPT-2's vocab.json + merges.txt and Hugging Face's tokenizer.json alike.
//
// A heap of candidate pairs over a linked list of symbols makes a piece of m symbols cost
// O(m log m); pieces seen before come from a PieceCache.
//
// The two reference implementations order the merges slightly differently (MergeOrder). They
// agree whenever every merge ranks after the merges that make its two tokens, which BPE training
// guarantees; they differ only for hand-written merge lists.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "models/tokenizer/piece_cache.h"
#include "models/tokenizer/symbol_alphabet.h"

namespace attnscope::tokenizer {

// A pair of adjacent token ids as one hash key.
inline std::uint64_t pair_key(std::int32_t left, std::int32_t right) {
  return (std::uint64_t{static_cast<std::uint32_t>(left)} << 32) |
         static_cast<std::uint32_t>(right);
}

struct Merge {
  std::int32_t rank;       // 0 merges first
  std::int32_t merged_id;  // the token of the two joined
};

using MergeTable = std::unordered_map<std::uint64_t, Merge>;  // pair_key(left, right) -> merge

enum class MergeOrder {
  // OpenAI's encoder.py (and Hugging Face's Python GPT2Tokenizer): a round merges every
  // occurrence, left to right, of the best pair present when the round starts; pairs that these
  // merges create compete from the next round on.
  rounds,
  // The `tokenizers` library (Rust): always the best pair present, leftmost first, pairs just
  // created included. A queued pair whose position now holds a pair merging into another token
  // is stale and skipped.
  best_pair_first,
};

class BytePairEncoder {
 public:
  BytePairEncoder(SymbolAlphabet alphabet, MergeTable merges, MergeOrder order);

  // Appends the tokens of `piece` (any bytes) to `ids`. Thread-safe.
  void encode(std::string_view piece, std::vector<std::int32_t>& ids) const;

 private:
  std::vector<std::int32_t> merge_symbols(std::string_view piece) const;

  SymbolAlphabet alphabet_;
  MergeTable merges_;
  MergeOrder order_;
  PieceCache cache_;
};

}  // namespace attnscope::tokenizer
