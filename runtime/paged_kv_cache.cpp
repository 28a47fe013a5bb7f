#include "runtime/paged_kv_cache.h"

#include <string>

#include "runtime/error.h"
#include "runtime/kv_cache.h"
#include "runtime/q8_0.h"

namespace attnscope {

std::string kv_dtype_refusal(Device device, DType activations, DType cache, std::int64_t head_dim) {
  if (cache == activations) return "";
  const bool cpu_under_f32 = device == Device::CPU && activations == DType::F32;
  if (cpu_under_f32 && (cache == DType::F16 || cache == DType::BF16)) return "";
  if (cpu_under_f32 && cache == DType::Q8_0) {
    if (head_dim % kQ8_0BlockElements == 0) return "";
    return "a KV cache of q8_0 needs heads a multiple of 32 wide (whole blocks), not " +
           std::to_string(head_dim);
  }
  return "a KV cache of " + std::string(dtype_name(cache)) + " cannot serve " +
         std::string(dtype_name(activations)) + " activations on " +
         std::string(device_name(device)) +
         " (the activations' dtype, or f16, bf16 or q8_0 under f32 on the cpu)";
}

std::size_t PagedKVCache::Geometry::position_bytes() const {
  return 2 * storage_bytes(dtype, layers * kv_heads * head_dim);
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
