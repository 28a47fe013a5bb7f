#include "runtime/paged_kv_cache.h"

#include <string>

#include "runtime/error.h"
#include "runtime/kv_cache.h"

namespace attnscope {

std::string kv_dtype_refusal(Device device, DType activations, DType cache) {
  if (cache == activations) return "";
  const bool sixteen_bit = cache == DType::F16 || cache == DType::BF16;
  if (device == Device::CPU && activations == DType::F32 && sixteen_bit) return "";
  return "a KV cache of " + std::string(dtype_name(cache)) + " cannot serve " +
         std::string(dtype_name(activations)) + " activations on " +
         std::string(device_name(device)) +
         " (the activations' dtype, or f16 or bf16 under f32 on the cpu)";
}

std::size_t PagedKVCache::Geometry::position_bytes() const {
  return 2 * static_cast<std::size_t>(layers * kv_heads * head_dim) * dtype_size(dtype);
}

std::size_t PagedKVCache::Geometry::block_bytes() const {
  return static_cast<std::size_t>(block_tokens) * position_bytes();
}

PagedKVCache::PagedKVCache(const Geometry& geometry, std::int64_t block_count, Allocator& allocator)
    : geometry_(geometry), pool_(block_count, geometry.block_tokens) {
  const Geometry& g = geometry;
  check(g.layers > 0 && g.kv_heads > 0 && g.head_dim > 0, "paged kv cache",
        "layers, kv heads and head dim must be positive");
  kv_layer_tensors(g.layers, {block_count, g.kv_heads, g.block_tokens, g.head_dim}, g.dtype,
                   allocator, keys_, values_);
}

std::int64_t PagedKVCache::blocks_within(const Geometry& geometry, std::uint64_t budget_bytes) {
  return static_cast<std::int64_t>(budget_bytes / geometry.block_bytes());
}

PagedKVCache::Usage PagedKVCache::usage() const {
  Usage u;
  u.blocks = pool_.counters();
  const std::size_t block = geometry_.block_bytes();
  u.reserved_bytes = static_cast<std::size_t>(u.blocks.blocks) * block;
  u.used_bytes = static_cast<std::size_t>(u.blocks.in_use) * block;
  u.wasted_bytes =
      static_cast<std::size_t>(u.blocks.unwritten_positions) * geometry_.position_bytes();
  return u;
}

}  // namespace attnscope
