// Profiling: turns a CpuTracer on for the lifetime of the object, and off again even when an
// exception leaves the scope.
//
//   profiler::CpuTracer tracer;
//   { profiler::Profiling on(ctx, tracer); model.forward(...); }
//
// The tracer receives the context's scopes and every allocation of its allocator (the memory
// counter starts at the bytes already live; on a GPU context that is the device's caching
// allocator). When the tracer has a DeviceRecorder (device_recorder.h), it is resumed first and
// paused last (pausing waits for the stream). Nothing else changes: outside the object the
// context's profiler is nullptr again and a scope costs one pointer test.
//
// The contract with CUDA graphs: while ctx.profiler() != nullptr, code that could replay a
// captured CUDA graph (the step runner of generate and bench) must launch eagerly instead. A
// replayed graph runs no host code, so it would open no scopes, and its kernels would all carry
// the id of the scope around the graph launch. Check it at every step, not once: profile runs
// attach the profiler to some steps only.
#pragma once

#include "profiler/cpu_tracer.h"
#include "runtime/context.h"

namespace attnscope::profiler {

class Profiling {
 public:
  Profiling(Context& ctx, CpuTracer& tracer) : ctx_(ctx), device_(tracer.device_recorder()) {
    Allocator& allocator = ctx_.allocator();
    if (device_) device_->resume();
    tracer.start_memory_counter(allocator.device(), allocator.current_bytes());
    allocator.set_observer(&tracer);
    ctx_.set_profiler(&tracer);
  }
  ~Profiling() {
    ctx_.set_profiler(nullptr);
    ctx_.allocator().set_observer(nullptr);
    if (device_) device_->pause();
  }
  Profiling(const Profiling&) = delete;
  Profiling& operator=(const Profiling&) = delete;

 private:
  Context& ctx_;
  DeviceRecorder* device_;
};

}  // namespace attnscope::profiler
