// Allocators with byte accounting.
//
// Every tensor's bytes come from an Allocator, which counts what is live now and the highest
// that count has been (peak). Attention backends allocate their temporaries through it, so
// "naive allocates two more T x T score buffers than fused" is a measured number, not a comment.
// Counters are atomic: ops may allocate from OpenMP worker threads.
// An AllocationObserver (the profiler's memory counter) may watch an allocator: it is told the
// live bytes after every allocation and deallocation, on the thread that made it. Without one
// the cost is one pointer test per call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "runtime/device.h"

namespace attnscope {

// Told the live bytes of an allocator after each change. Implemented by the profiler, declared
// here so that the runtime does not depend on it. Must be safe to call from several threads.
class AllocationObserver {
 public:
  virtual ~AllocationObserver() = default;
  virtual void on_allocation_change(Device device, std::size_t current_bytes) noexcept = 0;
};

class Allocator {
 public:
  virtual ~Allocator() = default;

  // Returns at least `bytes` bytes aligned to 64 (bytes == 0 gives a valid unique pointer).
  // Throws Error when the memory cannot be had.
  void* allocate(std::size_t bytes);
  void deallocate(void* ptr, std::size_t bytes) noexcept;

  virtual Device device() const = 0;
  std::size_t current_bytes() const { return current_.load(std::memory_order_relaxed); }
  std::size_t peak_bytes() const { return peak_.load(std::memory_order_relaxed); }
  std::uint64_t allocation_count() const { return count_.load(std::memory_order_relaxed); }
  // Starts a new peak measurement from the bytes live now.
  void reset_peak() { peak_.store(current_bytes(), std::memory_order_relaxed); }
  // Starts (or, with nullptr, stops) reporting changes. Set it while no op is running.
  void set_observer(AllocationObserver* observer) { observer_ = observer; }

 protected:
  // nullptr when out of memory (allocate reports it); other failures throw Error themselves.
  virtual void* raw_allocate(std::size_t bytes) = 0;
  virtual void raw_deallocate(void* ptr, std::size_t bytes) noexcept = 0;

 private:
  std::atomic<std::size_t> current_{0};
  std::atomic<std::size_t> peak_{0};
  std::atomic<std::uint64_t> count_{0};
  AllocationObserver* observer_ = nullptr;
};

// Host memory, 64-byte aligned (one cache line, one AVX-512 register).
class CpuAllocator final : public Allocator {
 public:
  Device device() const override { return Device::CPU; }

 protected:
  void* raw_allocate(std::size_t bytes) override;
  void raw_deallocate(void* ptr, std::size_t bytes) noexcept override;
};

// Host memory that lives as long as a model (its weights) and is streamed through every step
// is best on 2 MiB pages: a decode step reads each weight once, and on 4 KiB pages each 4 KiB
// of it is a TLB miss and a page walk. Linux's transparent huge pages give them to anonymous
// memory that asks (madvise MADV_HUGEPAGE) when the system's policy is "madvise", the common
// default, and to all of it under "always"; only whole 2 MiB pages of a range can be huge.
constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

// Asks for huge pages for the whole 2 MiB pages inside [data, data + bytes). Advice: the memory
// works either way, so a refusal (a kernel without transparent huge pages, or with them off)
// leaves it on small pages and is not an error; false then. True when the kernel accepted it.
bool advise_huge_pages(void* data, std::size_t bytes);

}  // namespace attnscope
