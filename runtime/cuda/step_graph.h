// StepGraph: one decode step as a CUDA graph.
//
// A batch-1 decode step of GPT-2 is ~150 small kernels; launched one by one, the GPU waits on the
// host's launch latency (a few microseconds each) longer than it computes. A CUDA graph hands the
// whole step to the GPU at once. Each step's kernels differ only in their arguments (the cache
// grows by one token, so lengths and GEMM sizes change), so run() re-captures the step each time
// (capture records launches without executing them: cheaper than launching) and updates the
// executable graph in place with cudaGraphExecUpdate, which only swaps parameters; it
// instantiates anew only the first time or when the step's structure changed.
//
// The captured work must be graph-safe: everything on ctx's stream, no synchronisation, no copies
// from pageable host memory (the model uploads token ids before the capture). Memory freed during
// the capture may be reused within it: the graph is launched before anything else is queued.
#pragma once

#include <cstdint>
#include <functional>

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::gpu {

class StepGraph {
 public:
  StepGraph() = default;
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  // Captures what `step` queues on ctx's stream, brings the executable graph up to date and
  // launches it. Returns step's result (its contents are ready once the stream gets there).
  // If `step` throws, the capture is abandoned and the error passed on.
  Tensor run(Context& ctx, const std::function<Tensor()>& step);

  std::int64_t instantiations() const { return instantiations_; }
  std::int64_t updates() const { return updates_; }

 private:
  void* exec_ = nullptr;  // cudaGraphExec_t
  std::int64_t instantiations_ = 0;
  std::int64_t updates_ = 0;
};

}  // namespace attnscope::gpu
