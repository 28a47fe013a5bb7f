// Profiling: turns a CpuTracer on for the lifetime of the object, and off again even when an
// exception leaves the scope.
//
//   profiler::CpuTracer tracer;
//   { profiler::Profiling on(ctx, tracer); model.forward(...); }
//
// The tracer receives the context's scopes and every allocation of its allocator (the memory
// counter starts at the bytes already live). Nothing else changes: outside the object the
// context's profiler is nullptr again and a scope costs one pointer test.
#pragma once

#include "profiler/cpu_tracer.h"
#include "runtime/context.h"

namespace attnscope::profiler {

class Profiling {
 public:
  Profiling(Context& ctx, CpuTracer& tracer) : ctx_(ctx) {
    Allocator& allocator = ctx_.allocator();
    tracer.start_memory_counter(allocator.device(), allocator.current_bytes());
    allocator.set_observer(&tracer);
    ctx_.set_profiler(&tracer);
  }
  ~Profiling() {
    ctx_.set_profiler(nullptr);
    ctx_.allocator().set_observer(nullptr);
  }
  Profiling(const Profiling&) = delete;
  Profiling& operator=(const Profiling&) = delete;

 private:
  Context& ctx_;
};

}  // namespace attnscope::profiler
