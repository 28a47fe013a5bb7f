// Context: everything an op needs to run, passed explicitly (there are no globals).
//
// It names the device, the allocator for outputs and temporaries (the device's), a host
// allocator (always the CPU's, for staging), the number of CPU threads, the profiler sink that op
// scopes report to (nullptr: profiling off, and a scope then costs one pointer test), and on a
// GPU the device state: stream, cuBLAS handle (runtime/cuda/cuda_context.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "runtime/allocator.h"
#include "runtime/device.h"

namespace attnscope {

namespace gpu {
struct DeviceState;
}
class AttentionTap;

// Receives the named scopes that ops and the model open and close. Implemented by the profiler
// (profiler/), declared here so that the runtime does not depend on it.
class ScopeSink {
 public:
  virtual ~ScopeSink() = default;
  virtual void begin_scope(const char* name, const char* category) = 0;
  virtual void end_scope() = 0;
  // Facts about the innermost scope open on the calling thread, given by whoever opened it: its
  // work (the FLOPs it computes and the bytes it must move, from its op's cost model) and its
  // index among its kind (the model's layers: "layer" 3). A sink that keeps no such facts
  // ignores them.
  virtual void set_work(std::uint64_t /*flops*/, std::uint64_t /*bytes*/) {}
  virtual void set_index(std::int64_t /*index*/) {}
  // Spans on tracks of their own, apart from the nesting scopes: the engine's requests, one
  // track each, going through phases (queued, prefill, decode, ...). begin_span ends the track's
  // open span, if any, and starts one named `name` now; end_span ends it. A sink that draws no
  // such tracks ignores them.
  virtual void begin_span(std::int64_t /*track*/, const char* /*name*/) {}
  virtual void end_span(std::int64_t /*track*/) {}
};

class Context {
 public:
  // A CPU context; threads <= 0 means every hardware thread.
  explicit Context(int threads = 0);
  // A context on `device` (CUDA: device 0). Throws Error with one line saying why when CUDA is
  // asked for but this build has no CUDA path or the machine has no usable GPU.
  Context(Device device, int threads);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  Device device() const { return allocator_->device(); }
  Allocator& allocator() { return *allocator_; }
  Allocator& host_allocator() { return *host_allocator_; }
  int threads() const { return threads_; }
  // nullptr on the CPU.
  gpu::DeviceState* cuda_state() const { return cuda_.get(); }
  // "cpu (16 threads)" or "cuda: NVIDIA H200, sm_90, ..."
  std::string describe() const;
  // The memory the device has in all: the machine's physical memory on the CPU, the GPU's global
  // memory on CUDA. What requests are sized against before they allocate.
  std::uint64_t memory_bytes() const;
  // Waits until every op queued so far has finished (a no-op on the CPU, where ops return done).
  void synchronize() const;

  ScopeSink* profiler() const { return profiler_; }
  void set_profiler(ScopeSink* sink) { profiler_ = sink; }
  // The tool watching each attention call (runtime/attention_tap.h); nullptr: none.
  AttentionTap* attention_tap() const { return attention_tap_; }
  void set_attention_tap(AttentionTap* tap) { attention_tap_ = tap; }

 private:
  std::shared_ptr<gpu::DeviceState> cuda_;
  std::unique_ptr<Allocator> host_allocator_;
  std::unique_ptr<Allocator> allocator_;  // after cuda_: cached blocks are freed on its stream
  int threads_ = 1;
  ScopeSink* profiler_ = nullptr;
  AttentionTap* attention_tap_ = nullptr;
};

}  // namespace attnscope
