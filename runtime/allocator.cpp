#include "runtime/allocator.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "runtime/error.h"

namespace attnscope {

namespace {
constexpr std::size_t kAlignment = 64;
}

void* Allocator::allocate(std::size_t bytes) {
  void* ptr = raw_allocate(bytes);
  if (ptr == nullptr) {
    throw Error("allocator", "out of memory allocating " + std::to_string(bytes) + " bytes on " +
                                 std::string(device_name(device())) + " (" +
                                 std::to_string(current_bytes()) + " bytes already in use)");
  }
  const std::size_t now = current_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  std::size_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  count_.fetch_add(1, std::memory_order_relaxed);
  if (observer_) observer_->on_allocation_change(device(), now);
  return ptr;
}

void Allocator::deallocate(void* ptr, std::size_t bytes) noexcept {
  if (ptr == nullptr) return;
  raw_deallocate(ptr, bytes);
  const std::size_t now = current_.fetch_sub(bytes, std::memory_order_relaxed) - bytes;
  if (observer_) observer_->on_allocation_change(device(), now);
}

void* CpuAllocator::raw_allocate(std::size_t bytes) {
  // aligned_alloc needs a size that is a multiple of the alignment; guard the round-up.
  if (bytes > SIZE_MAX - kAlignment) return nullptr;
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  return std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
}

void CpuAllocator::raw_deallocate(void* ptr, std::size_t /*bytes*/) noexcept { std::free(ptr); }

bool advise_huge_pages(void* data, std::size_t bytes) {
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const std::uintptr_t end = (begin + bytes) / kHugePageBytes * kHugePageBytes;
  if (end <= first) return false;
  return ::madvise(reinterpret_cast<void*>(first), end - first, MADV_HUGEPAGE) == 0;
}

}  // namespace attnscope
