#include "runtime/cuda/caching_allocator.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>

#include "runtime/cuda/cuda_context.h"
#include "runtime/error.h"

namespace attnscope::gpu {

namespace {
constexpr std::size_t kSmallGranule = 512;
constexpr std::size_t kSmallLimit = 4096;
constexpr std::size_t kClassesPerDoubling = 8;

std::size_t round_up(std::size_t bytes, std::size_t granule) {
  return (bytes + granule - 1) / granule * granule;
}

// cudaMalloc: true on success, false when the device is out of memory. Any other error (such as
// the sticky error an earlier kernel fault leaves, which every later call returns) throws: it
// must not be reported as out of memory.
bool try_cuda_malloc(void** ptr, std::size_t bytes) {
  const cudaError_t status = cudaMalloc(ptr, bytes);
  if (status == cudaSuccess) return true;
  if (status != cudaErrorMemoryAllocation) check_cuda(status, "cuda allocate");
  cudaGetLastError();  // clears the out-of-memory error the failed call left
  return false;
}

}  // namespace

CachingAllocator::CachingAllocator(std::shared_ptr<DeviceState> state) : state_(std::move(state)) {}

CachingAllocator::~CachingAllocator() {
  // Gives the driver back every block that came back, pooled or not (tensors that outlive their
  // context keep theirs: a bug of their owner).
  while (!pool_free_.empty()) release_pool(pool_free_.begin()->first);
  release_cache();
}

std::uint64_t CachingAllocator::new_pool() {
  const std::lock_guard lock(mutex_);
  pool_free_[++last_pool_];
  return last_pool_;
}

void CachingAllocator::use_pool(std::uint64_t pool) {
  const std::lock_guard lock(mutex_);
  check(pool == 0 || pool_free_.contains(pool), "cuda allocator",
        [&] { return "pool " + std::to_string(pool) + " is not a live pool"; });
  pool_in_use_ = pool;
}

void CachingAllocator::release_pool(std::uint64_t pool) noexcept {
  const std::lock_guard lock(mutex_);
  const auto found = pool_free_.find(pool);
  if (found == pool_free_.end()) return;
  cached_.insert(found->second.begin(), found->second.end());
  pool_free_.erase(found);
  std::erase_if(pool_of_, [&](const auto& entry) { return entry.second == pool; });
  if (pool_in_use_ == pool) pool_in_use_ = 0;
}

std::size_t CachingAllocator::size_class(std::size_t bytes) {
  if (bytes <= kSmallLimit) return round_up(std::max<std::size_t>(bytes, 1), kSmallGranule);
  return round_up(bytes, std::bit_floor(bytes) / kClassesPerDoubling);
}

std::size_t CachingAllocator::reserved_bytes() const {
  const std::lock_guard lock(mutex_);
  return reserved_;
}

void CachingAllocator::release_cache() noexcept {
  const std::lock_guard lock(mutex_);
  release_cache_locked();  // an error here is the stream's, reported by its next checked call
}

cudaError_t CachingAllocator::release_cache_locked() noexcept {
  if (cached_.empty()) return cudaSuccess;
  // Blocks are cached only after their last use was queued; wait for that use before freeing. A
  // stream in error (an earlier kernel fault) frees nothing: the context is unusable anyway.
  if (const cudaError_t status = cudaStreamSynchronize(state_->stream); status != cudaSuccess) {
    return status;
  }
  cudaError_t first_error = cudaSuccess;
  for (const auto& [bytes, ptr] : cached_) {
    const cudaError_t status = cudaFree(ptr);
    if (first_error == cudaSuccess) first_error = status;
    reserved_ -= bytes;
  }
  cached_.clear();
  return first_error;
}

void* CachingAllocator::raw_allocate(std::size_t bytes) {
  if (bytes > SIZE_MAX / 2) return nullptr;  // no device has it (and size_class cannot overflow)
  const std::size_t rounded = size_class(bytes);
  const std::lock_guard lock(mutex_);
  if (pool_in_use_ != 0) {
    std::multimap<std::size_t, void*>& pool = pool_free_.at(pool_in_use_);
    if (auto it = pool.find(rounded); it != pool.end()) {
      void* ptr = it->second;
      pool.erase(it);
      return ptr;
    }
  }
  void* ptr = take_block_locked(rounded);
  if (ptr != nullptr && pool_in_use_ != 0) pool_of_[ptr] = pool_in_use_;
  return ptr;
}

void* CachingAllocator::take_block_locked(std::size_t rounded) {
  if (auto it = cached_.find(rounded); it != cached_.end()) {
    void* ptr = it->second;
    cached_.erase(it);
    return ptr;
  }
  void* ptr = nullptr;
  if (!try_cuda_malloc(&ptr, rounded)) {
    // Emptying the cache synchronises the stream, which would invalidate a graph capture on it,
    // and could free blocks the graph being captured still uses: during a capture, fail instead.
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    check_cuda(cudaStreamIsCapturing(state_->stream, &capture), "cuda allocate");
    if (capture != cudaStreamCaptureStatusNone) return nullptr;  // reported as out of memory
    check_cuda(release_cache_locked(), "cuda allocate: emptying the cache");
    if (!try_cuda_malloc(&ptr, rounded)) return nullptr;  // reported as out of memory
  }
  reserved_ += rounded;
  return ptr;
}

void CachingAllocator::raw_deallocate(void* ptr, std::size_t bytes) noexcept {
  const std::size_t rounded = size_class(bytes);
  const std::lock_guard lock(mutex_);
  // Reusable at once (see the header comment): by its pool's next allocations, or by anyone's.
  if (const auto pooled = pool_of_.find(ptr); pooled != pool_of_.end()) {
    pool_free_.at(pooled->second).emplace(rounded, ptr);
    return;
  }
  cached_.emplace(rounded, ptr);
}

}  // namespace attnscope::gpu
