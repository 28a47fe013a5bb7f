// Device memory with a cache in front of cudaMalloc.
//
// cudaMalloc and cudaFree synchronise the device and cost tens of microseconds; a decode step
// allocates dozens of small temporaries. Freed blocks are therefore kept in a cache keyed by
// their size class and handed out again to the next request of that class: after the first step
// a steady state allocates nothing from the driver. Size classes: multiples of 512 bytes up to
// 4 KiB, then eight per doubling (multiples of an eighth of the power of two below the size):
// at most 12.5% of slack per block. A temporary that grows a little every decode step (an
// eager backend's scores, one column per cached token) so moves to a new class, a new
// cudaMalloc, every ~12% of growth, not every 512 bytes (with B = 8, H = 16 and f32 scores:
// every step).
// When cudaMalloc runs out of memory, the cache is emptied and the call retried once before
// reporting out of memory (not while the stream is being captured into a CUDA graph: that
// reports at once). Any other cudaMalloc error (a fault left by an earlier kernel) throws as it is.
// Live bytes (what tensors hold) are counted by Allocator like on the CPU; reserved bytes add
// what the cache holds.
// Reusing a freed block needs no synchronisation: every op of a Context runs on its one stream,
// so the next user's kernels are queued after the last user's. That holds inside a captured CUDA
// graph too, as long as the graph is launched before anything else is queued (StepGraph does).
// Pools: a graph that is replayed step after step without being captured again (StepGraph::
// replay) reads and writes the same addresses every time, so its temporaries must stay its own
// between replays. While a pool is in use (use_pool), every allocation is served from it (its
// own freed blocks first, then the cache or the driver) and belongs to it: freed, it goes back to
// the pool, not to the cache. release_pool hands the pool's free blocks to the cache (a block
// still live then goes to the cache when it is freed).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "runtime/allocator.h"
#include "runtime/cuda/device.h"

namespace attnscope::gpu {

class CachingAllocator final : public Allocator {
 public:
  explicit CachingAllocator(std::shared_ptr<DeviceState> state);
  ~CachingAllocator() override;

  Device device() const override { return Device::CUDA; }

  // Bytes taken from the driver: live blocks and cached blocks.
  std::size_t reserved_bytes() const;
  // Gives every cached (not live) block back to the driver.
  void release_cache() noexcept;

  static std::size_t size_class(std::size_t bytes);

  // A new, empty pool (see the top of this file); 0 is never a pool.
  std::uint64_t new_pool();
  // Serves every allocation from `pool` from now on; 0: from the cache again. Throws for a pool
  // never made or already released.
  void use_pool(std::uint64_t pool);
  // Ends `pool`: its free blocks go to the cache, its live ones when they are freed.
  void release_pool(std::uint64_t pool) noexcept;

 protected:
  void* raw_allocate(std::size_t bytes) override;
  void raw_deallocate(void* ptr, std::size_t bytes) noexcept override;

 private:
  cudaError_t release_cache_locked() noexcept;  // the first CUDA error, if any
  // A block of `rounded` bytes from the cache or the driver; nullptr when out of memory.
  void* take_block_locked(std::size_t rounded);

  std::shared_ptr<DeviceState> state_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> cached_;  // size class -> free block
  std::size_t reserved_ = 0;
  // Pools: each one's free blocks by size class, and the pool every pooled block (live or free)
  // belongs to.
  std::map<std::uint64_t, std::multimap<std::size_t, void*>> pool_free_;
  std::map<void*, std::uint64_t> pool_of_;
  std::uint64_t pool_in_use_ = 0;
  std::uint64_t last_pool_ = 0;
};

}  // namespace attnscope::gpu
