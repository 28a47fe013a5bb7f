#include "runtime/kv_cache.h"

#include <string>

#include "runtime/error.h"

namespace attnscope {

KVCache::KVCache(std::int64_t layers, std::int64_t batch, std::int64_t kv_heads,
                 std::int64_t capacity, std::int64_t head_dim, DType dtype, Allocator& allocator)
    : batch_(batch), capacity_(capacity) {
  check(layers > 0 && batch > 0 && kv_heads > 0 && capacity > 0 && head_dim > 0, "kv cache",
        "every dimension must be positive");
  const Shape shape = {batch, kv_heads, capacity, head_dim};
  // Zeroed on the cpu (kv_cache.h says why); positions past length() then read as 0.
  const auto make = [&] {
    return allocator.device() == Device::CPU ? Tensor::zeros(shape, dtype, allocator)
                                             : Tensor::empty(shape, dtype, allocator);
  };
  for (std::int64_t l = 0; l < layers; ++l) {
    keys_.push_back(make());
    values_.push_back(make());
  }
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
