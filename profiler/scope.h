// Scope: opens a named profiler scope for the lifetime of the object.
//
//   profiler::Scope scope(ctx, "layer_norm");
//   scope.set_work(flops, bytes);  // optional: what the op computes and moves (its cost model)
//
// With profiling off (ctx.profiler() == nullptr) it costs one pointer test on entry and exit.
#pragma once

#include <cstdint>

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
  // The work of this scope (ScopeSink::set_work): FLOPs computed and bytes that must move.
  void set_work(double flops, double bytes) const {
    if (sink_)
      sink_->set_work(static_cast<std::uint64_t>(flops), static_cast<std::uint64_t>(bytes));
  }
  // Which one of its kind this scope is (ScopeSink::set_index): the layer's number.
  void set_index(std::int64_t index) const {
    if (sink_) sink_->set_index(index);
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
