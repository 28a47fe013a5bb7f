// Scope: opens a named profiler scope for the lifetime of the object.
//
//   profiler::Scope scope(ctx, "layer_norm");
//
// With profiling off (ctx.profiler() == nullptr) it costs one pointer test on entry and exit.
#pragma once

#include "runtime/context.h"

namespace attnscope::profiler {

class Scope {
 public:
  Scope(const Context& ctx, const char* name, const char* category = "op") : sink_(ctx.profiler()) {
    if (sink_) sink_->begin_scope(name, category);
  }
  ~Scope() {
    if (sink_) sink_->end_scope();
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  ScopeSink* sink_;
};

// One step of an op: a single pass over memory on the CPU, a single launch on a GPU. The
// profiler counts these scopes against a backend's cost model, and CUPTI attributes each
// kernel to the step that launched it.
class KernelStep : public Scope {
 public:
  KernelStep(const Context& ctx, const char* name) : Scope(ctx, name, "kernel") {}
};

}  // namespace attnscope::profiler
