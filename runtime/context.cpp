#include "runtime/context.h"

#include <thread>

namespace attnscope {

Context::Context(int threads) : allocator_(std::make_unique<CpuAllocator>()) {
  const int hardware = static_cast<int>(std::thread::hardware_concurrency());
  threads_ = threads > 0 ? threads : (hardware > 0 ? hardware : 1);
}

}  // namespace attnscope
