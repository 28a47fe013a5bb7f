#include "runtime/kv_cache.h"

#include <cstring>
#include <string>

#include "runtime/error.h"

namespace attnscope {

void kv_layer_tensors(std::int64_t layers, const Shape& shape, DType dtype, Allocator& allocator,
                      std::vector<Tensor>& keys, std::vector<Tensor>& values) {
  if (allocator.device() != Device::CPU) {
    for (std::int64_t l = 0; l < layers; ++l) {
      keys.push_back(Tensor::empty(shape, dtype, allocator));
      values.push_back(Tensor::empty(shape, dtype, allocator));
    }
    return;
  }
  const std::vector<TensorSpec> specs(static_cast<std::size_t>(2 * layers), {shape, dtype});
  std::vector<Tensor> block = empty_on_huge_pages(specs, allocator);
  for (std::int64_t l = 0; l < layers; ++l) {
    keys.push_back(block[static_cast<std::size_t>(2 * l)]);
    values.push_back(block[static_cast<std::size_t>(2 * l + 1)]);
  }
  for (const Tensor& t : block) std::memset(t.raw_data(), 0, t.nbytes());
}

KVCache::KVCache(std::int64_t layers, std::int64_t batch, std::int64_t kv_heads,
                 std::int64_t capacity, std::int64_t head_dim, DType dtype, Allocator& allocator)
    : batch_(batch), capacity_(capacity) {
  check(layers > 0 && batch > 0 && kv_heads > 0 && capacity > 0 && head_dim > 0, "kv cache",
        "every dimension must be positive");
  kv_layer_tensors(layers, {batch, kv_heads, capacity, head_dim}, dtype, allocator, keys_, values_);
}

void KVCache::advance(std::int64_t tokens) {
  check(tokens >= 0 && length_ + tokens <= capacity_, "kv cache", [&] {
    return "cannot hold " + std::to_string(length_ + tokens) + " tokens (capacity " +
           std::to_string(capacity_) + ")";
  });
  length_ += tokens;
}

std::size_t KVCache::nbytes() const {
  std::size_t total = 0;
  for (const Tensor& t : keys_) total += 2 * t.nbytes();
  return total;
}

}  // namespace attnscope
