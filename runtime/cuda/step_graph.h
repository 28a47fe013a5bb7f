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
//
// replay() goes one step further: no capture at all per step. A step whose kernels read
// everything that changes from device memory (token ids, positions and each row's key count,
// uploaded to the same addresses before each replay: StepRunner::upload_fixed) and whose other
// arguments stay the same is captured once and its executable graph launched again as it is,
// until `key` (what the captured arguments were made from: model, backend, cache addresses and
// capacity, batch, input buffer) changes. Its temporaries must then stay where the capture put
// them: the capture allocates from a pool of its own (CachingAllocator::use_pool) that the graph
// keeps until it is captured anew.
// Cost per step: one graph launch (a few microseconds of host time) instead of recording ~150
// launches and updating the graph, plus one copy of the result out of the graph's buffer.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

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

  // Launches the graph captured for `key` again, unchanged; when `key` differs from the last
  // replay's (or nothing was captured yet) first captures `step` with every allocation from the
  // graph's own pool and instantiates it. Returns a copy of step's result in memory of the
  // caller's (the graph's own buffer is rewritten by the next replay). If `step` throws, the
  // capture is abandoned and the error passed on. ctx must stay the same context (checked: the
  // graph's pool is its allocator's) and outlive this graph.
  Tensor replay(Context& ctx, const std::vector<std::uintptr_t>& key,
                const std::function<Tensor()>& step);

  std::int64_t instantiations() const { return instantiations_; }
  std::int64_t updates() const { return updates_; }
  std::int64_t replays() const { return replays_; }
  // The nodes of the last graph captured (kernels, copies, memsets: the launches of one step;
  // 0 before the first capture).
  std::int64_t nodes() const { return nodes_; }

 private:
  // Ends the replayed graph and gives its pool back.
  void drop_replayed() noexcept;

  void* exec_ = nullptr;  // cudaGraphExec_t of run()
  std::int64_t instantiations_ = 0;
  std::int64_t updates_ = 0;
  std::int64_t nodes_ = 0;
  // replay()'s graph: its executable, the key it was captured for, the step's result in its
  // pool, the pool and the allocator that holds it.
  void* replay_exec_ = nullptr;
  std::vector<std::uintptr_t> replay_key_;
  Tensor replay_result_;
  std::uint64_t pool_ = 0;
  Allocator* pool_allocator_ = nullptr;
  std::int64_t replays_ = 0;
};

}  // namespace attnscope::gpu
