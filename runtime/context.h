// Context: everything an op needs to run, passed explicitly (there are no globals).
//
// It names the device, the allocator for outputs and temporaries, the number of CPU threads,
// and the profiler sink that op scopes report to (nullptr: profiling off, and a scope then costs
// one pointer test). The CUDA path adds its stream and cuBLAS handle here.
#pragma once

#include <memory>

#include "runtime/allocator.h"
#include "runtime/device.h"

namespace attnscope {

// Receives the named scopes that ops and the model open and close. Implemented by the profiler
// (profiler/), declared here so that the runtime does not depend on it.
class ScopeSink {
 public:
  virtual ~ScopeSink() = default;
  virtual void begin_scope(const char* name, const char* category) = 0;
  virtual void end_scope() = 0;
};

class Context {
 public:
  // threads <= 0 means every hardware thread.
  explicit Context(int threads = 0);

  Device device() const { return allocator_->device(); }
  Allocator& allocator() { return *allocator_; }
  int threads() const { return threads_; }

  ScopeSink* profiler() const { return profiler_; }
  void set_profiler(ScopeSink* sink) { profiler_ = sink; }

 private:
  std::unique_ptr<Allocator> allocator_;
  int threads_ = 1;
  ScopeSink* profiler_ = nullptr;
};

}  // namespace attnscope
