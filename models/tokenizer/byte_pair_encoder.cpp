#include "models/tokenizer/byte_pair_encoder.h"

#include <limits>
#include <queue>
#include <tuple>

namespace attnscope::tokenizer {

BytePairEncoder::BytePairEncoder(SymbolAlphabet alphabet, MergeTable merges, MergeOrder order)
    : alphabet_(std::move(alphabet)), merges_(std::move(merges)), order_(order) {}

void BytePairEncoder::encode(std::string_view piece, std::vector<std::int32_t>& ids) const {
  if (cache_.append_cached(piece, ids)) return;
  std::vector<std::int32_t> piece_ids = merge_symbols(piece);
  ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
  cache_.store(piece, std::move(piece_ids));
}

std::vector<std::int32_t> BytePairEncoder::merge_symbols(std::string_view piece) const {
  std::vector<std::int32_t> first;
  alphabet_.split(piece, first);
  if (first.empty()) return first;
  // The piece as a doubly linked list of symbols. A merge keeps the left symbol, which becomes
  // the merged token, and unlinks the right one.
  constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
  struct Symbol {
    std::int32_t id;  // -1 once merged away
    std::size_t prev;
    std::size_t next;
  };
  std::vector<Symbol> symbols(first.size());
  for (std::size_t i = 0; i < first.size(); ++i) {
    symbols[i] = {first[i], i == 0 ? kNone : i - 1, i + 1 < first.size() ? i + 1 : kNone};
  }

  // A mergeable pair as it was when found; it may be stale by the time it is popped.
  struct Candidate {
    std::int32_t rank;
    std::size_t left;
    std::int32_t left_id;
    std::int32_t right_id;
    std::int32_t merged_id;
  };
  const auto comes_later = [](const Candidate& a, const Candidate& b) {
    return std::tie(a.rank, a.left) > std::tie(b.rank, b.left);
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(comes_later)> best_first(
      comes_later);
  std::vector<Candidate> next_round;  // rounds: pairs found during the current round
  const auto find_pair_at = [&](std::size_t left) {
    const std::size_t right = symbols[left].next;
    if (right == kNone) return;
    const auto merge = merges_.find(pair_key(symbols[left].id, symbols[right].id));
    if (merge == merges_.end()) return;
    const Candidate candidate{merge->second.rank, left, symbols[left].id, symbols[right].id,
                              merge->second.merged_id};
    if (order_ == MergeOrder::rounds) {
      next_round.push_back(candidate);
    } else {
      best_first.push(candidate);
    }
  };
  // Whether the pair recorded in `candidate` may still merge.
  const auto still_there = [&](const Candidate& candidate) {
    const Symbol& left = symbols[candidate.left];
    if (left.id < 0 || left.next == kNone) return false;
    const std::int32_t right_id = symbols[left.next].id;
    if (order_ == MergeOrder::rounds) {
      // A position's token only grows (merges make longer tokens), so when both positions still
      // hold the ids recorded, the pair is still there.
      return left.id == candidate.left_id && right_id == candidate.right_id;
    }
    const auto merge = merges_.find(pair_key(left.id, right_id));
    return merge != merges_.end() && merge->second.merged_id == candidate.merged_id;
  };
  for (std::size_t i = 0; i + 1 < symbols.size(); ++i) find_pair_at(i);

  std::int32_t round_rank = -1;
  while (true) {
    if (order_ == MergeOrder::rounds &&
        (best_first.empty() || best_first.top().rank != round_rank)) {
      for (const Candidate& candidate : next_round) best_first.push(candidate);
      next_round.clear();
      if (!best_first.empty()) round_rank = best_first.top().rank;
    }
    if (best_first.empty()) break;
    const Candidate pair = best_first.top();
    best_first.pop();
    if (!still_there(pair)) continue;
    Symbol& left = symbols[pair.left];
    const std::size_t right = left.next;
    left.id = pair.merged_id;
    left.next = symbols[right].next;
    if (left.next != kNone) symbols[left.next].prev = pair.left;
    symbols[right].id = -1;
    if (left.prev != kNone) find_pair_at(left.prev);
    find_pair_at(pair.left);
  }

  std::vector<std::int32_t> ids;
  for (std::size_t i = 0; i != kNone; i = symbols[i].next) ids.push_back(symbols[i].id);
  return ids;
}

}  // namespace attnscope::tokenizer
