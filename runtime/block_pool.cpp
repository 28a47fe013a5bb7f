// The paged KV cache's bookkeeping (runtime/block_pool.h).
#include "runtime/block_pool.h"

#include <algorithm>
#include <string>

#include "runtime/error.h"

namespace attnscope {

namespace {

constexpr const char* kWhere = "kv blocks";

// FNV-1a, 64-bit, over the previous key's and the ids' bytes.
std::uint64_t fnv1a(std::uint64_t hash, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    hash ^= (value >> (8 * i)) & 0xFFu;
    hash *= 0x100000001B3ull;
  }
  return hash;
}

}  // namespace

BlockPool::BlockPool(std::int64_t block_count, std::int64_t block_tokens)
    : block_tokens_(block_tokens) {
  check(block_count >= 1 && block_tokens >= 1, kWhere,
        "a pool needs at least one block of at least one token, got " +
            std::to_string(block_count) + " of " + std::to_string(block_tokens));
  blocks_.resize(static_cast<std::size_t>(block_count));
  for (std::int64_t b = block_count - 1; b >= 0; --b) empty_.push_back(b);  // block 0 first
}

std::int64_t BlockPool::blocks_for(std::int64_t positions) const {
  return (positions + block_tokens_ - 1) / block_tokens_;
}

std::uint64_t BlockPool::key_of(std::uint64_t previous,
                                std::span<const std::int32_t> tokens) const {
  std::uint64_t hash = fnv1a(0xCBF29CE484222325ull, previous, 8);
  for (std::int32_t id : tokens) hash = fnv1a(hash, static_cast<std::uint32_t>(id), 4);
  return hash;
}

std::int64_t BlockPool::find_cached(std::uint64_t previous,
                                    std::span<const std::int32_t> tokens) const {
  const auto found = keyed_blocks_.find(key_of(previous, tokens));
  if (found == keyed_blocks_.end()) return -1;
  const Block& block = blocks_[static_cast<std::size_t>(found->second)];
  return std::ranges::equal(block.tokens, tokens) ? found->second : -1;
}

std::int64_t BlockPool::free_blocks() const {
  return static_cast<std::int64_t>(empty_.size() + lru_.size());
}

std::int64_t BlockPool::take_fresh_block() {
  std::int64_t block = -1;
  if (!empty_.empty()) {
    block = empty_.back();
    empty_.pop_back();
  } else {
    check(!lru_.empty(), kWhere, "no free block");  // callers check first
    block = lru_.begin()->second;
    lru_.erase(lru_.begin());
    Block& evicted = blocks_[static_cast<std::size_t>(block)];
    keyed_blocks_.erase(evicted.key);
    evicted.keyed = false;
    evicted.tokens.clear();
    ++evictions_;
  }
  blocks_[static_cast<std::size_t>(block)].holders = 1;
  return block;
}

void BlockPool::hold(std::int64_t block) {
  Block& b = blocks_[static_cast<std::size_t>(block)];
  if (b.holders == 0) lru_.erase({b.released_at, block});
  ++b.holders;
}

const BlockPool::Table& BlockPool::table(SequenceId id) const {
  const auto found = tables_.find(id);
  check(found != tables_.end(), kWhere, "no running sequence " + std::to_string(id));
  return found->second;
}

bool BlockPool::can_admit(std::span<const std::int32_t> prompt) const {
  if (prompt.empty()) return false;
  const auto length = static_cast<std::int64_t>(prompt.size());
  // Cached blocks that are free now count against the free ones: reusing takes them too.
  std::int64_t reused = 0, reused_free = 0;
  std::uint64_t previous = 0;
  for (std::int64_t b = 0; b < (length - 1) / block_tokens_; ++b) {
    const std::int64_t block =
        find_cached(previous, prompt.subspan(b * block_tokens_, block_tokens_));
    if (block < 0) break;
    ++reused;
    reused_free += blocks_[static_cast<std::size_t>(block)].holders == 0;
    previous = blocks_[static_cast<std::size_t>(block)].key;
  }
  return blocks_for(length) - reused + reused_free <= free_blocks();
}

std::int64_t BlockPool::admit(SequenceId id, std::span<const std::int32_t> prompt) {
  check(!tables_.contains(id), kWhere, "sequence " + std::to_string(id) + " is running already");
  check(!prompt.empty(), kWhere, "sequence " + std::to_string(id) + " has an empty prompt");
  check(can_admit(prompt), kWhere, [&] {
    return "a prompt of " + std::to_string(prompt.size()) + " tokens needs " +
           std::to_string(blocks_for(static_cast<std::int64_t>(prompt.size()))) + " blocks; " +
           std::to_string(free_blocks()) + " of " + std::to_string(blocks_.size()) + " are free";
  });
  const auto length = static_cast<std::int64_t>(prompt.size());
  Table table;
  for (std::int64_t b = 0; b < (length - 1) / block_tokens_; ++b) {
    ++prefix_lookups_;
    const std::int64_t block =
        find_cached(table.last_key, prompt.subspan(b * block_tokens_, block_tokens_));
    if (block < 0) break;
    hold(block);
    ++prefix_hits_;
    table.blocks.push_back(block);
    table.committed_blocks = b + 1;
    table.last_key = blocks_[static_cast<std::size_t>(block)].key;
  }
  while (static_cast<std::int64_t>(table.blocks.size()) < blocks_for(length)) {
    table.blocks.push_back(take_fresh_block());
  }
  const std::int64_t cached_tokens = table.committed_blocks * block_tokens_;
  table.written = cached_tokens;
  tables_.emplace(id, std::move(table));
  return cached_tokens;
}

bool BlockPool::can_grow(SequenceId id, std::int64_t positions) const {
  const auto held = static_cast<std::int64_t>(table(id).blocks.size());
  return blocks_for(positions) - held <= free_blocks();
}

void BlockPool::grow(SequenceId id, std::int64_t positions) {
  check(can_grow(id, positions), kWhere, [&] {
    return "sequence " + std::to_string(id) + " cannot grow to " + std::to_string(positions) +
           " positions: " + std::to_string(free_blocks()) + " blocks are free";
  });
  Table& t = tables_.at(id);
  while (static_cast<std::int64_t>(t.blocks.size()) < blocks_for(positions)) {
    t.blocks.push_back(take_fresh_block());
  }
}

void BlockPool::commit(SequenceId id, std::span<const std::int32_t> tokens) {
  table(id);  // throws for an unknown id
  Table& t = tables_.at(id);
  const auto written = static_cast<std::int64_t>(tokens.size());
  check(blocks_for(written) <= static_cast<std::int64_t>(t.blocks.size()), kWhere,
        "sequence " + std::to_string(id) + " committed more tokens than its blocks hold");
  t.written = std::max(t.written, written);
  const std::int64_t full = written / block_tokens_;
  for (std::int64_t b = t.committed_blocks; b < full; ++b) {
    const std::span<const std::int32_t> ids = tokens.subspan(b * block_tokens_, block_tokens_);
    const std::uint64_t key = key_of(t.last_key, ids);
    Block& block = blocks_[static_cast<std::size_t>(t.blocks[static_cast<std::size_t>(b)])];
    // A prefix already cached in another block (computed twice) keeps the first one.
    if (!keyed_blocks_.contains(key)) {
      keyed_blocks_.emplace(key, t.blocks[static_cast<std::size_t>(b)]);
      block.keyed = true;
      block.key = key;
      block.tokens.assign(ids.begin(), ids.end());
    }
    t.last_key = key;
    t.committed_blocks = b + 1;
  }
}

std::span<const std::int64_t> BlockPool::block_table(SequenceId id) const {
  return table(id).blocks;
}

void BlockPool::release(SequenceId id) {
  table(id);  // throws for an unknown id
  for (const std::int64_t block : tables_.at(id).blocks) {
    Block& b = blocks_[static_cast<std::size_t>(block)];
    if (--b.holders > 0) continue;
    if (b.keyed) {
      b.released_at = ++clock_;
      lru_.insert({b.released_at, block});
    } else {
      empty_.push_back(block);
    }
  }
  tables_.erase(id);
}

bool BlockPool::is_shared(std::int64_t block) const {
  check(block >= 0 && block < static_cast<std::int64_t>(blocks_.size()), kWhere,
        "no block " + std::to_string(block));
  return blocks_[static_cast<std::size_t>(block)].holders > 1;
}

BlockPool::Counters BlockPool::counters() const {
  Counters c;
  c.blocks = static_cast<std::int64_t>(blocks_.size());
  c.cached_free = static_cast<std::int64_t>(lru_.size());
  c.empty = static_cast<std::int64_t>(empty_.size());
  c.in_use = c.blocks - c.cached_free - c.empty;
  c.prefix_hits = prefix_hits_;
  c.prefix_lookups = prefix_lookups_;
  c.evictions = evictions_;
  for (const auto& [id, t] : tables_) {
    c.unwritten_positions += static_cast<std::int64_t>(t.blocks.size()) * block_tokens_ - t.written;
  }
  return c;
}

}  // namespace attnscope
