// The decode-step runner: how one forward step reaches the device.
//
// step_inputs() prepares a step's token ids and positions (on a GPU: checked, then uploaded in
// one copy before any capture starts). StepRunner launches the step: eagerly, or for a decode
// step on a GPU as one CUDA graph (runtime/cuda/step_graph.h), which it keeps from step to step:
// captured anew each step and updated in place (run), or, when every kernel of the step reads
// what changes from device memory, captured once and replayed unchanged (replay, with the
// step's inputs uploaded to the runner's own fixed buffer: upload_fixed).
// The caller owns the runner, as it owns the KV cache, so the model itself stays const. A runner
// holds device memory (its buffer, the graph's pool): it must not outlive its Context.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::gpu {
class StepGraph;
}

namespace attnscope {

// Copies host i32 arrays to ctx's device in one copy and returns one tensor for each, in order
// (on the CPU, tensors in host memory). One copy, because each costs a latency on a GPU, and
// before any CUDA graph capture starts, since a graph cannot copy from pageable memory.
std::vector<Tensor> upload_arrays(Context& ctx,
                                  std::initializer_list<std::span<const std::int32_t>> arrays);

// Throws Error unless every id lies in [0, vocab_size). Ids are checked on the host before they
// are uploaded: a kernel cannot throw.
void check_token_ids(std::span<const std::int32_t> tokens, std::int64_t vocab_size);

// A step's token ids and each token's position in its sequence, i32 [N] on ctx's device.
struct StepInputs {
  Tensor ids;
  Tensor positions;
};

// The inputs for `tokens`, rows of `length` ids each at positions start, start + 1, ...
// Throws Error for an id outside [0, vocab_size).
StepInputs step_inputs(Context& ctx, std::span<const std::int32_t> tokens, std::int64_t length,
                       std::int64_t start, std::int64_t vocab_size);

class StepRunner {
 public:
  // Decode steps on a GPU run as one CUDA graph unless `cuda_graphs` is off or a profiler is
  // attached (unless `under_profiler`: the profiler then attributes each replayed kernel to the
  // scope that captured it, profiler/graph_replay.h). No effect on the CPU.
  explicit StepRunner(bool cuda_graphs = true, bool under_profiler = false)
      : cuda_graphs_(cuda_graphs), under_profiler_(under_profiler) {}

  void set_cuda_graphs(bool on) { cuda_graphs_ = on; }
  bool cuda_graphs() const { return cuda_graphs_; }
  // How the decode graph was kept up to date so far: instantiated anew (the first time, or when
  // a step's structure changed) or updated in place. Both 0 when no graph ran.
  struct GraphCounts {
    std::int64_t instantiations = 0;
    std::int64_t updates = 0;
    std::int64_t replays = 0;  // launched again unchanged, with no capture (replay)
    std::int64_t nodes = 0;    // of the last graph captured: the launches of one step
  };
  GraphCounts graph_counts() const;

  // Runs `step` (everything of a forward pass that runs on the device) and returns its result:
  // as a CUDA graph when `decode` on a GPU with graphs on and no profiler attached (or one, when
  // under_profiler), else eagerly.
  Tensor run(Context& ctx, bool decode, const std::function<Tensor()>& step);

  // Whether a decode step on ctx may be replayed unchanged (replay): on a GPU, with graphs on, no
  // profiler and no attention tap attached (both read every step on the host), and not for a
  // profile's runner (under_profiler: its profiled and unprofiled steps must run alike). The
  // model adds its own condition: its attention backend reads each row's key count from device
  // memory.
  bool can_replay(const Context& ctx) const;
  // upload_arrays into device memory of the runner's own, the same addresses step after step
  // while the arrays keep their sizes: what a replayed graph reads its inputs from.
  std::vector<Tensor> upload_fixed(Context& ctx,
                                   std::initializer_list<std::span<const std::int32_t>> arrays);
  // Runs the decode `step` as a replayed graph (StepGraph::replay: captured the first time and
  // whenever `key` changes, else launched again as it is); the runner's first decode step runs
  // eagerly, as in run(). Returns the step's result (a copy of the graph's).
  Tensor replay(Context& ctx, const std::vector<std::uintptr_t>& key,
                const std::function<Tensor()>& step);

 private:
  bool cuda_graphs_;
  bool under_profiler_;
  std::shared_ptr<gpu::StepGraph> graph_;  // made at the first GPU decode step
  Tensor fixed_inputs_;                    // upload_fixed's buffer, i32 on the device
};

}  // namespace attnscope
