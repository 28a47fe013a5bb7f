// PagedKVCache: the keys and values of many sequences in fixed-size blocks (PagedAttention, Kwon
// et al. 2023), and the BlockPool (block_pool.h) that says which block holds which positions of
// which sequence. It knows tensors and memory, not requests: the engine (engine/) decides who
// gets blocks; the model writes and reads them through a sequence's block table.
//
// Layout per layer: keys and values [blocks, Hkv, block_tokens, D]. Position p of a sequence
// whose table is T lives in block T[p / block_tokens], at row p % block_tokens of each kv head,
// so one head's rows of one block are contiguous (block_tokens D elements), as a contiguous
// cache's rows are, and a flash tile reads a block's rows in one piece.
//
// Element type: the activations' (f32 on the cpu, bf16 on cuda), or on the cpu, under f32
// activations, f16 or bf16 (half the bytes to hold and to read on every decode step, for ~3
// significant digits in bf16, or f16's range: values past 65504 become infinity) or q8_0 (34
// bytes per 32 values, each within half a step of its block's largest / 127; head dims a
// multiple of 32). The writes round or quantize (ops/cpu/heads.cpp), attention reads the values
// back as f32 (ops/cpu/element_rows.h). kv_dtype_refusal says which pairs may serve.
//
// Memory: 2 L blocks Hkv block_tokens D elements, allocated once, up front (zeroed on the cpu, as
// KVCache is, so that the first steps do not pay the page faults). Nothing is allocated while
// requests come and go: that is the point of paging. What a sequence holds is whole blocks, so
// its waste is at most block_tokens - 1 positions (the tail of its last block), against a
// contiguous cache's reservation of the whole context per sequence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/block_pool.h"
#include "runtime/tensor.h"

namespace attnscope {

// Why a cache of `cache` elements may not serve `activations` on `device` with heads of
// `head_dim`, or "" when it may: the same dtype, or on the cpu under f32 activations an f16, bf16
// or (head_dim a multiple of 32) q8_0 cache.
std::string kv_dtype_refusal(Device device, DType activations, DType cache, std::int64_t head_dim);

class PagedKVCache {
 public:
  // The shape of one model's cache: what a block holds.
  struct Geometry {
    std::int64_t layers = 0, kv_heads = 0, head_dim = 0;
    std::int64_t block_tokens = 16;
    DType dtype = DType::F32;

    // Bytes of one block across every layer, keys and values.
    std::size_t block_bytes() const;
    // Bytes one position takes across every layer, keys and values.
    std::size_t position_bytes() const;
  };

  // The whole pool's bytes at a glance: reserved (every block, allocated up front), used (the
  // blocks some sequence holds), wasted (positions inside used blocks that hold nothing yet).
  struct Usage {
    std::size_t reserved_bytes = 0;
    std::size_t used_bytes = 0;
    std::size_t wasted_bytes = 0;
    BlockPool::Counters blocks;
  };

  // `block_count` blocks of `geometry`, on the allocator's device. Throws Error for a
  // non-positive size.
  PagedKVCache(const Geometry& geometry, std::int64_t block_count, Allocator& allocator);

  // The most blocks of `geometry` that fit in `budget_bytes` (at least 0).
  static std::int64_t blocks_within(const Geometry& geometry, std::uint64_t budget_bytes);

  const Geometry& geometry() const { return geometry_; }
  std::int64_t block_tokens() const { return geometry_.block_tokens; }
  BlockPool& pool() { return pool_; }
  const BlockPool& pool() const { return pool_; }
  Tensor& key_blocks(std::int64_t layer) { return keys_.at(static_cast<std::size_t>(layer)); }
  Tensor& value_blocks(std::int64_t layer) { return values_.at(static_cast<std::size_t>(layer)); }
  Usage usage() const;

 private:
  Geometry geometry_;
  BlockPool pool_;
  std::vector<Tensor> keys_;
  std::vector<Tensor> values_;
};

}  // namespace attnscope
