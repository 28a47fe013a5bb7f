// The key/value cache of a decoder: for every layer, the keys and values of every token seen so
// far, so that each new token attends to the past without recomputing it.
//
// Layout per layer: keys and values [B, Hkv, capacity, D], head-major so that one head's keys are
// contiguous (what the attention GEMMs want). length() tokens are valid; the model appends the
// new tokens' keys and values (ops::split_qkv), then calls advance().
// Memory: 2 L B Hkv capacity D elements, allocated once, up front (on the cpu in one block on
// huge pages, kv_layer_tensors below) and on the cpu zeroed then, so that the pages are faulted
// in when the cache is made and not by the first forward pass (a 512-token GPT-2 prefill's
// split_qkv took 15-18 ms with the faults, 5-7 without:
// docs/results/2026-12-01-cpu-emerald-rapids/kv-cache-ab.txt), as llama.cpp clears its cache
// buffer when it makes it.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/tensor.h"

namespace attnscope {

// The keys and values of `layers` layers, each tensor `shape`: on the cpu views of one block on
// huge pages (empty_on_huge_pages, runtime/tensor.h), as the weights are, since decode streams
// through the cache every step, and zeroed; elsewhere one uninitialised allocation each. Shared by
// KVCache and PagedKVCache (runtime/paged_kv_cache.h).
void kv_layer_tensors(std::int64_t layers, const Shape& shape, DType dtype, Allocator& allocator,
                      std::vector<Tensor>& keys, std::vector<Tensor>& values);

class KVCache {
 public:
  KVCache(std::int64_t layers, std::int64_t batch, std::int64_t kv_heads, std::int64_t capacity,
          std::int64_t head_dim, DType dtype, Allocator& allocator);

  Tensor& keys(std::int64_t layer) { return keys_.at(static_cast<std::size_t>(layer)); }
  Tensor& values(std::int64_t layer) { return values_.at(static_cast<std::size_t>(layer)); }
  std::int64_t batch() const { return batch_; }
  std::int64_t capacity() const { return capacity_; }
  std::int64_t length() const { return length_; }
  // Marks `tokens` more positions as filled; throws Error past the capacity.
  void advance(std::int64_t tokens);
  void clear() { length_ = 0; }
  std::size_t nbytes() const;

 private:
  std::vector<Tensor> keys_;
  std::vector<Tensor> values_;
  std::int64_t batch_ = 0;
  std::int64_t capacity_ = 0;
  std::int64_t length_ = 0;
};

}  // namespace attnscope
