#include "runtime/context.h"

#include <unistd.h>

#include <cstdint>
#include <thread>

#include "runtime/cuda/device.h"
#include "runtime/error.h"

namespace attnscope {

namespace {
int resolve_threads(int threads) {
  const int hardware = static_cast<int>(std::thread::hardware_concurrency());
  return threads > 0 ? threads : (hardware > 0 ? hardware : 1);
}
}  // namespace

Context::Context(int threads) : Context(Device::CPU, threads) {}

Context::Context(Device device, int threads)
    : host_allocator_(std::make_unique<CpuAllocator>()), threads_(resolve_threads(threads)) {
  if (device == Device::CPU) {
    allocator_ = std::make_unique<CpuAllocator>();
    return;
  }
  if constexpr (kCudaBuild) {
    cuda_ = gpu::open_device(0);
    allocator_ = gpu::make_allocator(cuda_);
  } else {
    throw Error("--device cuda",
                "this build has no CUDA path (configure with -DATTNSCOPE_CUDA=ON on a machine "
                "with the CUDA toolkit)");
  }
}

Context::~Context() = default;

std::string Context::describe() const {
  if constexpr (kCudaBuild) {
    if (cuda_) return "cuda: " + gpu::describe(*cuda_);
  }
  return "cpu (" + std::to_string(threads_) + " threads)";
}

std::uint64_t Context::memory_bytes() const {
  if constexpr (kCudaBuild) {
    if (cuda_) return gpu::total_memory(*cuda_);
  }
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_bytes = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_bytes > 0
             ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_bytes)
             : UINT64_MAX;  // unknown: nothing is refused for size
}

void Context::synchronize() const {
  if constexpr (kCudaBuild) {
    if (cuda_) gpu::synchronize(*cuda_);
  }
}

}  // namespace attnscope
