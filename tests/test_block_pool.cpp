// BlockPool (runtime/block_pool.h): blocks in position order, prefix reuse that never shares an
// unwritten or a last block, LRU eviction of released prefixes, refusals that change nothing,
// and random admissions, growth and releases checked against an independent count of holders.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "runtime/block_pool.h"
#include "runtime/error.h"

using attnscope::BlockPool;
using attnscope::Error;

namespace {

std::vector<std::int32_t> iota_tokens(std::int32_t first, std::size_t count) {
  std::vector<std::int32_t> ids(count);
  std::iota(ids.begin(), ids.end(), first);
  return ids;
}

}  // namespace

TEST_CASE("block pool: a sequence's blocks in position order, all free again after release") {
  BlockPool pool(8, 4);
  const std::vector<std::int32_t> prompt = iota_tokens(100, 6);  // 2 blocks
  CHECK(pool.admit(1, prompt) == 0);
  REQUIRE(pool.block_table(1).size() == 2);
  CHECK(pool.counters().in_use == 2);
  pool.grow(1, 8);  // still 2 blocks
  CHECK(pool.block_table(1).size() == 2);
  pool.grow(1, 9);  // position 8 opens block 3
  CHECK(pool.block_table(1).size() == 3);
  const std::set<std::int64_t> distinct(pool.block_table(1).begin(), pool.block_table(1).end());
  CHECK(distinct.size() == 3);
  pool.release(1);
  CHECK_FALSE(pool.running(1));
  const BlockPool::Counters c = pool.counters();
  CHECK(c.in_use == 0);
  CHECK(c.empty + c.cached_free == 8);
}

TEST_CASE("block pool: a committed prefix is shared, never its last block, never unwritten") {
  BlockPool pool(16, 4);
  std::vector<std::int32_t> a = iota_tokens(1, 10);  // blocks [1..4] [5..8] [9 10]
  CHECK(pool.admit(1, a) == 0);
  // Not committed yet: a second sequence with the same prompt reuses nothing.
  CHECK(pool.admit(2, a) == 0);
  pool.release(2);
  pool.commit(1, a);  // the two full blocks become cached
  std::vector<std::int32_t> b = a;
  b.push_back(99);
  CHECK(pool.admit(3, b) == 8);  // both full blocks reused
  CHECK(pool.block_table(3)[0] == pool.block_table(1)[0]);
  CHECK(pool.block_table(3)[1] == pool.block_table(1)[1]);
  CHECK(pool.block_table(3)[2] != pool.block_table(1)[2]);  // the partial block is its own
  CHECK(pool.is_shared(pool.block_table(1)[0]));
  CHECK_FALSE(pool.is_shared(pool.block_table(3)[2]));
  // A prompt of exactly two blocks reuses only the first: its last token must be computed.
  CHECK(pool.admit(4, std::vector<std::int32_t>(a.begin(), a.begin() + 8)) == 4);
  // A different second block stops the reuse after the first.
  std::vector<std::int32_t> c = a;
  c[5] = 77;
  CHECK(pool.admit(5, c) == 4);
  CHECK(pool.counters().prefix_hits == 2 + 1 + 1);
}

TEST_CASE("block pool: released prefixes stay cached and the oldest is evicted first") {
  BlockPool pool(4, 2);
  const std::vector<std::int32_t> first = {1, 2, 3}, second = {4, 5, 6};
  pool.admit(1, first);
  pool.commit(1, first);  // block {1, 2} cached
  pool.release(1);
  pool.admit(2, second);
  pool.commit(2, second);  // block {4, 5} cached, released after {1, 2}
  pool.release(2);
  CHECK(pool.counters().cached_free == 2);
  // Reuse while free: {1, 2} comes back from the cache.
  CHECK(pool.admit(3, std::vector<std::int32_t>{1, 2, 9}) == 2);
  pool.release(3);  // {1, 2} is now the most recently released
  // Four fresh blocks: the 2 empty ones, then {4, 5} (the older), then {1, 2}.
  pool.admit(4, iota_tokens(50, 6));
  CHECK(pool.counters().evictions == 1);
  CHECK_FALSE(pool.can_admit(std::vector<std::int32_t>{1, 2, 9}));  // no block for the 9
  pool.release(4);
  // {1, 2} survived the eviction, {4, 5} did not.
  CHECK(pool.admit(5, std::vector<std::int32_t>{1, 2, 9}) == 2);
  CHECK(pool.admit(6, std::vector<std::int32_t>{4, 5, 6}) == 0);
}

TEST_CASE("block pool: refusals name the shortfall and change nothing") {
  BlockPool pool(3, 4);
  CHECK_THROWS_WITH_AS(BlockPool(0, 16), doctest::Contains("at least one block"), Error);
  CHECK_FALSE(pool.can_admit(iota_tokens(0, 13)));  // 4 blocks of 3
  CHECK_THROWS_WITH_AS(pool.admit(1, iota_tokens(0, 13)),
                       doctest::Contains("needs 4 blocks; 3 of 3 are free"), Error);
  CHECK_FALSE(pool.running(1));
  CHECK(pool.counters().empty == 3);
  pool.admit(1, iota_tokens(0, 8));
  CHECK_THROWS_WITH_AS(pool.admit(1, iota_tokens(0, 1)), doctest::Contains("running already"),
                       Error);
  CHECK_FALSE(pool.can_grow(1, 13));
  CHECK_THROWS_WITH_AS(pool.grow(1, 13), doctest::Contains("cannot grow to 13"), Error);
  CHECK(pool.block_table(1).size() == 2);
  CHECK_THROWS_WITH_AS(pool.release(7), doctest::Contains("no running sequence 7"), Error);
  CHECK_THROWS_AS(pool.admit(2, std::vector<std::int32_t>{}), Error);
}

TEST_CASE("block pool: random traffic keeps every block accounted for") {
  // An independent count: holders per block from the tables, and each block in use by one
  // sequence unless it is a committed full block of a shared prefix.
  std::mt19937 rng(7);
  BlockPool pool(24, 4);
  std::map<BlockPool::SequenceId, std::vector<std::int32_t>> tokens;
  const std::vector<std::int32_t> shared_prefix = iota_tokens(1000, 8);
  BlockPool::SequenceId next_id = 0;
  for (int step = 0; step < 2000; ++step) {
    const int action = std::uniform_int_distribution<int>(0, 3)(rng);
    if (action == 0 || tokens.empty()) {  // admit, half of them with the shared prefix
      std::vector<std::int32_t> prompt;
      if (rng() % 2) prompt = shared_prefix;
      const int extra = std::uniform_int_distribution<int>(1, 10)(rng);
      for (int i = 0; i < extra; ++i) prompt.push_back(static_cast<std::int32_t>(rng() % 50));
      if (!pool.can_admit(prompt)) continue;
      const std::int64_t cached = pool.admit(next_id, prompt);
      CHECK(cached < static_cast<std::int64_t>(prompt.size()));
      CHECK(cached % pool.block_tokens() == 0);
      pool.commit(next_id, prompt);
      tokens[next_id++] = prompt;
    } else if (action == 1) {  // decode one token of a random sequence
      auto it = std::next(tokens.begin(), static_cast<long>(rng() % tokens.size()));
      const auto length = static_cast<std::int64_t>(it->second.size());
      if (!pool.can_grow(it->first, length + 1)) continue;
      pool.grow(it->first, length + 1);
      // The block written next is never shared.
      const std::int64_t written = pool.block_table(it->first)[length / pool.block_tokens()];
      CHECK_FALSE(pool.is_shared(written));
      it->second.push_back(static_cast<std::int32_t>(rng() % 50));
      pool.commit(it->first, it->second);
    } else {  // finish or cancel
      auto it = std::next(tokens.begin(), static_cast<long>(rng() % tokens.size()));
      pool.release(it->first);
      tokens.erase(it);
    }
    std::map<std::int64_t, int> holders;
    for (const auto& [id, ids] : tokens) {
      CHECK(static_cast<std::int64_t>(pool.block_table(id).size()) >=
            pool.blocks_for(static_cast<std::int64_t>(ids.size())));
      for (std::int64_t block : pool.block_table(id)) ++holders[block];
    }
    const BlockPool::Counters c = pool.counters();
    REQUIRE(c.in_use == static_cast<std::int64_t>(holders.size()));
    REQUIRE(c.in_use + c.cached_free + c.empty == c.blocks);
    for (const auto& [block, count] : holders) CHECK(pool.is_shared(block) == (count > 1));
  }
  for (const auto& [id, ids] : tokens) pool.release(id);
  CHECK(pool.counters().in_use == 0);
  CHECK(pool.counters().prefix_hits > 0);
}
