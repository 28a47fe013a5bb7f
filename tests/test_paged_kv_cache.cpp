// PagedKVCache (runtime/paged_kv_cache.h): the blocks' shapes and bytes, a budget turned into
// blocks, and the usage counters (reserved, used, wasted) as sequences come and go.
#include <doctest/doctest.h>

#include <numeric>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/error.h"
#include "runtime/paged_kv_cache.h"

using namespace attnscope;

TEST_CASE("paged kv cache: blocks per layer, a budget in blocks, reserved / used / wasted bytes") {
  CpuAllocator allocator;
  const PagedKVCache::Geometry geometry{/*layers=*/3, /*kv_heads=*/2, /*head_dim=*/8,
                                        /*block_tokens=*/4, DType::F32};
  // One position: 2 (K and V) x 3 layers x 2 heads x 8 floats = 384 bytes; a block, 4 of them.
  CHECK(geometry.position_bytes() == 384);
  CHECK(geometry.block_bytes() == 1536);
  CHECK(PagedKVCache::blocks_within(geometry, 10 * 1536 + 1535) == 10);
  PagedKVCache cache(geometry, 10, allocator);
  CHECK(cache.key_blocks(2).shape() == Shape{10, 2, 4, 8});
  CHECK(cache.value_blocks(0).shape() == Shape{10, 2, 4, 8});
  CHECK(allocator.current_bytes() == 10 * 1536);  // all of it up front

  std::vector<std::int32_t> prompt(6);
  std::iota(prompt.begin(), prompt.end(), 1);
  cache.pool().admit(1, prompt);  // 2 blocks, none written yet
  PagedKVCache::Usage usage = cache.usage();
  CHECK(usage.reserved_bytes == 10 * 1536);
  CHECK(usage.used_bytes == 2 * 1536);
  CHECK(usage.wasted_bytes == 8 * 384);
  cache.pool().commit(1, prompt);  // 6 of the 8 positions written
  CHECK(cache.usage().wasted_bytes == 2 * 384);
  cache.pool().grow(1, 9);  // a third block taken ahead of the next step
  CHECK(cache.usage().wasted_bytes == 6 * 384);
  cache.pool().release(1);
  usage = cache.usage();
  CHECK(usage.used_bytes == 0);
  CHECK(usage.wasted_bytes == 0);
  CHECK_THROWS_AS(PagedKVCache(PagedKVCache::Geometry{0, 2, 8, 4, DType::F32}, 1, allocator),
                  Error);
}
