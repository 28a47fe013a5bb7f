// BlockPool: the bookkeeping of a paged KV cache (PagedAttention, Kwon et al. 2023), the first
// piece of the engine of issue 26. The K/V tensors live elsewhere; this class decides which
// block of them holds which positions of which sequence.
//
// The pool has `block_count` blocks of `block_tokens` positions each. A sequence's block table
// lists its blocks in position order: position p lives in block table[p / block_tokens], at
// slot p % block_tokens.
//
// Prefix caching: a full block whose K/V are written (commit) is keyed by a hash chain,
//
//   key(block i) = hash(key(block i - 1), its block_tokens token ids)
//
// so equal keys mean equal prefixes. (Each hit also compares the stored ids, so a hash collision
// can never share wrong K/V.) A new sequence whose prompt starts with cached blocks reuses them:
// they are reference-counted and shared, and a shared block is never written (the writer's next
// position is always past them). A released block that holds a key stays cached, and is reused
// while it is free. When a fresh block is needed and none was ever used, the least recently
// released cached block is evicted.
//
// Every operation costs O(blocks it touches), plus O(log blocks) for the LRU set.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace attnscope {

class BlockPool {
 public:
  using SequenceId = std::int64_t;

  struct Counters {
    std::int64_t blocks = 0;          // the pool's size
    std::int64_t in_use = 0;          // held by at least one sequence
    std::int64_t cached_free = 0;     // held by none, keeping a reusable prefix
    std::int64_t empty = 0;           // held by none, holding nothing reusable
    std::int64_t prefix_hits = 0;     // blocks reused by admit
    std::int64_t prefix_lookups = 0;  // full prompt blocks admit looked up
    std::int64_t evictions = 0;       // cached blocks given to other positions
    // Positions that running sequences hold blocks for but have not written (commit) yet: the
    // tail of each one's last block, and blocks taken ahead of the next step. Shared blocks are
    // always full, so this is the pool's whole internal waste.
    std::int64_t unwritten_positions = 0;
  };

  // Throws Error unless both are >= 1.
  BlockPool(std::int64_t block_count, std::int64_t block_tokens);

  std::int64_t block_tokens() const { return block_tokens_; }
  // Blocks that hold `positions` positions.
  std::int64_t blocks_for(std::int64_t positions) const;

  // Whether admit(prompt) would find its blocks now.
  bool can_admit(std::span<const std::int32_t> prompt) const;
  // Starts sequence `id` with `prompt` (>= 1 token): reuses the cached blocks of its longest
  // cached prefix of whole blocks, but never the block of its last token (a step must compute at
  // least that token, whose logits start the generation), and takes fresh blocks for the rest of
  // the prompt. Returns how many leading tokens are already cached (their K/V need not be
  // computed). Throws Error when `id` is running already, or when the blocks are not there (no
  // change is made then).
  std::int64_t admit(SequenceId id, std::span<const std::int32_t> prompt);

  // Whether sequence `id` could grow to `positions` positions now.
  bool can_grow(SequenceId id, std::int64_t positions) const;
  // Makes room for `positions` positions (its length so far and the tokens of the next step),
  // taking fresh blocks as needed. Throws Error when they are not there (no change then).
  void grow(SequenceId id, std::int64_t positions);
  // Records that the K/V of tokens[0, tokens.size()) of sequence `id` are written: every full
  // block among them becomes cached under its prefix key, reusable by later prompts. Throws
  // Error when the tokens need more blocks than the sequence holds.
  void commit(SequenceId id, std::span<const std::int32_t> tokens);

  // The blocks of sequence `id`, in position order.
  std::span<const std::int64_t> block_table(SequenceId id) const;
  // Frees the blocks of sequence `id` (finished, cancelled or preempted): each block held by no
  // other sequence becomes free, keeping its key if it has one.
  void release(SequenceId id);

  // Whether `block` is held by more than one sequence (and so must not be written).
  bool is_shared(std::int64_t block) const;
  bool running(SequenceId id) const { return tables_.contains(id); }
  Counters counters() const;

 private:
  struct Block {
    int holders = 0;                   // sequences whose table lists it
    bool keyed = false;                // its key is in keyed_blocks_
    std::uint64_t key = 0;             // the prefix key (when keyed)
    std::vector<std::int32_t> tokens;  // the ids it holds (when keyed), checked on every hit
    std::uint64_t released_at = 0;     // when it last became free (for the LRU order)
  };
  struct Table {
    std::vector<std::int64_t> blocks;
    std::int64_t committed_blocks = 0;  // leading blocks already keyed by commit
    std::uint64_t last_key = 0;         // the key of the last committed block (0: none)
    std::int64_t written = 0;           // positions whose K/V are written (commit, or reused)
  };

  std::uint64_t key_of(std::uint64_t previous, std::span<const std::int32_t> tokens) const;
  // The cached block holding `tokens` after the prefix with key `previous`, or -1.
  std::int64_t find_cached(std::uint64_t previous, std::span<const std::int32_t> tokens) const;
  std::int64_t free_blocks() const;
  std::int64_t take_fresh_block();
  void hold(std::int64_t block);
  const Table& table(SequenceId id) const;

  std::int64_t block_tokens_;
  std::vector<Block> blocks_;
  std::vector<std::int64_t> empty_;                       // free, never keyed (or evicted)
  std::set<std::pair<std::uint64_t, std::int64_t>> lru_;  // free keyed blocks, oldest first
  std::unordered_map<std::uint64_t, std::int64_t> keyed_blocks_;
  std::map<SequenceId, Table> tables_;
  std::uint64_t clock_ = 0;
  std::int64_t prefix_hits_ = 0, prefix_lookups_ = 0, evictions_ = 0;
};

}  // namespace attnscope
