#include "runtime/cuda/caching_allocator.h"

#include <cuda_runtime.h>

#include "runtime/cuda/cuda_context.h"

namespace attnscope::gpu {

namespace {
constexpr std::size_t kSmallGranule = 512;
constexpr std::size_t kLargeGranule = std::size_t{2} << 20;
constexpr std::size_t kLargeThreshold = std::size_t{1} << 20;

std::size_t round_up(std::size_t bytes, std::size_t granule) {
  return (bytes + granule - 1) / granule * granule;
}
}  // namespace

CachingAllocator::CachingAllocator(std::shared_ptr<DeviceState> state) : state_(std::move(state)) {}

CachingAllocator::~CachingAllocator() {
  // Gives the driver back every block that came back (tensors that outlive their context keep
  // theirs: a bug of their owner).
  release_cache();
}

std::size_t CachingAllocator::size_class(std::size_t bytes) {
  if (bytes == 0) return kSmallGranule;
  if (bytes <= kLargeThreshold) return round_up(bytes, kSmallGranule);
  return round_up(bytes, kLargeGranule);
}

std::size_t CachingAllocator::reserved_bytes() const {
  const std::lock_guard lock(mutex_);
  return reserved_;
}

void CachingAllocator::release_cache() {
  const std::lock_guard lock(mutex_);
  release_cache_locked();
}

void CachingAllocator::release_cache_locked() {
  if (cached_.empty()) return;
  // Blocks are cached only after their last use was queued; wait for that use before freeing.
  cudaStreamSynchronize(state_->stream);
  for (const auto& [bytes, ptr] : cached_) {
    cudaFree(ptr);
    reserved_ -= bytes;
  }
  cached_.clear();
}

void* CachingAllocator::raw_allocate(std::size_t bytes) {
  if (bytes > SIZE_MAX - kLargeGranule) return nullptr;
  const std::size_t rounded = size_class(bytes);
  const std::lock_guard lock(mutex_);
  if (auto it = cached_.find(rounded); it != cached_.end()) {
    void* ptr = it->second;
    cached_.erase(it);
    return ptr;
  }
  void* ptr = nullptr;
  if (cudaMalloc(&ptr, rounded) != cudaSuccess) {
    cudaGetLastError();  // the failed cudaMalloc leaves an error to be cleared
    // Emptying the cache synchronises the stream, which would invalidate a graph capture on it,
    // and could free blocks the graph being captured still uses: during a capture, fail instead.
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(state_->stream, &capture) != cudaSuccess ||
        capture != cudaStreamCaptureStatusNone) {
      cudaGetLastError();
      return nullptr;  // Allocator::allocate reports out of memory
    }
    release_cache_locked();
    if (cudaMalloc(&ptr, rounded) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;  // Allocator::allocate reports out of memory
    }
  }
  reserved_ += rounded;
  return ptr;
}

void CachingAllocator::raw_deallocate(void* ptr, std::size_t bytes) noexcept {
  const std::size_t rounded = size_class(bytes);
  const std::lock_guard lock(mutex_);
  cached_.emplace(rounded, ptr);  // reusable at once: see the header comment
}

}  // namespace attnscope::gpu
