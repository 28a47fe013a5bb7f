// The decode-step runner: how one forward step reaches the device.
//
// step_inputs() prepares a step's token ids and positions (on a GPU: checked, then uploaded in
// one copy before any capture starts). StepRunner launches the step: eagerly, or for a decode
// step on a GPU as one CUDA graph (runtime/cuda/step_graph.h), which it keeps from step to step.
// The caller owns the runner, as it owns the KV cache, so the model itself stays const.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace attnscope::gpu {
class StepGraph;
}

namespace attnscope {

// A step's token ids and positions: host spans for the CPU, i32 tensors on a GPU (uploaded
// before a CUDA graph capture starts, since a graph cannot copy from pageable memory).
struct StepInputs {
  std::span<const std::int32_t> tokens;
  std::vector<std::int64_t> positions;
  Tensor device_ids, device_positions;
};

// The inputs for `tokens`, rows of `length` ids each at positions start, start + 1, ... On a GPU
// the ids are checked against the vocabulary here (a kernel cannot throw: the CPU embedding
// checks them itself); throws Error for an id outside [0, vocab_size).
StepInputs step_inputs(Context& ctx, std::span<const std::int32_t> tokens, std::int64_t length,
                       std::int64_t start, std::int64_t vocab_size);

class StepRunner {
 public:
  // Decode steps on a GPU run as one CUDA graph unless `cuda_graphs` is off or a profiler is
  // attached. No effect on the CPU.
  explicit StepRunner(bool cuda_graphs = true) : cuda_graphs_(cuda_graphs) {}

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
  // as a CUDA graph when `decode` on a GPU with graphs on and no profiler attached, else eagerly.
  Tensor run(Context& ctx, bool decode, const std::function<Tensor()>& step);

 private:
  bool cuda_graphs_;
  std::shared_ptr<gpu::StepGraph> graph_;  // made at the first GPU decode step
};

}  // namespace attnscope
