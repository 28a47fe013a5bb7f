// The decode-step runner: how one forward step reaches the device.
//
// step_inputs() prepares a step's token ids and positions (on a GPU: checked, then uploaded in
// one copy before any capture starts). StepRunner launches the step: eagerly, or for a decode
// step on a GPU as one CUDA graph (runtime/cuda/step_graph.h), which it keeps from step to step.
// The caller owns the runner, as it owns the KV cache, so the model itself stays const.
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
  };
  GraphCounts graph_counts() const;

  // Runs `step` (everything of a forward pass that runs on the device) and returns its result:
  // as a CUDA graph when `decode` on a GPU with graphs on and no profiler attached (or one, when
  // under_profiler), else eagerly.
  Tensor run(Context& ctx, bool decode, const std::function<Tensor()>& step);

 private:
  bool cuda_graphs_;
  bool under_profiler_;
  std::shared_ptr<gpu::StepGraph> graph_;  // made at the first GPU decode step
};

}  // namespace attnscope
