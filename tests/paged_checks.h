// What the paged-attention suites share (tests/test_paged_attention.cpp, and on a GPU
// tests/test_cuda_paged.cpp): a ragged call on random data over blocks dealt out in a random
// order, float64 attention of each of its sequences alone, and the ragged shapes both draw.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "ops/attention/paged.h"
#include "reference_ops.h"

namespace attnscope::testing {

// A ragged call on random data: sequence s has lengths[s] = {Tq, kv_len}, and its blocks are
// drawn at random from a pool with a few to spare, so no two sequences' rows lie in order.
struct RaggedCase {
  std::int64_t q_heads, kv_heads, head_dim, block_tokens;
  std::vector<ops::attention::RaggedShape::Lengths> lengths;
};

struct RaggedCall {
  ops::attention::RaggedBatch batch;
  ops::attention::PagedCall call;
};

inline RaggedCall random_ragged_call(const RaggedCase& c, std::mt19937& rng, Allocator& allocator) {
  RaggedCall r;
  ops::attention::RaggedBatch& batch = r.batch;
  batch.block_tokens = c.block_tokens;
  std::int64_t blocks_needed = 0;
  for (const auto& l : c.lengths) {
    const std::int64_t blocks = (l.kv_len + c.block_tokens - 1) / c.block_tokens;
    batch.max_blocks = std::max(batch.max_blocks, blocks);
    blocks_needed += blocks;
  }
  const std::int64_t pool = blocks_needed + 3;
  std::vector<std::int32_t> free_blocks(static_cast<std::size_t>(pool));
  for (std::int32_t b = 0; b < pool; ++b) free_blocks[static_cast<std::size_t>(b)] = b;
  std::shuffle(free_blocks.begin(), free_blocks.end(), rng);
  batch.query_starts.push_back(0);
  batch.block_tables.assign(c.lengths.size() * static_cast<std::size_t>(batch.max_blocks), 0);
  for (std::size_t s = 0; s < c.lengths.size(); ++s) {
    const std::int64_t blocks = (c.lengths[s].kv_len + c.block_tokens - 1) / c.block_tokens;
    for (std::int64_t b = 0; b < blocks; ++b) {
      batch.block_tables[s * static_cast<std::size_t>(batch.max_blocks) + b] = free_blocks.back();
      free_blocks.pop_back();
    }
    batch.query_starts.push_back(batch.query_starts.back() +
                                 static_cast<std::int32_t>(c.lengths[s].q_len));
    batch.kv_lens.push_back(static_cast<std::int32_t>(c.lengths[s].kv_len));
  }
  ops::attention::PagedCall& call = r.call;
  call.q = random_tensor({batch.rows(), c.q_heads, c.head_dim}, rng, allocator);
  call.key_blocks = random_tensor({pool, c.kv_heads, c.block_tokens, c.head_dim}, rng, allocator);
  call.value_blocks = random_tensor({pool, c.kv_heads, c.block_tokens, c.head_dim}, rng, allocator);
  call.out = Tensor::empty(call.q.shape(), DType::F32, allocator);
  std::fill_n(call.out.data<float>(), call.out.numel(), NAN);  // unwritten rows show up
  call.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  return r;
}

// Float64 attention of each sequence alone, from its own compact copies of q, K and V (read
// here element by element through its block table), laid out as call.out is.
inline std::vector<double> reference_paged(const RaggedCall& r, Allocator& allocator) {
  const ops::attention::PagedCall& call = r.call;
  const ops::attention::RaggedBatch& batch = r.batch;
  const std::int64_t hq = call.q_heads(), hkv = call.kv_heads(), d = call.head_dim();
  std::vector<double> out(static_cast<std::size_t>(call.out.numel()));
  for (std::int64_t s = 0; s < batch.sequences(); ++s) {
    const std::int64_t tq = batch.q_len(s), kv_len = batch.kv_len(s), first = batch.first_row(s);
    Tensor q = Tensor::empty({1, hq, tq, d}, DType::F32, allocator);
    Tensor k = Tensor::empty({1, hkv, kv_len, d}, DType::F32, allocator);
    Tensor v = Tensor::empty({1, hkv, kv_len, d}, DType::F32, allocator);
    for (std::int64_t h = 0; h < hq; ++h) {
      for (std::int64_t t = 0; t < tq; ++t) {
        for (std::int64_t x = 0; x < d; ++x) {
          q.data<float>()[(h * tq + t) * d + x] =
              call.q.data<float>()[((first + t) * hq + h) * d + x];
        }
      }
    }
    for (std::int64_t g = 0; g < hkv; ++g) {
      for (std::int64_t p = 0; p < kv_len; ++p) {
        const std::int64_t block =
            batch.blocks(s)[static_cast<std::size_t>(p / batch.block_tokens)];
        const std::int64_t row = (block * hkv + g) * batch.block_tokens + p % batch.block_tokens;
        for (std::int64_t x = 0; x < d; ++x) {
          k.data<float>()[(g * kv_len + p) * d + x] = call.key_blocks.data<float>()[row * d + x];
          v.data<float>()[(g * kv_len + p) * d + x] = call.value_blocks.data<float>()[row * d + x];
        }
      }
    }
    const std::vector<double> one = testing::reference_attention(q, k, v, kv_len, call.scale);
    for (std::int64_t h = 0; h < hq; ++h) {
      for (std::int64_t t = 0; t < tq; ++t) {
        for (std::int64_t x = 0; x < d; ++x) {
          out[static_cast<std::size_t>(((first + t) * hq + h) * d + x)] =
              one[static_cast<std::size_t>((h * tq + t) * d + x)];
        }
      }
    }
  }
  return out;
}

inline const std::vector<RaggedCase>& ragged_cases() {
  static const std::vector<RaggedCase> cases = {
      // decode tokens mixed with a prefill and a prefill chunk behind 40 cached positions
      {4, 4, 32, 16, {{1, 37}, {12, 12}, {1, 1}, {9, 49}, {1, 300}}},
      // grouped heads, one-token blocks: every key in a block of its own
      {6, 2, 16, 1, {{5, 5}, {1, 20}, {3, 70}}},
      // blocks longer than flash's key tile and a chunk longer than its query tile
      {2, 1, 64, 512, {{100, 700}, {1, 513}}},
      // an odd block size across many sequences
      {3, 3, 8, 7, {{1, 8}, {1, 15}, {2, 2}, {4, 30}, {1, 7}, {6, 6}, {1, 29}}},
      // head dim 128 (a GPU kernel's wider lane chunks) with grouped heads, across block edges
      {8, 2, 128, 16, {{1, 1}, {17, 17}, {1, 33}, {16, 33}}},
  };
  return cases;
}

}  // namespace attnscope::testing
